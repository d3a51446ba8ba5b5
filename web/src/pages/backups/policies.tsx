import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useAccess } from '../../access';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, CopyButton, EmptyState, Notice, StatusBadge, TimeAgo } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { keys, serviceLabel, type Destination, type Policy, type Service } from './api';
import { PolicyForm } from './policy-form';

function retention(p: Policy): string {
  const parts: string[] = [];
  if (p.retainCount != null) parts.push(`the last ${p.retainCount} run${p.retainCount === 1 ? '' : 's'}`);
  if (p.retainDays != null) parts.push(`${p.retainDays} day${p.retainDays === 1 ? '' : 's'}`);
  return parts.length ? `Keep ${parts.join(', at most ')}` : 'Keep every run';
}

/** The project's policies: each one's schedule and retention, run now, edit, delete. */
export function Policies({
  projectId,
  policies,
  destinations,
  services,
  creating,
  serviceId,
  onCreated,
}: {
  projectId: string;
  policies: Policy[];
  destinations: Destination[];
  services: Service[];
  creating: boolean;
  /** What a new policy backs up at first (the services page: its service). */
  serviceId?: string;
  onCreated(): void;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Policy | null>(null);
  const [token, setToken] = useState<string | null>(null);
  const done = (issued?: string) => {
    if (issued) setToken(issued);
    setEditing(null);
    onCreated();
  };
  return (
    <>
      {token ? (
        <Notice kind="warn">
          <p>
            <strong>Webhook token</strong> (shown only now; send it as <code>Authorization: Bearer …</code> to <code>POST /api/webhooks/backup</code>):
          </p>
          <p className="row">
            <code className="backups-token">{token}</code> <CopyButton text={token} /> <Button small onClick={() => setToken(null)}>I saved it</Button>
          </p>
        </Notice>
      ) : null}
      {creating ? <PolicyForm projectId={projectId} destinations={destinations} services={services} serviceId={serviceId} onDone={done} /> : null}
      {policies.length === 0 && !creating ? (
        <EmptyState title="No backup policy yet">
          <p>A policy backs up the project's data to a destination on a schedule, or when you run it.</p>
        </EmptyState>
      ) : null}
      <div className="backups-policies">
        {policies.map((p) =>
          editing === p.id ? (
            <PolicyForm key={p.id} projectId={projectId} initial={p} destinations={destinations} services={services} onDone={done} />
          ) : (
            <PolicyCard key={p.id} projectId={projectId} p={p} destinations={destinations} services={services} onEdit={() => setEditing(p.id)} onDelete={() => setDeleting(p)} />
          ),
        )}
      </div>
      <DeletePolicy projectId={projectId} target={deleting} services={services} onClose={() => setDeleting(null)} />
    </>
  );
}

function PolicyCard({ projectId, p, destinations, services, onEdit, onDelete }: { projectId: string; p: Policy; destinations: Destination[]; services: Service[]; onEdit(): void; onDelete(): void }) {
  // Deleting a policy needs admin on the project.
  const canDelete = useAccess().project(projectId, 'admin');
  const qc = useQueryClient();
  const toast = useToast();
  const dest = destinations.find((d) => d.id === p.destinationId);
  const what = serviceLabel(
    services.find((s) => s.id === p.serviceId),
    p.serviceId,
  );
  const run = useMutation({
    mutationFn: () => data(api.POST('/api/backup-policies/{policyId}/run', { params: { path: { policyId: p.id } } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: keys.runs(projectId) });
      toast('Backup started');
    },
    onError: (err) => toast(messageOf(err), 'error'),
  });
  return (
    <article className="card backups-policy" aria-label={`Policy: ${what} to ${dest?.name ?? p.destinationId}`}>
      <h3>
        {what} → {dest?.name ?? p.destinationId}{' '}
        <StatusBadge status={p.enabled ? 'active' : 'disabled'} /> {p.overdue ? <span className="badge badge-bad">overdue</span> : null}
      </h3>
      <dl className="facts">
        <dt>Schedule</dt>
        <dd>
          {p.cronExpression ? (
            <>
              <code>{p.cronExpression}</code> ({p.timezone})
            </>
          ) : (
            'Only when run by hand'
          )}
          {p.webhookEnabled ? ' · webhook on' : ''}
        </dd>
        <dt>Next run</dt>
        <dd>{p.nextRunAt ? <TimeAgo at={p.nextRunAt} /> : <span className="muted">{p.enabled ? 'none' : 'none (disabled)'}</span>}</dd>
        <dt>Last success</dt>
        <dd>{p.lastSuccessAt ? <TimeAgo at={p.lastSuccessAt} /> : <span className="muted">never</span>}</dd>
        <dt>Retention</dt>
        <dd>{retention(p)}</dd>
      </dl>
      <div className="row backups-actions">
        <Button variant="primary" small onClick={() => run.mutate()} busy={run.isPending} disabled={!p.enabled} title={p.enabled ? undefined : 'Enable the policy to run it'}>
          Run now
        </Button>
        <Button small onClick={onEdit}>
          Edit
        </Button>
        {canDelete ? (
          <Button small variant="danger" onClick={onDelete}>
            Delete
          </Button>
        ) : null}
      </div>
    </article>
  );
}

function DeletePolicy({ projectId, target, services, onClose }: { projectId: string; target: Policy | null; services: Service[]; onClose(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const del = useMutation({
    mutationFn: (p: Policy) => data(api.DELETE('/api/backup-policies/{policyId}', { params: { path: { policyId: p.id } } })),
    onSuccess: async () => {
      await Promise.all([qc.invalidateQueries({ queryKey: keys.policies(projectId) }), qc.invalidateQueries({ queryKey: keys.runs(projectId) })]);
      toast('Policy deleted');
      close();
    },
  });
  const close = () => {
    del.reset();
    onClose();
  };
  const what = target ? serviceLabel(services.find((s) => s.id === target.serviceId), target.serviceId) : '';
  return (
    <ConfirmDialog open={!!target} title="Delete this backup policy?" confirmLabel="Delete policy" busy={del.isPending} error={del.error} onConfirm={() => target && del.mutate(target)} onCancel={close}>
      <p>
        Backups of <strong>{what}</strong> stop{target?.cronExpression ? <> (schedule <code>{target.cronExpression}</code>)</> : null}, and a backup in progress is cancelled. The backups it
        already made stay listed below and can still be restored.
      </p>
    </ConfirmDialog>
  );
}
