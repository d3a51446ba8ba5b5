import { span, timed } from '../../lib/spans.js';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import type { RestoreRow, RunRow } from './backups.store.js';
import { downloadTo, extractArtifact } from './artifacts.js';
import { storageOf } from './destination-storage.js';
import { Cancelled, serviceTarget, STOPPING, stoppedBy, volumeDir, watch } from './execution.js';
import { describeFailure, logDetail } from './failures.js';
import { pgRestoreFile } from './pg-tools.js';
import { findTarget, managedBackups, projectRuntime } from './project-link.js';
import { ArtifactChangedError, type Storage } from './storage.js';
import { assertVolumeHere, repairVolume, stagingFor, swapIn } from './volume-archive.js';

/**
 * Executes an applied restore (the job `backups.restore`): the artifact is downloaded and checked
 * against its recorded hash (or read pinned to the object prepare hashed), the project is taken
 * offline, the data is swapped in (a volume) or restored in one transaction (a database), and the
 * project is brought back. A failure leaves the previous data untouched.
 */

type Ctx = AppContext;

async function moveRestore(ctx: Ctx, r: RestoreRow, from: string, to: string, extra: Partial<RestoreRow> = {}): Promise<boolean> {
  const { events } = backupsRuntime(ctx);
  const at = nowIso();
  const ok = await store.moveRestore(ctx.db, r.orgId, r.id, [from], { ...extra, status: to, updatedAt: at });
  if (ok) events.publish(`restore:${r.id}`, { type: 'transition', data: { from, to, at } });
  return ok;
}

type Target = NonNullable<Awaited<ReturnType<typeof findTarget>>>;
type Progress = (phase: string, totalBytes?: number) => (bytes: number) => void;
/** What a restore leaves to remove: the downloaded artifact, a managed service's fresh data folder (until swapped in). */
interface Leftovers {
  staging: string | null;
  freshDir: string | null;
}

/**
 * Downloads the artifact beside the target and checks it against its recorded hash (or, for a
 * volume prepare pinned, that it is still the same file); a managed service's fresh instance is made
 * from it and checked. Nothing the project uses has changed yet.
 */
async function stageArtifact(ctx: Ctx, r: RestoreRow, run: RunRow, svc: Target, storage: Storage, progress: Progress, signal: AbortSignal, left: Leftovers): Promise<void> {
  const { events } = backupsRuntime(ctx);
  const total = run.sizeBytes == null ? undefined : Number(run.sizeBytes);
  if (svc.managed) {
    // A fresh instance of the same kind and version is made from the artifact beside the service's
    // data and checked (it answers, it holds the artifact's tables or keys) before anything changes.
    // The download (and its hash check) runs while the fresh instance starts (prepareFresh).
    const file = path.join(ctx.config.dataDir, 'tmp', `restore-${r.id}${managedBackups.extension(svc.kind)}`);
    left.staging = file;
    const fetch = async () => {
      const got = await timed('restore.download', () => downloadTo(storage, run.artifactKey!, file, progress('download', total), signal));
      if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
      if (signal.aborted) throw new Cancelled();
      events.publish(`restore:${r.id}`, { type: 'progress', data: { phase: 'restore', bytes: total ?? 0, ...(total !== undefined ? { totalBytes: total } : {}) } });
      return file;
    };
    left.freshDir = managedBackups.paths(ctx, svc.managed, r.id).staging;
    await managedBackups.prepareFresh(ctx, svc.managed, fetch, left.freshDir, `restore-${r.id}`);
  } else if (svc.kind === 'postgres') {
    left.staging = path.join(ctx.config.dataDir, 'tmp', `restore-${r.id}.dump`);
    const got = await downloadTo(storage, run.artifactKey!, left.staging, progress('download', total), signal);
    if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
  } else {
    const target = volumeDir(ctx, run.projectId, svc.name);
    assertVolumeHere(target);
    left.staging = await stagingFor(target, r.id);
    // Prepare hashed the artifact; where it also pinned the exact file, apply reads that file
    // without a second hash pass and checks it is still the same file afterwards.
    const pinned = r.artifactIdentity && storage.getPinned && storage.identity ? r.artifactIdentity : undefined;
    const got = await timed('restore.extract', () => extractArtifact(storage, run.artifactKey!, left.staging!, progress('download', total), signal, pinned));
    if (pinned) {
      if ((total !== undefined && got.sizeBytes !== total) || (await storage.identity!(run.artifactKey!)) !== pinned) throw new ArtifactChangedError();
    } else if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
  }
}

/** Puts the staged data in place (the project offline); returns the folder of the data it replaced, if any. */
async function swapInStaged(ctx: Ctx, r: RestoreRow, run: RunRow, svc: Target, staging: string, signal: AbortSignal): Promise<string | null> {
  const { events } = backupsRuntime(ctx);
  const total = run.sizeBytes == null ? undefined : Number(run.sizeBytes);
  if (svc.managed) {
    return await managedBackups.swapFresh(ctx, svc.managed, r.id);
  } else if (svc.kind === 'postgres') {
    events.publish(`restore:${r.id}`, { type: 'progress', data: { phase: 'restore', bytes: total ?? 0, ...(total !== undefined ? { totalBytes: total } : {}) } });
    const target = await serviceTarget(ctx, svc);
    await pgRestoreFile(target.url, staging, signal, target.hostaddr);
    return null;
  } else {
    const target = volumeDir(ctx, run.projectId, svc.name);
    await mkdir(path.dirname(target), { recursive: true });
    return (await timed('restore.swap', () => swapIn(staging, target, r.id))).old;
  }
}

export async function executeRestore(ctx: Ctx, restoreId: string, orgId: string, jobSignal?: AbortSignal): Promise<void> {
  const r = await store.findRestore(ctx.db, orgId, restoreId);
  if (!r || r.status !== 'applying') return;
  if (r.runner && r.runner !== ctx.instanceId) {
    // Claimed again after its worker died.
    await recoverRestore(ctx, r);
    return;
  }
  await store.updateRestore(ctx.db, orgId, r.id, { runner: ctx.instanceId });
  const { aborts, events } = backupsRuntime(ctx);
  const abort = new AbortController();
  aborts.set(r.id, abort);
  const onJobAbort = () => abort.abort(STOPPING);
  jobSignal?.addEventListener('abort', onJobAbort, { once: true });
  const stopWatch = watch(ctx, 'restore', orgId, r.id, abort);
  const signal = abort.signal;
  const progress = (phase: string, totalBytes?: number) => (bytes: number) =>
    events.publish(`restore:${r.id}`, { type: 'progress', data: { phase, bytes, ...(totalBytes !== undefined ? { totalBytes } : {}) } });
  const left: Leftovers = { staging: null, freshDir: null };
  let restartProject = false;
  let oldDir: string | null = null;
  let outcome: { to: string; error?: string } = { to: 'failed', error: 'interrupted' };
  const runtime = projectRuntime(ctx);
  try {
    const run = await store.findRun(ctx.db, orgId, r.runId);
    if (!run || run.status !== 'succeeded' || !run.artifactKey || !run.sha256) throw new Error('the backup run is no longer available');
    const dest = await store.findDestination(ctx.db, orgId, run.destinationId);
    if (!dest) throw new Error('the destination no longer exists');
    const svc = await findTarget(ctx.db, orgId, run.projectId, run.serviceId);
    if (!svc) throw new Error('the service no longer exists');
    const storage = await storageOf(ctx, dest);
    await timed('restore.stage', () => stageArtifact(ctx, r, run, svc, storage, progress, signal, left));
    if (signal.aborted) throw new Cancelled();
    // From here on the target changes: stop the project's process first (if it runs).
    if (runtime) {
      const st = await runtime.state(ctx, orgId, run.projectId).catch(() => null);
      if (st && st.state !== 'stopped' && st.state !== 'not_deployed' && st.state !== 'failed') {
        await runtime.takeOffline(ctx, orgId, run.projectId);
        restartProject = true;
      }
    }
    oldDir = await swapInStaged(ctx, r, run, svc, left.staging!, signal);
    outcome = { to: 'succeeded' };
  } catch (e) {
    const stopped = stoppedBy(signal);
    const cancelled = !stopped && (e instanceof Cancelled || signal.aborted);
    outcome = stopped
      ? { to: 'server_error', error: 'the server stopped while this restore was in progress' }
      : { to: cancelled ? 'cancelled' : 'failed', error: cancelled ? 'cancelled' : describeFailure(e) };
    if (!cancelled) ctx.log.warn({ restoreId: r.id, ...logDetail(e) }, 'restore failed; the previous data is untouched');
  } finally {
    // Clean up and restart the project before the terminal status is visible.
    const cleaned = span('restore.cleanup');
    for (const dir of [left.staging, left.freshDir]) if (dir && existsSync(dir)) await rm(dir, { recursive: true, force: true }).catch(() => {});
    cleaned();
    if (restartProject && runtime) await runtime.bringOnline(ctx, orgId, r.projectId).catch((e) => ctx.log.warn({ err: describeFailure(e) }, 'could not restart the project after a restore'));
    stopWatch();
    jobSignal?.removeEventListener('abort', onJobAbort);
    aborts.delete(r.id);
  }
  await timed('restore.status', () => moveRestore(ctx, r, 'applying', outcome.to, { finishedAt: nowIso(), cancelRequested: 0, ...(outcome.error ? { error: outcome.error } : {}) }));
  if (oldDir) await rm(oldDir, { recursive: true, force: true }).catch(() => {});
}

export async function recoverRestore(ctx: Ctx, r: RestoreRow): Promise<void> {
  // Leftovers first, the status after (see recoverRun).
  const svc = await findTarget(ctx.db, r.orgId, r.projectId, r.serviceId).catch(() => undefined);
  if (svc?.managed) await managedBackups.repairRestore(ctx, svc.managed, r.id).catch((e) => ctx.log.warn({ restoreId: r.id, err: describeFailure(e) }, 'could not repair an interrupted restore of a managed service'));
  else if (svc && svc.kind !== 'postgres') await repairVolume(volumeDir(ctx, r.projectId, svc.name)).catch(() => {});
  await rm(path.join(ctx.config.dataDir, 'tmp', `restore-${r.id}${svc?.managed ? managedBackups.extension(svc.kind) : '.dump'}`), { force: true }).catch(() => {});
  await moveRestore(ctx, r, 'applying', 'server_error', { finishedAt: nowIso(), error: 'the server stopped while this restore was in progress' });
}
