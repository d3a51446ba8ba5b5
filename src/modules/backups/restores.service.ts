import type { Actor } from '../../authz/actor.js';
import { transaction } from '../../db/client.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { AppError, conflict } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { newId, newSecretToken } from '../../lib/ids.js';
import { OutboundRefusedError } from '../../lib/outbound.js';
import { audit, type BackupsCtx } from './backups.audit.js';
import { restoreView } from './backups.presenters.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import type { RestoreRow, RunRow } from './backups.store.js';
import { storageOf } from './destination-storage.js';
import { describeFailure, refusedField } from './failures.js';
import { isTerminal } from './retention.js';
import { CANCEL } from './runs.service.js';

/**
 * Restores in two steps: prepare verifies the run's artifact and answers a one-time confirmation
 * token; apply, with that exact token, starts the job `backups.restore` (restore-executor.ts).
 * Either can be cancelled until the restore ends.
 */

type Ctx = BackupsCtx;

export const RESTORE_JOB = 'backups.restore';
export const RESTORE_TOKEN_TTL_MS = 15 * 60 * 1000;

export async function prepareRestore(ctx: Ctx, actor: Actor, run: RunRow) {
  if (run.status !== 'succeeded' || !run.artifactKey || !run.sha256) throw conflict(`only a succeeded run can be restored (this one is ${run.status})`);
  const dest = await store.findDestination(ctx.db, run.orgId, run.destinationId);
  if (!dest) throw conflict('the run\'s destination no longer exists');
  const { hashPinned } = await import('./artifacts.js');
  let check: { sha256: string; sizeBytes: number; identity: string | null };
  try {
    check = await hashPinned(await storageOf(ctx, dest), run.artifactKey);
  } catch (e) {
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    throw conflict(`the artifact could not be read from the destination: ${describeFailure(e)}`);
  }
  if (check.sha256 !== run.sha256 || (run.sizeBytes != null && check.sizeBytes !== Number(run.sizeBytes))) {
    throw conflict('the artifact in the destination does not match its recorded sha256; it cannot be restored');
  }
  const token = newSecretToken('berth_rst');
  const now = ctx.clock.now();
  const row: RestoreRow = {
    id: newId('bks'),
    orgId: run.orgId,
    runId: run.id,
    projectId: run.projectId,
    serviceId: run.serviceId,
    status: 'staged',
    tokenHash: sha256Hex(token),
    cancelRequested: 0,
    runner: null,
    createdBy: actor.userId,
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + RESTORE_TOKEN_TTL_MS).toISOString(),
    appliedAt: null,
    finishedAt: null,
    error: null,
    updatedAt: new Date(now).toISOString(),
    artifactIdentity: check.identity,
  };
  await store.insertRestore(ctx.db, row);
  await audit(ctx, actor, row.orgId, 'backup_restore.prepare', 'project', row.projectId, { restoreId: row.id, runId: run.id });
  return { restoreId: row.id, confirmationToken: token, expiresAt: row.expiresAt };
}

export async function applyRestore(ctx: Ctx, actor: Actor, row: RestoreRow, confirmationToken: string | undefined) {
  if (row.status === 'cancelled' || isTerminal(row.status)) throw conflict(`the restore is ${row.status}; prepare a new one`);
  const bad = (msg: string) => new AppError('INVALID_CONFIRMATION_TOKEN', msg, { field: 'confirmationToken' });
  if (row.status === 'applying') throw bad('this confirmation token was already used; prepare again for a fresh token');
  if (!confirmationToken) throw bad('confirmationToken is required: send the token prepare returned');
  if (!safeEqual(sha256Hex(confirmationToken), row.tokenHash)) throw bad('confirmationToken does not match the one prepare returned');
  if (new Date(row.expiresAt).getTime() <= ctx.clock.now()) throw bad('the confirmation token expired; prepare again for a fresh token');
  const busy = await store.applyingRestoreOfService(ctx.db, row.orgId, row.serviceId);
  if (busy) throw conflict('another restore of this service is being applied');
  const at = clockIso(ctx.clock);
  const moved = await transaction(ctx.db, async (tx) => {
    const ok = await store.moveRestore(tx, row.orgId, row.id, ['staged'], { status: 'applying', appliedAt: at, updatedAt: at });
    if (ok) await ctx.jobs.enqueue(RESTORE_JOB, { id: row.id, orgId: row.orgId }, { db: tx, orgId: row.orgId, maxAttempts: 1 });
    return ok;
  });
  if (moved) ctx.jobs.wake();
  if (!moved) {
    const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
    if (fresh?.status === 'applying') throw bad('this confirmation token was already used; prepare again for a fresh token');
    throw conflict(`the restore is ${fresh?.status ?? 'gone'}; prepare a new one`);
  }
  backupsRuntime(ctx).events.publish(`restore:${row.id}`, { type: 'transition', data: { from: 'staged', to: 'applying', at } });
  await audit(ctx, actor, row.orgId, 'backup_restore.apply', 'project', row.projectId, { restoreId: row.id, runId: row.runId, serviceId: row.serviceId });
  const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
  return restoreView(fresh!);
}

export async function cancelRestore(ctx: Ctx, row: RestoreRow) {
  if (row.status === 'cancelled' || isTerminal(row.status)) throw conflict(`the restore is already ${row.status}`);
  const at = clockIso(ctx.clock);
  if (row.status === 'staged') {
    const moved = await store.moveRestore(ctx.db, row.orgId, row.id, ['staged'], { status: 'cancelled', finishedAt: at, updatedAt: at });
    if (moved) backupsRuntime(ctx).events.publish(`restore:${row.id}`, { type: 'transition', data: { from: 'staged', to: 'cancelled', at } });
  }
  const now = await store.findRestore(ctx.db, row.orgId, row.id);
  if (now?.status === 'applying') {
    await store.updateRestore(ctx.db, row.orgId, row.id, { cancelRequested: 1 });
    backupsRuntime(ctx).aborts.get(row.id)?.abort(CANCEL);
  }
  const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
  return restoreView(fresh ?? row);
}
