import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, ErrorNotice, Notice, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { engineOf, keys, resourcesText, servicesQuery, settling, usePutService, type Service } from './api';
import { CredentialsCard, ResizeForm, ServiceLog } from './service-parts';
import { ServiceBackups } from './service-backups';
import './services.css';

/** One managed service: status, address and resources, stop/start/restart, its live log, credentials (admins), backups, delete. */
export default function ServicePage({ params }: PageProps) {
  const projectId = params.id!;
  const sid = params.sid!;
  const access = useAccess();
  const canWrite = access.project(projectId, 'write');
  const canAdmin = access.project(projectId, 'admin');
  const services = useQuery({ ...servicesQuery(projectId), refetchInterval: (q) => (settling(q.state.data) ? 1000 : 10_000) });
  const [deleting, setDeleting] = useState(false);
  const back = <Link href={`/projects/${projectId}/services`}>← All services</Link>;
  if (services.isPending) return <Spinner />;
  if (services.error) return <ErrorNotice error={services.error} title="Could not load the service" />;
  const s = services.data.find((x) => x.id === sid && x.managed);
  if (!s) {
    return (
      <div className="stack">
        <p>{back}</p>
        <Notice kind="warn">This project has no such service (it may have been deleted).</Notice>
      </div>
    );
  }
  return (
    <div className="stack services-page">
      <p className="svc-back">{back}</p>
      <div className="page-header">
        <h2 className="svc-title">
          {s.name} <StatusBadge status={s.status} />
        </h2>
        {canWrite ? <Actions projectId={projectId} s={s} canAdmin={canAdmin} onDelete={() => setDeleting(true)} /> : null}
      </div>
      <dl className="facts card">
        <dt>Engine</dt>
        <dd>{engineOf(s)}</dd>
        <dt>Address</dt>
        <dd>
          {s.internalHost ? <code>{`${s.internalHost}:${s.port}`}</code> : <span className="muted">none while it is not running</span>}{' '}
          <span className="muted">(the project's own network: its app and builds only)</span>
        </dd>
        <dt>Resources</dt>
        <dd>{resourcesText(s.resources)}</dd>
        <dt>Created</dt>
        <dd>
          <TimeAgo at={s.createdAt} />
        </dd>
        {s.error ? (
          <>
            <dt>Error</dt>
            <dd className="svc-error">{s.error}</dd>
          </>
        ) : null}
      </dl>
      {canAdmin ? <CredentialsCard projectId={projectId} s={s} /> : null}
      <ServiceLog projectId={projectId} s={s} />
      {canWrite ? <ResizeForm projectId={projectId} s={s} /> : null}
      {canWrite ? <ServiceBackups projectId={projectId} s={s} /> : null}
      {canAdmin ? <DeleteService projectId={projectId} s={s} open={deleting} onClose={() => setDeleting(false)} /> : null}
    </div>
  );
}

function Actions({ projectId, s, canAdmin, onDelete }: { projectId: string; s: Service; canAdmin: boolean; onDelete(): void }) {
  const toast = useToast();
  const put = usePutService(projectId);
  const path = { params: { path: { id: projectId, sid: s.id } } };
  const patch = useMutation({
    mutationFn: (stopped: boolean) => data(api.PATCH('/api/projects/{id}/services/{sid}', { ...path, body: { stopped } })),
    onSuccess: (r) => {
      put(r);
      toast(r.status === 'stopped' ? `${r.name} stopped` : `${r.name} is starting`);
    },
    onError: (err) => toast(messageOf(err), 'error'),
  });
  const restart = useMutation({
    mutationFn: () => data(api.POST('/api/projects/{id}/services/{sid}/restart', path)),
    onSuccess: (r) => {
      put(r);
      toast(`${r.name} is restarting`);
    },
    onError: (err) => toast(messageOf(err), 'error'),
  });
  const stopped = s.status === 'stopped';
  return (
    <div className="page-actions">
      {stopped ? (
        <Button variant="primary" onClick={() => patch.mutate(false)} busy={patch.isPending}>
          Start
        </Button>
      ) : (
        <>
          <Button onClick={() => restart.mutate()} busy={restart.isPending}>
            Restart
          </Button>
          <Button onClick={() => patch.mutate(true)} busy={patch.isPending}>
            Stop
          </Button>
        </>
      )}
      {canAdmin ? (
        <Button variant="danger" onClick={onDelete}>
          Delete…
        </Button>
      ) : null}
    </div>
  );
}

function DeleteService({ projectId, s, open, onClose }: { projectId: string; s: Service; open: boolean; onClose(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [, navigate] = useLocation();
  const [keep, setKeep] = useState(false);
  const del = useMutation({
    mutationFn: () => data(api.DELETE('/api/projects/{id}/services/{sid}', { params: { path: { id: projectId, sid: s.id }, query: keep ? { keepVolume: true } : {} } })),
    onSuccess: async (r) => {
      qc.setQueryData<Service[]>(keys.services(projectId), (list) => list?.filter((x) => x.id !== r.id));
      toast(r.keptVolume ? `${s.name} deleted; its data folder is kept on the server` : `${s.name} deleted with its data`);
      onClose();
      navigate(`/projects/${projectId}/services`);
    },
  });
  const close = () => {
    del.reset();
    setKeep(false);
    onClose();
  };
  return (
    <ConfirmDialog open={open} title={`Delete ${s.name}?`} confirmLabel="Delete service" typeToConfirm={s.name} busy={del.isPending} error={del.error} onConfirm={() => del.mutate()} onCancel={close}>
      <p>
        The {engineOf(s)} database stops, the app loses its variables at its next start, and {keep ? 'its data folder stays on the server for an operator to copy or remove' : <strong>its data is removed</strong>}.
        Backups already made stay in their destinations.
      </p>
      <label className="check">
        <input type="checkbox" checked={keep} onChange={(e) => setKeep(e.target.checked)} /> Keep the data folder on the server
      </label>
    </ConfirmDialog>
  );
}
