import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { clockIso } from '../../lib/clock.js';
import { downloadTo } from './artifacts.js';
import * as store from './backups.store.js';
import type { RunRow } from './backups.store.js';
import { storageOf } from './destination-storage.js';
import { describeFailure, logDetail } from './failures.js';
import { noticeRunFailed } from './run-notice.js';
import { findTarget, managedBackups } from './project-link.js';

/**
 * Restore tests (policy `verifyRestore: true`, managed services only; docs/backups.md): each new
 * succeeded run's artifact is downloaded, checked against its sha256 and restored into a throwaway
 * instance of the service (same kind, version, identity); when that instance answered and held the
 * artifact's tables (keys) the run records `verifiedAt`, otherwise `verifyError`. The service itself
 * is never touched; the throwaway's data is removed either way.
 */

export const VERIFY_JOB = 'backups.verify';

/** Queues the restore test of a run that just succeeded, when its policy asks for one. */
export async function enqueueVerify(ctx: AppContext, run: RunRow): Promise<void> {
  const policy = await store.findPolicy(ctx.db, run.orgId, run.policyId);
  if (policy?.verifyRestore !== 1) return;
  await ctx.jobs.enqueue(VERIFY_JOB, { id: run.id, orgId: run.orgId }, { orgId: run.orgId, maxAttempts: 1 });
  ctx.jobs.wake();
}

export async function executeVerify(ctx: AppContext, runId: string, orgId: string, signal?: AbortSignal): Promise<void> {
  const run = await store.findRun(ctx.db, orgId, runId);
  if (!run || run.status !== 'succeeded' || !run.artifactKey || !run.sha256 || run.verifiedAt) return;
  const file = path.join(ctx.config.dataDir, 'tmp', `verify-${path.basename(run.id)}`);
  let staging: string | null = null;
  try {
    const svc = await findTarget(ctx.db, orgId, run.projectId, run.serviceId);
    if (!svc?.managed) throw new Error('the service no longer exists');
    const dest = await store.findDestination(ctx.db, orgId, run.destinationId);
    if (!dest) throw new Error('the destination no longer exists');
    const got = await downloadTo(await storageOf(ctx, dest), run.artifactKey, file, undefined, signal);
    if (got.sha256 !== run.sha256) throw new Error('the artifact does not match its recorded sha256');
    staging = managedBackups.paths(ctx, svc.managed, `verify-${run.id}`).staging;
    await managedBackups.prepareFresh(ctx, svc.managed, file, staging, 'verify');
    await store.updateRun(ctx.db, orgId, run.id, { verifiedAt: clockIso(ctx.clock), verifyError: null });
  } catch (e) {
    ctx.log.warn({ runId, ...logDetail(e) }, 'the restore test of a backup failed');
    const why = describeFailure(e);
    await store.updateRun(ctx.db, orgId, run.id, { verifyError: why }).catch(() => {});
    // The restore test failed: the backup may not restore. Said to the org's channels (backup.verify_failed).
    await noticeRunFailed(ctx, run, 'verifying', `its restore test did not pass: ${why}`).catch((err) => ctx.log.warn({ runId, err: (err as Error).message }, 'could not notify'));
  } finally {
    await rm(file, { force: true }).catch(() => {});
    if (staging) await rm(staging, { recursive: true, force: true }).catch(() => {});
  }
}
