import { useEffect, useState } from 'react';
import { Spinner, TimeAgo, formatBytes } from '../../ui/controls';
import type { useProject } from '../project/shell';
import { destinationWhere, serviceLabel, type Destination, type Restore, type Run, type Service } from './api';

type Project = NonNullable<ReturnType<typeof useProject>['data']>;

/** Everything the page knows about what a restore replaces and with what. */
export interface RestoreFacts {
  restore: Restore;
  run?: Run;
  project?: Project;
  service?: Service;
  destination?: Destination;
  runtimeState?: string;
}

const at = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '–');

/**
 * What applying the restore replaces: the project's service (a volume folder or a database), the
 * backup it is replaced with (when, how big, its checksum, where it is kept) and what happens to the
 * app meanwhile. `compact` is the confirmation dialog's version.
 */
export function Replaced({ facts, loading, compact }: { facts: RestoreFacts; loading: boolean; compact?: boolean }) {
  const { restore, run, project, service, destination, runtimeState } = facts;
  if (loading) return <Spinner label="Loading the backup" />;
  const what = serviceLabel(service, restore.serviceId);
  const projectName = project?.name ?? restore.projectId;
  const backupAt = run?.finishedAt ?? run?.startedAt ?? run?.createdAt;
  const postgres = service?.kind === 'postgres';
  const running = runtimeState !== undefined && !['stopped', 'not_deployed', 'failed'].includes(runtimeState);
  const current = postgres ? (
    <>
      Every table, row and other object the backup contains is dropped and recreated as it was at {at(backupAt)}, in one transaction. Objects created after the backup
      (a new table) are left in place.
    </>
  ) : (
    <>
      Everything in the volume now — every file and folder in <code>volumes/{restore.projectId}/{service?.name ?? 'data'}</code> (the app's <code>DATA_DIR</code>) — is
      replaced by the backup's copy: files changed since {at(backupAt)} go back to that version, files added since are removed, files deleted since come back.
    </>
  );
  const app = running ? (
    <>The app is {runtimeState}: it is stopped just before the swap and started again right after.</>
  ) : (
    <>The app is not running ({runtimeState?.replace(/_/g, ' ') ?? 'unknown'}); nothing is stopped.</>
  );
  if (compact) {
    return (
      <div className="stack">
        <p>
          The <strong>{what}</strong> of <strong>{projectName}</strong> is replaced with the backup of <strong>{at(backupAt)}</strong> ({formatBytes(run?.sizeBytes)} compressed).
        </p>
        <p>{current}</p>
        <p>{app}</p>
        <p>
          <strong>The current data cannot be brought back</strong> except from another backup.
        </p>
      </div>
    );
  }
  return (
    <section className="card" aria-labelledby="replaced-title">
      <h3 id="replaced-title">What will be replaced</h3>
      <dl className="facts">
        <dt>Project</dt>
        <dd>{projectName}</dd>
        <dt>Data replaced</dt>
        <dd>{what}</dd>
        <dt>Current data</dt>
        <dd>{current}</dd>
        <dt>Replaced with</dt>
        <dd>
          The backup of {at(backupAt)} (<TimeAgo at={backupAt} />
          {run ? `, ${run.trigger}` : ''})
        </dd>
        <dt>Backup size</dt>
        <dd>{formatBytes(run?.sizeBytes)} compressed</dd>
        <dt>Checksum</dt>
        <dd>
          <code title={run?.sha256 ?? undefined}>sha256 {run?.sha256 ? `${run.sha256.slice(0, 16)}…` : '–'}</code> (verified when the restore was prepared)
        </dd>
        <dt>Kept in</dt>
        <dd>{destination ? `${destination.name} (${destinationWhere(destination)})` : (run?.destinationId ?? '–')}</dd>
        <dt>The app</dt>
        <dd>{app}</dd>
      </dl>
    </section>
  );
}

const STEPS: Array<{ label: string; done: (s: string) => boolean; current: (s: string) => boolean }> = [
  { label: 'Prepared and verified', done: () => true, current: () => false },
  { label: 'Confirm', done: (s) => s !== 'staged' && s !== 'cancelled', current: (s) => s === 'staged' },
  { label: 'Apply', done: (s) => ['succeeded', 'failed', 'server_error'].includes(s), current: (s) => s === 'applying' },
  { label: 'Result', done: (s) => ['succeeded', 'failed', 'server_error', 'cancelled'].includes(s), current: () => false },
];

/** Where the restore stands: prepared, confirm, apply, result. */
export function Steps({ status }: { status: string }) {
  return (
    <ol className="backups-steps" aria-label="Restore steps">
      {STEPS.map((s) => {
        const current = s.current(status);
        const done = !current && s.done(status);
        return (
          <li key={s.label} className={current ? 'current' : done ? 'done' : ''} aria-current={current ? 'step' : undefined}>
            {done ? '✓ ' : ''}
            {s.label}
          </li>
        );
      })}
    </ol>
  );
}

/** Time left until `expiresAt`, in words, updated every second. */
export function useExpiry(expiresAt: string | undefined): { expired: boolean; words: string } {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  if (!expiresAt) return { expired: false, words: '' };
  const left = Math.floor((Date.parse(expiresAt) - now) / 1000);
  if (left <= 0) return { expired: true, words: 'now' };
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, '0');
  return { expired: false, words: `in ${m}:${s}` };
}
