import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { useCancel, useRedeploy, useRollback } from './deploy-actions';
import { Duration } from './deploy-duration';
import { deploymentsQuery, isActive, shortId, sourceOf, type Deployment } from './deploy-model';
import './deploy.css';

/** What the rollback dialog says: which release replaces which, and that nothing is built. */
function RollbackText({ target, current }: { target: Deployment; current: Deployment | undefined }) {
  return (
    <>
      <p>
        Deployment <code>{shortId(target.id)}</code> ({sourceOf(target)}, created <TimeAgo at={target.createdAt} />) will serve <strong>{target.environment}</strong>
        {current ? (
          <>
            {' '}
            instead of the current release <code>{shortId(current.id)}</code> ({sourceOf(current)}, created <TimeAgo at={current.createdAt} />)
          </>
        ) : null}
        .
      </p>
      <p className="muted">Nothing is built: the kept release starts, and takes over once it answers; the current one keeps serving until then. You can roll forward again the same way.</p>
    </>
  );
}

function Row({ d, projectId, canWrite, onRollback, cancel }: { d: Deployment; projectId: string; canWrite: boolean; onRollback(d: Deployment): void; cancel: ReturnType<typeof useCancel> }) {
  const cancelling = cancel.isPending && cancel.variables === d.id;
  return (
    <tr>
      <td>
        <Link href={`/projects/${projectId}/deployments/${d.id}`} className="mono">
          {shortId(d.id)}
        </Link>
        {d.current ? <span className="badge badge-ok dep-current">current</span> : null}
      </td>
      <td>
        <StatusBadge status={d.status} />
      </td>
      <td>{d.trigger}</td>
      <td className="mono dep-source">
        {sourceOf(d)}
        {d.environment !== 'production' ? <span className="muted"> ({d.environment})</span> : null}
      </td>
      <td>
        <TimeAgo at={d.createdAt} />
      </td>
      <td>
        <Duration d={d} />
      </td>
      <td className="actions">
        {!canWrite ? null : isActive(d) ? (
          <Button small variant="danger" busy={cancelling} onClick={() => cancel.mutate(d.id)} aria-label={`Cancel deployment ${shortId(d.id)}`}>
            Cancel
          </Button>
        ) : d.status === 'ready' && !d.current ? (
          <Button small onClick={() => onRollback(d)} aria-label={`Roll back to deployment ${shortId(d.id)}`}>
            Roll back to this
          </Button>
        ) : null}
      </td>
    </tr>
  );
}

/** The project's deployments, live while one is in progress: redeploy, cancel, roll back. */
export default function DeploymentsPage({ params }: PageProps) {
  const projectId = params.id!;
  const list = useQuery({
    ...deploymentsQuery(projectId),
    refetchInterval: (q) => (q.state.data?.some(isActive) ? 1500 : false),
  });
  const redeploy = useRedeploy(projectId);
  const cancel = useCancel(projectId);
  const rollback = useRollback(projectId);
  const [target, setTarget] = useState<Deployment | null>(null);
  // Redeploy, cancel and roll back need write on the project: a read-only member sees the list only.
  const canWrite = useAccess().project(projectId, 'write');
  const rows = list.data ?? [];
  const current = target ? rows.find((d) => d.current && d.environment === target.environment) : undefined;
  return (
    <div className="deployments">
      <div className="page-header">
        <div>
          <h2>Deployments</h2>
          <p className="muted">{rows.some(isActive) ? 'A deployment is in progress: this list follows it.' : 'Newest first. The current release of each environment is marked.'}</p>
        </div>
        {canWrite ? (
          <div className="page-actions">
            <Button variant="primary" busy={redeploy.isPending && !redeploy.variables?.noCache} disabled={redeploy.isPending} onClick={() => redeploy.mutate({})}>
              Redeploy
            </Button>
            <Button busy={redeploy.isPending && !!redeploy.variables?.noCache} disabled={redeploy.isPending} onClick={() => redeploy.mutate({ noCache: true })} title="Build from nothing: the project's build cache is neither restored nor saved">
              Redeploy without cache
            </Button>
          </div>
        ) : null}
      </div>
      <ErrorNotice error={redeploy.error} title="Could not deploy" />
      {list.isPending ? <Spinner /> : null}
      <ErrorNotice error={list.error} title="Could not load the deployments" />
      {list.data && rows.length === 0 ? (
        <EmptyState title="No deployments yet">
          <p>Redeploy builds the project's source and runs it.</p>
        </EmptyState>
      ) : null}
      {rows.length ? (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Deployments of this project</caption>
            <thead>
              <tr>
                <th scope="col">Deployment</th>
                <th scope="col">Status</th>
                <th scope="col">Trigger</th>
                <th scope="col">Commit / ref</th>
                <th scope="col">Created</th>
                <th scope="col">Duration</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <Row key={d.id} d={d} projectId={projectId} canWrite={canWrite} cancel={cancel} onRollback={(t) => (rollback.reset(), setTarget(t))} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <ConfirmDialog
        open={!!target}
        title={target ? `Roll back to ${shortId(target.id)}?` : 'Roll back?'}
        confirmLabel="Roll back"
        busy={rollback.isPending}
        error={rollback.error}
        onCancel={() => setTarget(null)}
        onConfirm={() => target && rollback.mutate(target.id, { onSuccess: () => setTarget(null) })}
      >
        {target ? <RollbackText target={target} current={current} /> : null}
      </ConfirmDialog>
    </div>
  );
}
