import { mkdir } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { timed } from '../../lib/spans.js';
import type { AppContext } from '../../context.js';
import { clockIso } from '../../lib/clock.js';

import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import type { RunRow } from './backups.store.js';
import { hashObject, writeArtifact, writeVolumeArtifact } from './artifacts.js';
import { storageOf } from './destination-storage.js';
import { Cancelled, serviceTarget, STOPPING, stoppedBy, volumeDir, watch } from './execution.js';
import { describeFailure, logDetail } from './failures.js';
import { pgDumpSource } from './pg-tools.js';
import { findTarget, managedBackups } from './project-link.js';
import { policyPrefix, pruneRuns } from './prune.js';
import type { Storage } from './storage.js';
import { assertVolumeHere, volumeSizeHint } from './volume-archive.js';
import { noticeRunFailed } from './run-notice.js';
import { localDestinationDir } from './local-root.js';
import { enqueueVerify } from './verify-executor.js';

/**
 * Executes a backup run (the job `backups.run`). A run is `succeeded` only after its artifact was
 * written under a temporary key, hashed on the way, read back and matched, and made final; then the
 * policy's retention is applied.
 */

type Ctx = AppContext;

async function moveRun(ctx: Ctx, run: RunRow, from: string, to: string, extra: Partial<RunRow> = {}): Promise<boolean> {
  const { events } = backupsRuntime(ctx);
  const at = clockIso(ctx.clock);
  const ok = await store.moveRun(ctx.db, run.orgId, run.id, [from], { ...extra, status: to, updatedAt: at });
  if (ok) events.publish(`run:${run.id}`, { type: 'transition', data: { from, to, at } });
  return ok;
}

type Target = NonNullable<Awaited<ReturnType<typeof findTarget>>>;

/**
 * What a run reads: a managed service's native dump (pg_dump -Fc, mysqldump, Redis BGSAVE + RDB:
 * services area), a PostgreSQL service's pg_dump, or a volume's folder (archived in a child process:
 * artifacts.ts writeVolumeArtifact); with an upper estimate of the
 * artifact's size, so that an S3 upload picks parts big enough for it: the volume's tar size, or for
 * a dump twice the last successful one of this policy.
 */
async function openSource(ctx: Ctx, run: RunRow, svc: Target, destKind: string, signal: AbortSignal): Promise<{ source: Readable; sizeHint: number | undefined } | { volume: string; sizeHint: number | undefined }> {
  if (svc.managed || svc.kind === 'postgres') {
    const last = await store.lastSucceededSize(ctx.db, run.orgId, run.policyId);
    const sizeHint = last ? last * 2 : undefined;
    if (svc.managed) return { source: await managedBackups.dump(ctx, svc.managed, signal), sizeHint };
    const target = await serviceTarget(ctx, svc);
    return { source: pgDumpSource(target.url, signal, target.hostaddr), sizeHint };
  }
  const dir = volumeDir(ctx, run.projectId, svc.name);
  assertVolumeHere(dir);
  await mkdir(dir, { recursive: true });
  const sizeHint = destKind === 's3' ? await volumeSizeHint(dir) : undefined;
  return { volume: dir, sizeHint };
}

/**
 * A run that threw: its partial artifacts removed and, if still in flight, moved to `server_error`
 * (the server stopping), `cancelled` or `failed` (noticed to the org). Returns the run as read again.
 */
async function endFailedRun(ctx: Ctx, before: RunRow, e: unknown, signal: AbortSignal, storage: Storage | null, keys: (string | null)[]): Promise<RunRow> {
  const { events } = backupsRuntime(ctx);
  const stopped = stoppedBy(signal);
  const cancelled = !stopped && (e instanceof Cancelled || signal.aborted);
  const run = (await store.findRun(ctx.db, before.orgId, before.id)) ?? before;
  if (storage) {
    for (const k of keys) if (k) await storage.delete(k).catch(() => {});
  }
  if (store.RUN_IN_FLIGHT.includes(run.status)) {
    const at = clockIso(ctx.clock);
    const to = stopped ? 'server_error' : cancelled ? 'cancelled' : 'failed';
    const error = stopped ? 'the server stopped while this run was in progress' : cancelled ? 'cancelled' : describeFailure(e);
    const ok = await store.moveRun(ctx.db, run.orgId, run.id, [run.status], { status: to, finishedAt: at, activeKey: null, tempKey: null, artifactKey: null, error, updatedAt: at });
    if (ok) events.publish(`run:${run.id}`, { type: 'transition', data: { from: run.status, to, at } });
    if (ok && to === 'failed') await noticeRunFailed(ctx, run, run.status, error);
  }
  if (!cancelled && !stopped) ctx.log.warn({ runId: run.id, ...logDetail(e) }, 'backup run failed');
  return run;
}

export async function executeRun(ctx: Ctx, runId: string, orgId: string, jobSignal?: AbortSignal): Promise<void> {
  let run = await store.findRun(ctx.db, orgId, runId);
  if (!run) return;
  if (run.status !== 'queued') {
    // A job of a worker that died, claimed again: the run it left is recovered, not resumed.
    if (store.RUN_IN_FLIGHT.includes(run.status)) await recoverRun(ctx, run);
    return;
  }
  const abort = new AbortController();
  const { aborts, events } = backupsRuntime(ctx);
  aborts.set(run.id, abort);
  const onJobAbort = () => abort.abort(STOPPING);
  jobSignal?.addEventListener('abort', onJobAbort, { once: true });
  const stopWatch = watch(ctx, 'run', orgId, runId, abort);
  const signal = abort.signal;
  let storage: Storage | null = null;
  let tempKey: string | null = null;
  let finalKey: string | null = null;
  const progress = (phase: string, totalBytes?: number) => (bytes: number) =>
    events.publish(`run:${runId}`, { type: 'progress', data: { phase, bytes, ...(totalBytes !== undefined ? { totalBytes } : {}) } });
  try {
    if (run.cancelRequested === 1) throw new Cancelled();
    if (!(await moveRun(ctx, run, 'queued', 'running', { startedAt: clockIso(ctx.clock), runner: ctx.instanceId }))) return;
    const dest = await store.findDestination(ctx.db, orgId, run.destinationId);
    if (!dest) throw new Error('the destination no longer exists');
    const svc = await findTarget(ctx.db, orgId, run.projectId, run.serviceId);
    if (!svc) throw new Error('the service no longer exists');
    storage = await storageOf(ctx, dest);
    if (dest.kind === 'local') await localDestinationDir(ctx.config.localBackupRoot, dest.path!);
    const prefix = policyPrefix(run);
    tempKey = `${prefix}.tmp-${run.id}`;
    finalKey = `${prefix}${run.id}${svc.managed ? managedBackups.extension(svc.kind) : svc.kind === 'postgres' ? '.dump' : '.tar.gz'}`;
    await store.updateRun(ctx.db, orgId, run.id, { tempKey, artifactKey: finalKey });
    if (signal.aborted) throw new Cancelled();

    if (!(await moveRun(ctx, run, 'running', 'uploading'))) throw new Cancelled();
    const opened = await timed('backup.open-source', () => openSource(ctx, run!, svc, dest.kind, signal));
    // A volume is archived by a child process (writeVolumeArtifact); a dump is read from its tool.
    const written = await timed('backup.write', () =>
      'volume' in opened
        ? writeVolumeArtifact(storage!, tempKey!, opened.volume, progress('upload'), signal, opened.sizeHint)
        : writeArtifact(storage!, tempKey!, opened.source, progress('upload'), signal, opened.sizeHint),
    );
    if (signal.aborted) throw new Cancelled();
    if (!(await moveRun(ctx, run, 'uploading', 'verifying', { sha256: written.sha256, sizeBytes: written.sizeBytes }))) throw new Cancelled();
    const back = await timed('backup.read-back', () => hashObject(storage!, tempKey!, progress('verify', written.sizeBytes), signal));
    if (back.sha256 !== written.sha256 || back.sizeBytes !== written.sizeBytes) {
      throw new Error(`verification failed: the stored artifact (${back.sizeBytes} bytes, sha256 ${back.sha256}) differs from what was written`);
    }
    if (signal.aborted) throw new Cancelled();
    await timed('backup.finalize', () => storage!.finalize(tempKey!, finalKey!));
    const size = await storage.size(finalKey);
    if (size !== written.sizeBytes) throw new Error('the final artifact is missing or has the wrong size');
    const at = clockIso(ctx.clock);
    if (!(await moveRun(ctx, run, 'verifying', 'succeeded', { finishedAt: at, activeKey: null, tempKey: null, cancelRequested: 0 }))) throw new Cancelled();
    await store.setLastSuccess(ctx.db, orgId, run.policyId, at);
    if (svc.managed) await enqueueVerify(ctx, run);
  } catch (e) {
    run = await endFailedRun(ctx, run, e, signal, storage, [tempKey, finalKey]);
  } finally {
    stopWatch();
    jobSignal?.removeEventListener('abort', onJobAbort);
    aborts.delete(runId);
  }
  await pruneRuns(ctx, orgId, run.policyId);
}

/** A run a crash (or a dead worker) left in flight: `server_error`, partial artifacts removed. */
export async function recoverRun(ctx: Ctx, run: RunRow): Promise<void> {
  const { events } = backupsRuntime(ctx);
  // Partial artifacts go first, the status after: a recovery that is itself interrupted (a second
  // crash) leaves the run in flight, so the next recovery removes them again. The other order could
  // leave a terminal run with its partial file behind for good.
  const keys = [run.tempKey, run.artifactKey].filter((k): k is string => !!k);
  if (keys.length) {
    try {
      const dest = await store.findDestination(ctx.db, run.orgId, run.destinationId);
      if (dest) {
        const s = await storageOf(ctx, dest);
        for (const k of keys) await s.delete(k);
      }
    } catch (e) {
      ctx.log.warn({ runId: run.id, err: describeFailure(e) }, 'could not remove a partial backup artifact');
    }
  }
  const at = clockIso(ctx.clock);
  const ok = await store.moveRun(ctx.db, run.orgId, run.id, [run.status], {
    status: 'server_error',
    finishedAt: at,
    activeKey: null,
    tempKey: null,
    artifactKey: null,
    error: 'the server stopped while this run was in progress',
    updatedAt: at,
  });
  if (ok) events.publish(`run:${run.id}`, { type: 'transition', data: { from: run.status, to: 'server_error', at } });
}
