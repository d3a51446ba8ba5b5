import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, notFound } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { BackupsCtx } from './backups.audit.js';
import { runView } from './backups.presenters.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import type { PolicyRow, RunRow } from './backups.store.js';
import { isTerminal } from './retention.js';

/**
 * Backup runs from the API's side: starting one (one in flight per policy), listing, protecting a
 * run from pruning, cancelling. The run itself executes in run-executor.ts (the job `backups.run`).
 */

type Ctx = BackupsCtx;

export const RUN_JOB = 'backups.run';
/** The abort reason of a user's cancel (the other is the server stopping: execution.ts). */
export const CANCEL = 'cancel';

/**
 * Starts a run of the policy, or answers the run already in flight (one at a time per policy).
 * The run row and its job are written in one transaction.
 */
export async function triggerRun(ctx: Ctx, policy: PolicyRow, trigger: 'manual' | 'cron' | 'webhook'): Promise<{ runId: string; created: boolean }> {
  const existing = await store.findActiveRun(ctx.db, policy.orgId, policy.id);
  if (existing) return { runId: existing.id, created: false };
  const now = clockIso(ctx.clock);
  const row: RunRow = {
    id: newId('bkr'),
    orgId: policy.orgId,
    policyId: policy.id,
    projectId: policy.projectId,
    serviceId: policy.serviceId,
    destinationId: policy.destinationId,
    status: 'queued',
    trigger,
    protected: 0,
    sizeBytes: null,
    sha256: null,
    artifactKey: null,
    tempKey: null,
    activeKey: policy.id,
    cancelRequested: 0,
    runner: null,
    verifiedAt: null,
    verifyError: null,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    error: null,
    updatedAt: now,
  };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertRun(tx, row);
      await ctx.jobs.enqueue(RUN_JOB, { id: row.id, orgId: row.orgId }, { db: tx, orgId: row.orgId, maxAttempts: 1 });
    });
    // The enqueue's own wake-up may run before the commit; look again now that the row is visible.
    ctx.jobs.wake();
  } catch (e) {
    if (isUniqueViolation(e)) {
      const again = await store.findActiveRun(ctx.db, policy.orgId, policy.id);
      if (again) return { runId: again.id, created: false };
    }
    throw e;
  }
  return { runId: row.id, created: true };
}

/** A run asked for by a user (the route checked write on the policy's project). */
export async function manualRun(ctx: Ctx, policy: PolicyRow) {
  if (policy.enabled !== 1) throw conflict('the policy is disabled; enable it first');
  return triggerRun(ctx, policy, 'manual');
}

export async function listRuns(ctx: Ctx, project: { id: string; orgId: string }, q: { policyId?: string; status?: string; limit?: number }) {
  const rows = await store.listRuns(ctx.db, project.orgId, project.id, { policyId: q.policyId, status: q.status, limit: q.limit ?? 50 });
  return rows.map(runView);
}

/** Protects a run from pruning, or releases it. */
export async function protectRun(ctx: Ctx, row: RunRow, locked: boolean) {
  await store.updateRun(ctx.db, row.orgId, row.id, { protected: locked ? 1 : 0, updatedAt: clockIso(ctx.clock) });
  const fresh = await store.findRun(ctx.db, row.orgId, row.id);
  if (!fresh) throw notFound('backup run');
  return runView(fresh);
}

/** Cancels a queued run at once; asks a running one to stop (here, or through its row on another instance). */
export async function requestRunCancel(ctx: Ctx, row: RunRow): Promise<void> {
  const at = clockIso(ctx.clock);
  if (row.status === 'queued') {
    const moved = await store.moveRun(ctx.db, row.orgId, row.id, ['queued'], { status: 'cancelled', activeKey: null, finishedAt: at, updatedAt: at, error: 'cancelled' });
    if (moved) {
      backupsRuntime(ctx).events.publish(`run:${row.id}`, { type: 'transition', data: { from: 'queued', to: 'cancelled', at } });
      return;
    }
  }
  await store.updateRun(ctx.db, row.orgId, row.id, { cancelRequested: 1 });
  backupsRuntime(ctx).aborts.get(row.id)?.abort(CANCEL);
}

export async function cancelRun(ctx: Ctx, row: RunRow) {
  if (isTerminal(row.status)) throw conflict(`the run already finished (${row.status})`);
  await requestRunCancel(ctx, row);
  const fresh = await store.findRun(ctx.db, row.orgId, row.id);
  return runView(fresh ?? row);
}
