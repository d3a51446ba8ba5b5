import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { decryptSecret } from '../../lib/crypto.js';
import { outboundPolicy, postgresUrlHost } from '../../lib/outbound.js';
import { nowIso } from '../../lib/ids.js';
import { getRuntimePort } from '../projects/runtime-port.js';
import * as store from './backups.store.js';
import type { RestoreRow, RunRow } from './backups.store.js';
import { localAborts, policyPrefix, pruneRuns, storageOf } from './backups.service.js';
import { downloadTo, extractArtifact, hashObject, pgDumpSource, pgRestoreFile, repairVolume, swapIn, volumeSizeHint, volumeSource, writeArtifact } from './engine.js';
import { publish } from './events.js';
import { describeFailure, logDetail } from './failures.js';
import { ArtifactChangedError, type Storage } from './storage.js';

/**
 * Executes runs and restores (job handlers) and recovers what a crash left behind. A run is
 * `succeeded` only after its artifact was written under a temporary key, hashed on the way, read
 * back and matched, and made final.
 */

type Ctx = AppContext;

class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

/** Abort reasons: a user's cancel, or the server stopping (the job queue's grace ran out). */
export const CANCEL = 'cancel';
const STOPPING = 'stopping';
const stoppedBy = (signal: AbortSignal) => signal.aborted && signal.reason === STOPPING;

/** Folder of a project's volume service. */
export function volumeDir(ctx: Pick<AppContext, 'config'>, projectId: string, name: string): string {
  return path.join(ctx.config.dataDir, 'volumes', path.basename(projectId), path.basename(name));
}

/**
 * The database of a service, checked now (its host resolved and refused when internal, unless
 * BERTH_OUTBOUND_ALLOW lists it) and pinned: pg_dump/pg_restore connect to `hostaddr`, the address
 * that passed the check.
 */
async function serviceTarget(ctx: Ctx, svc: { projectId: string; name: string; connectionUrl: string | null }): Promise<{ url: string; hostaddr: string }> {
  if (!svc.connectionUrl) throw new Error('the database service has no connection URL');
  const url = decryptSecret(ctx.keyring, svc.connectionUrl, `service:${svc.projectId}:${svc.name}`);
  const checked = await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(postgresUrlHost(url));
  return { url, hostaddr: checked.addresses[0]!.address };
}

/** A failure's text for a record: Berth's words, never a peer's (failures.ts), no credentials. */
const safeMessage = describeFailure;

async function moveRun(ctx: Ctx, run: RunRow, from: string, to: string, extra: Partial<RunRow> = {}): Promise<boolean> {
  const at = nowIso();
  const ok = await store.moveRun(ctx.db, run.orgId, run.id, [from], { ...extra, status: to, updatedAt: at });
  if (ok) publish(`run:${run.id}`, { type: 'transition', data: { from, to, at } });
  return ok;
}

/**
 * Watches for cancel requests of another instance (the row's flag) and keeps the row's heartbeat
 * (updatedAt) fresh, so a sweep can tell a dead run from a live one.
 */
function watch(ctx: Ctx, table: 'backupRuns' | 'backupRestores', orgId: string, id: string, abort: AbortController): () => void {
  const timer = setInterval(() => {
    void (async () => {
      try {
        await ctx.db.updateTable(table).set({ updatedAt: nowIso() }).where('orgId', '=', orgId).where('id', '=', id).execute();
        const row = await ctx.db.selectFrom(table).select('cancelRequested').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
        if (!row || row.cancelRequested === 1) abort.abort(CANCEL);
      } catch {
        /* the next beat tries again */
      }
    })();
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
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
  localAborts.set(run.id, abort);
  const onJobAbort = () => abort.abort(STOPPING);
  jobSignal?.addEventListener('abort', onJobAbort, { once: true });
  const stopWatch = watch(ctx, 'backupRuns', orgId, runId, abort);
  const signal = abort.signal;
  let storage: Storage | null = null;
  let tempKey: string | null = null;
  let finalKey: string | null = null;
  const progress = (phase: string, totalBytes?: number) => (bytes: number) =>
    publish(`run:${runId}`, { type: 'progress', data: { phase, bytes, ...(totalBytes !== undefined ? { totalBytes } : {}) } });
  try {
    if (run.cancelRequested === 1) throw new Cancelled();
    if (!(await moveRun(ctx, run, 'queued', 'running', { startedAt: nowIso(), runner: ctx.instanceId }))) return;
    const dest = await store.findDestination(ctx.db, orgId, run.destinationId);
    if (!dest) throw new Error('the destination no longer exists');
    const svc = await store.findService(ctx.db, orgId, run.projectId, run.serviceId);
    if (!svc) throw new Error('the service no longer exists');
    storage = await storageOf(ctx, dest);
    if (dest.kind === 'local') await mkdir(dest.path!, { recursive: true });
    const prefix = policyPrefix(run);
    tempKey = `${prefix}.tmp-${run.id}`;
    finalKey = `${prefix}${run.id}${svc.kind === 'postgres' ? '.dump' : '.tar.gz'}`;
    await store.updateRun(ctx.db, orgId, run.id, { tempKey, artifactKey: finalKey });
    if (signal.aborted) throw new Cancelled();

    if (!(await moveRun(ctx, run, 'running', 'uploading'))) throw new Cancelled();
    let source;
    // An upper estimate of the artifact's size, so that an S3 upload picks parts big enough for it:
    // the volume's tar size, or for a dump twice the last successful one of this policy.
    let sizeHint: number | undefined;
    if (svc.kind === 'postgres') {
      const last = await store.lastSucceededSize(ctx.db, orgId, run.policyId);
      sizeHint = last ? last * 2 : undefined;
      const target = await serviceTarget(ctx, svc);
      source = pgDumpSource(target.url, signal, target.hostaddr);
    } else {
      const dir = volumeDir(ctx, run.projectId, svc.name);
      await mkdir(dir, { recursive: true });
      if (dest.kind === 's3') sizeHint = await volumeSizeHint(dir);
      source = volumeSource(dir);
    }
    const written = await writeArtifact(storage, tempKey, source, progress('upload'), signal, sizeHint);
    if (signal.aborted) throw new Cancelled();
    if (!(await moveRun(ctx, run, 'uploading', 'verifying', { sha256: written.sha256, sizeBytes: written.sizeBytes }))) throw new Cancelled();
    const back = await hashObject(storage, tempKey, progress('verify', written.sizeBytes), signal);
    if (back.sha256 !== written.sha256 || back.sizeBytes !== written.sizeBytes) {
      throw new Error(`verification failed: the stored artifact (${back.sizeBytes} bytes, sha256 ${back.sha256}) differs from what was written`);
    }
    if (signal.aborted) throw new Cancelled();
    await storage.finalize(tempKey, finalKey);
    const size = await storage.size(finalKey);
    if (size !== written.sizeBytes) throw new Error('the final artifact is missing or has the wrong size');
    const at = nowIso();
    if (!(await moveRun(ctx, run, 'verifying', 'succeeded', { finishedAt: at, activeKey: null, tempKey: null, cancelRequested: 0 }))) throw new Cancelled();
    await ctx.db.updateTable('backupPolicies').set({ lastSuccessAt: at }).where('orgId', '=', orgId).where('id', '=', run.policyId).execute();
  } catch (e) {
    const stopped = stoppedBy(signal);
    const cancelled = !stopped && (e instanceof Cancelled || signal.aborted);
    run = (await store.findRun(ctx.db, orgId, runId)) ?? run;
    if (storage) {
      for (const k of [tempKey, finalKey]) if (k) await storage.delete(k).catch(() => {});
    }
    if (store.RUN_IN_FLIGHT.includes(run.status)) {
      const at = nowIso();
      const to = stopped ? 'server_error' : cancelled ? 'cancelled' : 'failed';
      const ok = await store.moveRun(ctx.db, orgId, runId, [run.status], {
        status: to,
        finishedAt: at,
        activeKey: null,
        tempKey: null,
        artifactKey: null,
        error: stopped ? 'the server stopped while this run was in progress' : cancelled ? 'cancelled' : safeMessage(e),
        updatedAt: at,
      });
      if (ok) publish(`run:${runId}`, { type: 'transition', data: { from: run.status, to, at } });
    }
    if (!cancelled && !stopped) ctx.log.warn({ runId, ...logDetail(e) }, 'backup run failed');
  } finally {
    stopWatch();
    jobSignal?.removeEventListener('abort', onJobAbort);
    localAborts.delete(runId);
  }
  await pruneRuns(ctx, orgId, run.policyId);
}

/** A run a crash (or a dead worker) left in flight: `server_error`, partial artifacts removed. */
export async function recoverRun(ctx: Ctx, run: RunRow): Promise<void> {
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
      ctx.log.warn({ runId: run.id, err: safeMessage(e) }, 'could not remove a partial backup artifact');
    }
  }
  const at = nowIso();
  const ok = await store.moveRun(ctx.db, run.orgId, run.id, [run.status], {
    status: 'server_error',
    finishedAt: at,
    activeKey: null,
    tempKey: null,
    artifactKey: null,
    error: 'the server stopped while this run was in progress',
    updatedAt: at,
  });
  if (ok) publish(`run:${run.id}`, { type: 'transition', data: { from: run.status, to: 'server_error', at } });
}

async function moveRestore(ctx: Ctx, r: RestoreRow, from: string, to: string, extra: Partial<RestoreRow> = {}): Promise<boolean> {
  const at = nowIso();
  const ok = await store.moveRestore(ctx.db, r.orgId, r.id, [from], { ...extra, status: to, updatedAt: at });
  if (ok) publish(`restore:${r.id}`, { type: 'transition', data: { from, to, at } });
  return ok;
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
  const abort = new AbortController();
  localAborts.set(r.id, abort);
  const onJobAbort = () => abort.abort(STOPPING);
  jobSignal?.addEventListener('abort', onJobAbort, { once: true });
  const stopWatch = watch(ctx, 'backupRestores', orgId, r.id, abort);
  const signal = abort.signal;
  const progress = (phase: string, totalBytes?: number) => (bytes: number) =>
    publish(`restore:${r.id}`, { type: 'progress', data: { phase, bytes, ...(totalBytes !== undefined ? { totalBytes } : {}) } });
  let staging: string | null = null;
  let restartProject = false;
  let oldDir: string | null = null;
  let outcome: { to: string; error?: string } = { to: 'failed', error: 'interrupted' };
  const runtime = getRuntimePort();
  try {
    const run = await store.findRun(ctx.db, orgId, r.runId);
    if (!run || run.status !== 'succeeded' || !run.artifactKey || !run.sha256) throw new Error('the backup run is no longer available');
    const dest = await store.findDestination(ctx.db, orgId, run.destinationId);
    if (!dest) throw new Error('the destination no longer exists');
    const svc = await store.findService(ctx.db, orgId, run.projectId, run.serviceId);
    if (!svc) throw new Error('the service no longer exists');
    const storage = await storageOf(ctx, dest);
    const total = run.sizeBytes == null ? undefined : Number(run.sizeBytes);
    if (svc.kind === 'postgres') {
      staging = path.join(ctx.config.dataDir, 'tmp', `restore-${r.id}.dump`);
      const got = await downloadTo(storage, run.artifactKey, staging, progress('download', total), signal);
      if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
    } else {
      const target = volumeDir(ctx, run.projectId, svc.name);
      staging = `${target}.restore-${r.id}`;
      await rm(staging, { recursive: true, force: true });
      // Prepare hashed the artifact; where it also pinned the exact file, apply reads that file
      // without a second hash pass and checks it is still the same file afterwards.
      const pinned = r.artifactIdentity && storage.getPinned && storage.identity ? r.artifactIdentity : undefined;
      const got = await extractArtifact(storage, run.artifactKey, staging, progress('download', total), signal, pinned);
      if (pinned) {
        if ((total !== undefined && got.sizeBytes !== total) || (await storage.identity!(run.artifactKey)) !== pinned) throw new ArtifactChangedError();
      } else if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
    }
    if (signal.aborted) throw new Cancelled();
    // From here on the target changes: stop the project's process first (if it runs).
    if (runtime) {
      const st = await runtime.state(ctx, orgId, run.projectId).catch(() => null);
      if (st && st.state !== 'stopped' && st.state !== 'not_deployed' && st.state !== 'failed') {
        await runtime.takeOffline(ctx, orgId, run.projectId);
        restartProject = true;
      }
    }
    if (svc.kind === 'postgres') {
      publish(`restore:${r.id}`, { type: 'progress', data: { phase: 'restore', bytes: total ?? 0, ...(total !== undefined ? { totalBytes: total } : {}) } });
      const target = await serviceTarget(ctx, svc);
      await pgRestoreFile(target.url, staging, signal, target.hostaddr);
    } else {
      const target = volumeDir(ctx, run.projectId, svc.name);
      await mkdir(path.dirname(target), { recursive: true });
      oldDir = (await swapIn(staging, target, r.id)).old;
    }
    outcome = { to: 'succeeded' };
  } catch (e) {
    const stopped = stoppedBy(signal);
    const cancelled = !stopped && (e instanceof Cancelled || signal.aborted);
    outcome = stopped
      ? { to: 'server_error', error: 'the server stopped while this restore was in progress' }
      : { to: cancelled ? 'cancelled' : 'failed', error: cancelled ? 'cancelled' : safeMessage(e) };
    if (!cancelled) ctx.log.warn({ restoreId: r.id, ...logDetail(e) }, 'restore failed; the previous data is untouched');
  } finally {
    // Clean up and restart the project before the terminal status is visible.
    if (staging && existsSync(staging)) await rm(staging, { recursive: true, force: true }).catch(() => {});
    if (restartProject && runtime) await runtime.bringOnline(ctx, orgId, r.projectId).catch((e) => ctx.log.warn({ err: safeMessage(e) }, 'could not restart the project after a restore'));
    stopWatch();
    jobSignal?.removeEventListener('abort', onJobAbort);
    localAborts.delete(r.id);
  }
  await moveRestore(ctx, r, 'applying', outcome.to, { finishedAt: nowIso(), cancelRequested: 0, ...(outcome.error ? { error: outcome.error } : {}) });
  if (oldDir) await rm(oldDir, { recursive: true, force: true }).catch(() => {});
}

/** Start-up sweep: leftovers of restores a stop interrupted (`data.old-*`, `data.restore-*`). */
export async function sweepVolumes(ctx: Pick<AppContext, 'config'>): Promise<void> {
  const root = path.join(ctx.config.dataDir, 'volumes');
  if (!existsSync(root)) return;
  const { readdir } = await import('node:fs/promises');
  for (const project of await readdir(root)) {
    const dir = path.join(root, project);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    const targets = new Set(names.filter((n) => /\.(old|restore)-/.test(n)).map((n) => n.replace(/\.(old|restore)-.*$/, '')));
    for (const t of targets) await repairVolume(path.join(dir, t)).catch(() => {});
  }
}

export async function recoverRestore(ctx: Ctx, r: RestoreRow): Promise<void> {
  // Leftovers first, the status after (see recoverRun).
  const svc = await store.findService(ctx.db, r.orgId, r.projectId, r.serviceId).catch(() => undefined);
  if (svc && svc.kind !== 'postgres') await repairVolume(volumeDir(ctx, r.projectId, svc.name)).catch(() => {});
  await rm(path.join(ctx.config.dataDir, 'tmp', `restore-${r.id}.dump`), { force: true }).catch(() => {});
  await moveRestore(ctx, r, 'applying', 'server_error', { finishedAt: nowIso(), error: 'the server stopped while this restore was in progress' });
}

/**
 * Crash recovery: in-flight runs and applying restores become `server_error`. On SQLite the data
 * dir lock guarantees this is the only instance, so everything left is dead. On PostgreSQL (several
 * instances may share it) only rows whose heartbeat stopped more than `staleMs` ago are touched.
 */
export async function recoverStale(ctx: Ctx, staleMs: number | null, includeQueued: boolean): Promise<number> {
  const cutoff = staleMs == null ? null : new Date(Date.now() - staleMs).toISOString();
  let n = 0;
  for (const run of await store.inFlightRuns(ctx.db)) {
    if (localAborts.has(run.id)) continue;
    if (run.status === 'queued' && !includeQueued) continue;
    if (cutoff && run.updatedAt > cutoff) continue;
    await recoverRun(ctx, run);
    n++;
  }
  for (const r of await store.applyingRestores(ctx.db)) {
    if (localAborts.has(r.id)) continue;
    // Applied but not yet picked up by a worker: like a queued run.
    if (r.runner == null && !includeQueued) continue;
    if (cutoff && r.updatedAt > cutoff) continue;
    await recoverRestore(ctx, r);
    n++;
  }
  return n;
}
