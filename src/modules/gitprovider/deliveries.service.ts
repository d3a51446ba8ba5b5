import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, invalid } from '../../lib/errors.js';
import { hmacSha256Hex, safeEqual } from '../../lib/crypto.js';
import { onInstallation, onInstallationRepositories, onPush } from './delivery-events.js';
import type { DeliveryAck } from './gitprovider.presenters.js';
import * as store from './gitprovider.store.js';
import { onPullRequest } from './previews.service.js';

/**
 * Incoming GitHub deliveries (public `POST /api/gitprovider/webhook`): verified, stored once per
 * delivery id and queued; the jobs worker runs them (`delivery-events.ts` says what each event does).
 */

export const DELIVERY_JOB = 'gitprovider.delivery';
const HANDLED_EVENTS = new Set(['push', 'pull_request', 'installation', 'installation_repositories']);

/** Verifies `X-Hub-Signature-256` over the raw bytes in constant time; fails closed without a secret. */
export function verifySignature(secret: string | undefined, raw: Buffer, header: string | undefined): boolean {
  if (!secret || !header || !header.startsWith('sha256=')) return false;
  const expected = `sha256=${hmacSha256Hex(secret, raw)}`;
  return safeEqual(header, expected);
}

const DEDUPE_WINDOW_MS = 60 * 60 * 1000;

/**
 * What a delivery is about: a push's repository, ref and commit; a pull request's repository, number,
 * action and head commit; for other events the body's hash. Two deliveries with one key within the
 * hour do the same thing, so the second is not queued.
 */
export function dedupeKeyOf(event: string, p: Record<string, any>, raw: Buffer): string {
  const repo = typeof p.repository?.full_name === 'string' ? p.repository.full_name : '';
  if (event === 'push' && typeof p.ref === 'string' && typeof p.after === 'string') return `push:${repo}:${p.ref}:${p.before ?? ""}:${p.after}`;
  if (event === 'pull_request' && p.pull_request && typeof p.action === 'string') return `pull_request:${repo}:${p.number}:${p.action}:${p.pull_request.head?.sha ?? ''}`;
  return `${event}:${createHash('sha256').update(raw).digest('hex')}`;
}

/** Accepts one delivery: 200 when ignored or a duplicate, 202 when queued. */
export async function receiveDelivery(
  ctx: AppContext,
  d: { raw: Buffer; signature?: string; event?: string; deliveryId?: string; hookId?: string },
): Promise<{ status: 200 | 202; ack: DeliveryAck }> {
  if (!verifySignature(ctx.config.github.webhookSecret, d.raw, d.signature)) {
    throw new AppError('UNAUTHENTICATED', ctx.config.github.webhookSecret ? 'missing or invalid X-Hub-Signature-256' : 'webhook deliveries are refused: BERTH_GITHUB_WEBHOOK_SECRET is not set');
  }
  if (!d.deliveryId || d.deliveryId.length > 128) throw invalid('X-GitHub-Delivery', 'X-GitHub-Delivery header is required');
  if (!d.event || d.event.length > 64) throw invalid('X-GitHub-Event', 'X-GitHub-Event header is required');
  let payload: unknown;
  try {
    payload = JSON.parse(d.raw.toString('utf8'));
  } catch {
    throw invalid('body', 'the delivery body is not JSON');
  }
  if (!payload || typeof payload !== 'object') throw invalid('body', 'the delivery body must be a JSON object');
  if (!HANDLED_EVENTS.has(d.event)) return { status: 200, ack: { received: true, ignored: true, event: d.event } };
  // The same signed body again under a new delivery id (a replay, or a second hook for one repository): acknowledged, not queued.
  const dedupeKey = dedupeKeyOf(d.event, payload as Record<string, any>, d.raw);
  if (await store.handledRecently(ctx.db, dedupeKey, d.deliveryId, new Date(Date.now() - DEDUPE_WINDOW_MS).toISOString())) {
    return { status: 200, ack: { received: true, duplicate: true } };
  }
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertDelivery(tx, { deliveryId: d.deliveryId!, event: d.event!, hookId: d.hookId && /^\d{1,20}$/.test(d.hookId) ? d.hookId : null, payload: d.raw.toString('utf8'), dedupeKey });
      await ctx.jobs.enqueue(DELIVERY_JOB, { deliveryId: d.deliveryId }, { db: tx, maxAttempts: 5 });
    });
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    // A repeated delivery is a no-op, unless the first one failed for good: GitHub's "Redeliver"
    // sends the same id (and the same signed body), and it is how a user retries a push whose
    // processing failed.
    const requeued = await transaction(ctx.db, async (tx) => {
      if (!(await store.requeueFailedDelivery(tx, d.deliveryId!, d.raw.toString('utf8')))) return false;
      await ctx.jobs.enqueue(DELIVERY_JOB, { deliveryId: d.deliveryId }, { db: tx, maxAttempts: 5 });
      return true;
    });
    if (!requeued) return { status: 200, ack: { received: true, duplicate: true } };
    ctx.jobs.wake();
    return { status: 202, ack: { received: true, queued: true, redelivered: true } };
  }
  return { status: 202, ack: { received: true, queued: true } };
}

/**
 * Runs one stored delivery (the jobs worker calls it). When its last attempt fails the delivery is
 * marked `failed` with the reason, so that a redelivery of the same id runs it again.
 */
export async function processDelivery(ctx: AppContext, deliveryId: string, attempt?: { attempts: number; maxAttempts: number }): Promise<void> {
  const row = await store.findDelivery(ctx.db, deliveryId);
  if (!row || row.status === 'done') return;
  try {
    const p = JSON.parse(row.payload) as Record<string, unknown>;
    let result: unknown = null;
    if (row.event === 'push') result = await onPush(ctx, p, row.hookId);
    else if (row.event === 'pull_request') result = await onPullRequest(ctx, p, row.hookId);
    else if (row.event === 'installation') result = await onInstallation(ctx, p);
    else if (row.event === 'installation_repositories') result = await onInstallationRepositories(ctx, p);
    await store.finishDelivery(ctx.db, deliveryId, 'done', result);
  } catch (e) {
    if (attempt && attempt.attempts >= attempt.maxAttempts) {
      await store.finishDelivery(ctx.db, deliveryId, 'failed', { error: String((e as Error)?.message ?? e).slice(0, 500) }).catch(() => {});
    }
    throw e;
  }
}

/** Housekeeping (leader-only, every 6 h): handled deliveries, device flows and used state nonces older than 30 days are forgotten. */
export async function pruneOld(ctx: AppContext): Promise<void> {
  await store.pruneOld(ctx.db, new Date(Date.now() - 30 * 24 * 3600_000).toISOString());
}
