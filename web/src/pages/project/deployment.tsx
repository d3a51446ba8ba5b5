import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data } from '../../api/client';
import { useEventStream } from '../../api/sse';
import { Button, ErrorNotice, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { LogView, type LogLine } from '../../ui/log-view';
import { useAppUrl } from './app-url';
import { useCancel } from './deploy-actions';
import { Duration } from './deploy-duration';
import { deploymentQuery, isActive, shortId, sourceOf, type Deployment } from './deploy-model';
import './deploy.css';

const MAX_LINES = 5000;

/**
 * A deployment's build log, live: the stream sends the backlog, then each line, and closes when the
 * build ends. Then the deployment is read again for its final status; a stream that closed while
 * the build still runs (a network hiccup) is opened again, and its backlog replaces what was shown.
 */
function useBuildLog(id: string, onClosed: () => Promise<Deployment | undefined>) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [key, setKey] = useState(0);
  const state = useEventStream(
    `/api/deployments/${encodeURIComponent(id)}/logs/stream`,
    { log: (l: LogLine) => setLines((ls) => (ls.length >= MAX_LINES ? [...ls.slice(ls.length - MAX_LINES + 1), l] : [...ls, l])) },
    key,
  );
  useEffect(() => {
    if (state !== 'closed') return;
    let gone = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void onClosed().then((d) => {
      if (gone || !d || !isActive(d)) return;
      timer = setTimeout(() => {
        setLines([]);
        setKey((k) => k + 1);
      }, 2000);
    });
    return () => {
      gone = true;
      clearTimeout(timer);
    };
    // onClosed is a fresh closure each render: the stream's state is what re-runs this.
  }, [state, id]);
  return { lines, state };
}

function AppLink({ projectId }: { projectId: string }) {
  const url = useAppUrl(projectId);
  if (!url) return null;
  return (
    <a className="btn btn-primary" href={url} target="_blank" rel="noreferrer">
      Open the app ↗
    </a>
  );
}

function Facts({ d }: { d: Deployment }) {
  return (
    <dl className="facts">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={d.status} /> {d.current ? <span className="badge badge-ok">current release</span> : null}
      </dd>
      <dt>Environment</dt>
      <dd>{d.environment}</dd>
      <dt>Trigger</dt>
      <dd>{d.trigger}</dd>
      <dt>Commit / ref</dt>
      <dd className="mono">{sourceOf(d)}</dd>
      <dt>Created</dt>
      <dd>
        <TimeAgo at={d.createdAt} />
      </dd>
      <dt>Started</dt>
      <dd>
        <TimeAgo at={d.startedAt} />
      </dd>
      <dt>Finished</dt>
      <dd>
        <TimeAgo at={d.finishedAt} />
      </dd>
      <dt>Duration</dt>
      <dd>
        <Duration d={d} />
      </dd>
      <dt>Id</dt>
      <dd className="mono">{d.id}</dd>
    </dl>
  );
}

/** One deployment: its facts, its live build log, Cancel while it runs, the app's link once ready. */
export default function DeploymentPage({ params }: PageProps) {
  const projectId = params.id!;
  const id = params.deploymentId!;
  const qc = useQueryClient();
  const dep = useQuery({
    ...deploymentQuery(id),
    // The status moves queued -> building -> deploying while the log streams.
    refetchInterval: (q) => (q.state.data && isActive(q.state.data) ? 1500 : false),
  });
  const cancel = useCancel(projectId);
  const { lines, state } = useBuildLog(id, async () => {
    const r = await dep.refetch();
    if (r.data && !isActive(r.data)) void qc.invalidateQueries({ queryKey: ['project', projectId] });
    return r.data;
  });
  const d = dep.data;
  const running = d ? isActive(d) : false;
  // Cancelling needs write on the project.
  const canWrite = useAccess().project(projectId, 'write');
  return (
    <div className="deployment">
      <p className="dep-back">
        <Link href={`/projects/${projectId}/deployments`}>← All deployments</Link>
      </p>
      <div className="page-header">
        <div>
          <h2>
            Deployment <span className="mono">{shortId(id)}</span> {d ? <StatusBadge status={d.status} /> : null}
          </h2>
        </div>
        <div className="page-actions">
          {running && canWrite ? (
            <Button variant="danger" busy={cancel.isPending} onClick={() => cancel.mutate(id)}>
              Cancel deployment
            </Button>
          ) : null}
          {d?.status === 'ready' ? <AppLink projectId={projectId} /> : null}
        </div>
      </div>
      {dep.isPending ? <Spinner /> : null}
      <ErrorNotice error={dep.error} title="Could not load the deployment" />
      {d?.error ? (
        <div className="notice notice-error" role="alert">
          <strong>{d.status === 'failed' ? 'The deployment failed' : 'Error'}: </strong>
          {d.error}
        </div>
      ) : null}
      {d ? (
        <div className="dep-layout">
          <section className="card dep-facts" aria-label="Facts">
            <Facts d={d} />
          </section>
          <section className="dep-log" aria-label="Build log">
            <LogView lines={lines} state={running ? state : undefined} label="Build log" />
            {!running && state === 'closed' ? <p className="muted dep-log-note">The build has ended: this is its whole log ({lines.length} lines).</p> : null}
          </section>
        </div>
      ) : null}
    </div>
  );
}
