import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { useHistoryState } from 'wouter/use-browser-location';
import type { PageProps } from '../../app';
import { api, data } from '../../api/client';
import { useEventStream } from '../../api/sse';
import { Button, ConfirmDialog, ErrorNotice, Field, Input, Notice, Spinner, StatusBadge } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { useProject } from '../project/shell';
import { destinationsQuery, keys, servicesQuery, type PreparedState, type ProgressEvent, type Restore, type Transition } from './api';
import { LiveProgress } from '../../ui/live-progress';
import { Replaced, Steps, useExpiry, type RestoreFacts } from './restore-parts';
import './backups.css';

const DONE = ['succeeded', 'failed', 'cancelled', 'server_error'];

/**
 * A staged restore: what it will replace, the apply step with the one-time confirmation token
 * (carried here in the history entry's state by the page that prepared it, never in the URL), the
 * live progress of applying it, and its result. Cancel works until it ends.
 */
export default function RestorePage({ params }: PageProps) {
  const projectId = params.id!;
  const restoreId = params.restoreId!;
  const qc = useQueryClient();
  const toast = useToast();
  const [, navigate] = useLocation();
  const prepared = useHistoryState<PreparedState | null>();
  const [token, setToken] = useState(prepared?.confirmationToken ?? '');
  const [confirming, setConfirming] = useState(false);
  const [progress, setProgress] = useState<ProgressEvent | null>(null);
  const [streamKey, setStreamKey] = useState(0);

  const restore = useQuery({
    queryKey: keys.restore(restoreId),
    queryFn: () => data(api.GET('/api/backup-restores/{restoreId}', { params: { path: { restoreId } } })),
    // The stream reports first; this is the fallback when it drops.
    refetchInterval: (q) => (q.state.data?.status === 'applying' ? 3000 : false),
  });
  const runId = restore.data?.runId;
  const run = useQuery({
    queryKey: keys.run(runId ?? ''),
    queryFn: () => data(api.GET('/api/backup-runs/{runId}', { params: { path: { runId: runId! } } })),
    enabled: !!runId,
  });
  const project = useProject(projectId);
  const services = useQuery(servicesQuery(projectId));
  const destinations = useQuery(destinationsQuery());
  const info = useQuery({
    queryKey: ['project-info', projectId],
    queryFn: () => data(api.GET('/api/projects/{id}/info', { params: { path: { id: projectId } } })),
  });

  const setRestore = (fields: Partial<Restore>) => qc.setQueryData<Restore>(keys.restore(restoreId), (r) => (r ? { ...r, ...fields } : r));
  const status = restore.data?.status;
  // An ended restore closes the stream, perhaps before its `complete` is handled: read it again.
  const ended = (s: string) => {
    if (DONE.includes(s)) void qc.invalidateQueries({ queryKey: keys.restore(restoreId) });
  };
  const live = useEventStream(
    status && !DONE.includes(status) ? `/api/backup-restores/${restoreId}/stream` : null,
    {
      snapshot: (r: Restore) => {
        setRestore(r);
        ended(r.status);
      },
      transition: (t: Transition) => {
        setRestore({ status: t.to });
        ended(t.to);
      },
      progress: (p: ProgressEvent) => setProgress(p),
      complete: (r: Restore) => setRestore(r),
    },
    streamKey,
  );

  const forget = () => window.history.replaceState(null, '');
  const apply = useMutation({
    // The route reads its body itself (the OpenAPI document does not describe it), hence the cast.
    mutationFn: () => data(api.POST('/api/backup-restores/{restoreId}/apply', { params: { path: { restoreId } }, body: { confirmationToken: token.trim() } })),
    onSuccess: (r) => {
      setRestore(r);
      setConfirming(false);
      setToken('');
      forget(); // the token is used up
      if (live === 'closed') setStreamKey((k) => k + 1);
    },
  });
  const cancel = useMutation({
    mutationFn: () => data(api.POST('/api/backup-restores/{restoreId}/cancel', { params: { path: { restoreId } } })),
    onSuccess: (r) => {
      setRestore(r);
      forget();
      toast(r.status === 'cancelled' ? 'Restore cancelled' : 'Cancelling the restore…');
    },
  });
  const again = useMutation({
    mutationFn: () => data(api.POST('/api/backup-runs/{runId}/restore/prepare', { params: { path: { runId: runId! } } })),
    onSuccess: (r) => {
      const state: PreparedState = { confirmationToken: r.confirmationToken, expiresAt: r.expiresAt };
      navigate(`/projects/${projectId}/backups/restores/${r.restoreId}`, { replace: true, state });
      setToken(r.confirmationToken);
    },
  });
  const expiry = useExpiry(restore.data?.expiresAt);

  if (restore.isPending) return <Spinner />;
  if (restore.error) return <ErrorNotice error={restore.error} title="Could not load the restore" />;
  const r = restore.data;
  const facts: RestoreFacts = {
    restore: r,
    run: run.data,
    project: project.data,
    service: services.data?.find((s) => s.id === r.serviceId),
    destination: destinations.data?.find((d) => d.id === run.data?.destinationId),
    runtimeState: info.data?.runtime.state,
  };
  const staged = r.status === 'staged';
  const expired = staged && expiry.expired;
  return (
    <div className="backups-page">
      <p>
        <Link href={`/projects/${projectId}/backups`}>← Backups</Link>
      </p>
      <div className="page-header">
        <h2>
          Restore <StatusBadge status={r.status} />
        </h2>
        {!DONE.includes(r.status) ? (
          <div className="page-actions">
            <Button onClick={() => cancel.mutate()} busy={cancel.isPending}>
              Cancel restore
            </Button>
          </div>
        ) : null}
      </div>
      <Steps status={r.status} />
      <ErrorNotice error={cancel.error} title="Could not cancel" />
      <Replaced facts={facts} loading={run.isPending} />
      {staged ? (
        <section className="card" aria-labelledby="apply-title">
          <h3 id="apply-title">Apply</h3>
          {expired ? (
            <Notice kind="warn">
              The confirmation token expired (tokens last 15 minutes). Prepare the restore again for a fresh one.{' '}
              <Button small onClick={() => again.mutate()} busy={again.isPending}>
                Prepare again
              </Button>
            </Notice>
          ) : (
            <>
              <p>
                The backup was verified against its recorded checksum. The token below confirms this restore; it was shown once, when it was prepared, and expires{' '}
                <strong>{expiry.words}</strong>.
              </p>
              <Field
                label="Confirmation token"
                name="confirmationToken"
                error={apply.error}
                hint={prepared?.confirmationToken ? 'Filled in from when you prepared this restore.' : 'Paste the token that prepare returned (for example from the CLI), or prepare again.'}
              >
                {(p) => <Input {...p} className="input mono" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" spellCheck={false} />}
              </Field>
              <div className="row">
                <Button
                  variant="danger"
                  onClick={() => {
                    apply.reset();
                    setConfirming(true);
                  }}
                  disabled={!token.trim()}
                >
                  Apply restore…
                </Button>
                {!prepared?.confirmationToken ? (
                  <Button onClick={() => again.mutate()} busy={again.isPending}>
                    Prepare again
                  </Button>
                ) : null}
              </div>
            </>
          )}
          <ErrorNotice error={again.error} title="Could not prepare the restore" />
        </section>
      ) : null}
      {r.status === 'applying' ? (
        <section className="card" aria-labelledby="progress-title">
          <h3 id="progress-title">Restoring</h3>
          <ApplyProgress progress={progress} total={run.data?.sizeBytes ?? undefined} />
          <p className="muted">Stream: {live === 'open' ? 'live' : live}. The previous data stays whole until the restored copy is swapped in.</p>
        </section>
      ) : null}
      <Result restore={r} projectId={projectId} backupAt={run.data?.finishedAt ?? run.data?.createdAt} />
      <ConfirmDialog
        open={confirming}
        title="Replace the data with this backup?"
        confirmLabel="Replace the data"
        busy={apply.isPending}
        error={apply.error}
        onConfirm={() => apply.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <Replaced facts={facts} loading={run.isPending} compact />
      </ConfirmDialog>
    </div>
  );
}

function ApplyProgress({ progress, total }: { progress: ProgressEvent | null; total?: number }) {
  if (!progress) return <LiveProgress label="Starting" />;
  if (progress.phase === 'restore') return <LiveProgress label="Swapping the restored data in" bytes={progress.bytes} total={progress.totalBytes} />;
  return <LiveProgress label="Downloading and unpacking the backup" bytes={progress.bytes} total={progress.totalBytes ?? total} />;
}

function Result({ restore, projectId, backupAt }: { restore: Restore; projectId: string; backupAt?: string | null }) {
  const when = backupAt ? new Date(backupAt).toLocaleString() : 'the backup';
  const back = <Link href={`/projects/${projectId}/backups`}>Back to backups</Link>;
  if (restore.status === 'succeeded') {
    return (
      <Notice kind="ok">
        <strong>Restored.</strong> The data is back to how it was at {when}. {back}
      </Notice>
    );
  }
  if (restore.status === 'cancelled') {
    return <Notice>This restore was cancelled; nothing was replaced. {back}</Notice>;
  }
  if (restore.status === 'failed' || restore.status === 'server_error') {
    return (
      <div className="notice notice-error" role="alert">
        <strong>The restore failed:</strong> {restore.error ?? 'unknown error'}. The previous data was left as it was. {back}
      </div>
    );
  }
  return null;
}
