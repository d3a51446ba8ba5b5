import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useAccess } from '../../access';
import { useLocation } from 'wouter';
import { api, data, messageOf } from '../../api/client';
import { useEventStream } from '../../api/sse';
import { Button, EmptyState, ErrorNotice, StatusBadge, TimeAgo, formatBytes } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { inFlight, keys, serviceLabel, type Destination, type PreparedState, type ProgressEvent, type Run, type Service, type Transition } from './api';
import { LiveProgress } from '../../ui/live-progress';

/** Replaces one run's fields in the project's cached list (live events, optimistic updates). */
function usePatchRun(projectId: string) {
  const qc = useQueryClient();
  return (runId: string, fields: Partial<Run>) => qc.setQueryData<Run[]>(keys.runs(projectId), (rows) => rows?.map((r) => (r.id === runId ? { ...r, ...fields } : r)));
}

/** The project's backup runs, newest first, with live progress for those in flight. */
export function Runs({ projectId, runs, destinations, services }: { projectId: string; runs: Run[]; destinations: Destination[]; services: Service[] }) {
  const [, navigate] = useLocation();
  const prepare = useMutation({
    mutationFn: (runId: string) => data(api.POST('/api/backup-runs/{runId}/restore/prepare', { params: { path: { runId } } })),
    onSuccess: (r) => {
      const state: PreparedState = { confirmationToken: r.confirmationToken, expiresAt: r.expiresAt };
      navigate(`/projects/${projectId}/backups/restores/${r.restoreId}`, { state });
    },
  });
  if (runs.length === 0) {
    return (
      <EmptyState title="No backups yet">
        <p>Runs appear here when a policy runs: on its schedule, by its webhook, or with "Run now".</p>
      </EmptyState>
    );
  }
  const several = new Set(runs.map((r) => r.policyId)).size > 1;
  return (
    <>
      <ErrorNotice error={prepare.error} title="The restore could not be prepared" />
      <div className="table-wrap">
        <table className="backups-runs">
          <caption className="sr-only">Backup runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              {several ? <th scope="col">Of</th> : null}
              <th scope="col">Started</th>
              <th scope="col">Finished</th>
              <th scope="col">Size</th>
              <th scope="col">Trigger</th>
              <th scope="col">Protected</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <RunRow
                key={r.id}
                projectId={projectId}
                run={r}
                of={several ? `${serviceLabel(services.find((s) => s.id === r.serviceId), r.serviceId)} → ${destinations.find((d) => d.id === r.destinationId)?.name ?? r.destinationId}` : null}
                estimate={runs.find((o) => o.policyId === r.policyId && o.status === 'succeeded' && o.sizeBytes)?.sizeBytes ?? null}
                preparing={prepare.isPending && prepare.variables === r.id}
                onRestore={() => prepare.mutate(r.id)}
              />
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function RunRow({ projectId, run, of, estimate, preparing, onRestore }: { projectId: string; run: Run; of: string | null; estimate: number | null; preparing: boolean; onRestore(): void }) {
  const qc = useQueryClient();
  const patch = usePatchRun(projectId);
  const toast = useToast();
  const protect = useMutation({
    mutationFn: (on: boolean) => data(api.POST('/api/backup-runs/{runId}/protect', { params: { path: { runId: run.id } }, body: { protected: on } })),
    // Optimistic: the flag flips at once and flips back if the server refuses.
    onMutate: async (on) => {
      await qc.cancelQueries({ queryKey: keys.runs(projectId) });
      patch(run.id, { protected: on });
    },
    onError: (err, on) => {
      patch(run.id, { protected: !on });
      toast(`Could not ${on ? 'protect' : 'unprotect'} the backup: ${messageOf(err)}`, 'error');
    },
    onSuccess: (r) => patch(run.id, { protected: r.protected }),
  });
  const cancel = useMutation({
    mutationFn: () => data(api.POST('/api/backup-runs/{runId}/cancel', { params: { path: { runId: run.id } } })),
    onSuccess: (r) => patch(run.id, r),
    onError: (err) => toast(messageOf(err), 'error'),
  });
  const live = inFlight(run.status);
  // Restoring replaces the project's data: admin on the project.
  const canRestore = useAccess().project(projectId, 'admin');
  const label = `backup of ${new Date(run.createdAt).toLocaleString()}`;
  return (
    <tr aria-label={label}>
      <td className={live ? 'backups-live' : undefined}>
        <StatusBadge status={run.status} />
        {live ? <RunLive projectId={projectId} run={run} estimate={estimate} /> : null}
        {run.error ? <div className="backups-bad backups-error">{run.error}</div> : null}
        {run.verifiedAt ? <div className="backups-ok backups-error">restore-tested</div> : null}
        {run.verifyError ? <div className="backups-bad backups-error">restore test failed: {run.verifyError}</div> : null}
      </td>
      {of !== null ? <td>{of}</td> : null}
      <td>
        <TimeAgo at={run.startedAt ?? run.createdAt} />
      </td>
      <td>
        <TimeAgo at={run.finishedAt} />
      </td>
      <td>{formatBytes(run.sizeBytes)}</td>
      <td>{run.trigger}</td>
      <td className="backups-protect">
        {run.protected ? <span className="badge badge-ok">protected</span> : null}{' '}
        <Button small variant="ghost" onClick={() => protect.mutate(!run.protected)} aria-label={`${run.protected ? 'Unprotect' : 'Protect'} the ${label}`}>
          {run.protected ? 'Unprotect' : 'Protect'}
        </Button>
      </td>
      <td className="actions">
        {live ? (
          <Button small variant="danger" onClick={() => cancel.mutate()} busy={cancel.isPending} aria-label={`Cancel the ${label}`}>
            Cancel
          </Button>
        ) : null}
        {run.status === 'succeeded' && canRestore ? (
          <Button small onClick={onRestore} busy={preparing} aria-label={`Restore the ${label}`}>
            {preparing ? 'Verifying…' : 'Restore…'}
          </Button>
        ) : null}
      </td>
    </tr>
  );
}

/** Follows a run in flight: its transitions patch the list, its progress drives the bar. */
function RunLive({ projectId, run, estimate }: { projectId: string; run: Run; estimate: number | null }) {
  const qc = useQueryClient();
  const patch = usePatchRun(projectId);
  const [progress, setProgress] = useState<ProgressEvent | null>(null);
  // An ended run unmounts this view, which may close the stream before its `complete` (size, finish
  // time) is handled: the runs and the policies (their last backup) are read again instead.
  const ended = (status: string) => {
    if (inFlight(status)) return;
    void qc.invalidateQueries({ queryKey: keys.runs(projectId) });
    void qc.invalidateQueries({ queryKey: keys.policies(projectId) });
  };
  useEventStream(`/api/backup-runs/${run.id}/stream`, {
    snapshot: (r: Run) => {
      patch(run.id, r);
      ended(r.status);
    },
    transition: (t: Transition) => {
      patch(run.id, { status: t.to });
      setProgress(null); // a new phase starts from zero
      ended(t.to);
    },
    progress: (p: ProgressEvent) => setProgress(p),
    complete: (r: Run) => patch(run.id, r),
  });
  const phase = progress?.phase;
  const step = phase ?? (run.status === 'uploading' ? 'upload' : run.status === 'verifying' ? 'verify' : run.status);
  const show = step === 'verify' ? 'Verifying' : step === 'upload' ? 'Uploading' : step === 'queued' ? 'Waiting to start' : 'Starting';
  // The upload's size is unknown until it ends: the policy's last backup is the best guess.
  const total = progress?.totalBytes ?? (phase === 'upload' && estimate ? estimate : undefined);
  return <LiveProgress label={show} bytes={progress?.bytes} total={total} guessed={phase === 'upload' && !!total} />;
}
