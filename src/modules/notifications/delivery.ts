import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { clockIso } from '../../lib/clock.js';
import { decryptSecret } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { Notice, NoticeInput } from './events.js';
import * as store from './notifications.store.js';
import type { ChannelRow, DeliveryRow } from './notifications.store.js';
import { send, type SendTarget } from './senders.js';

/**
 * Deliveries: one row per notice and channel, sent by a job of the jobs system (`src/jobs`), so a
 * notice outlives a restart. A failed attempt schedules the next one (30 s, doubling, at most an hour
 * apart) as a new job, in the same transaction as the row's update, until 24 hours after the notice;
 * then the delivery is `failed` for good. A receiver that calls the request itself wrong (HTTP 4xx but
 * 408, 425 and 429; a mail server's 5xx) is not asked again.
 */

export const DELIVERY_JOB = 'notifications.deliver';
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
const FIRST_RETRY_MS = 30 * 1000;
const MAX_RETRY_MS = 60 * 60 * 1000;

export type NotifyCtx = Pick<AppContext, 'db' | 'jobs' | 'log' | 'clock' | 'keyring' | 'config' | 'publicUrl'>;
/** What `notifyEvent` reads of the app context (any area's services have it). */
export type NoticeCtx = Pick<AppContext, 'db' | 'jobs' | 'log' | 'clock'>;

/** The wait after `failures` failed attempts: 30 s * 2^(failures-1), at most 1 h. */
export function retryDelayMs(failures: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1));
}

export const urlAad = (id: string) => `notification-channel:${id}:url`;
export const secretAad = (id: string) => `notification-channel:${id}:secret`;

export function targetOf(ctx: Pick<AppContext, 'keyring'>, ch: ChannelRow): SendTarget {
  return {
    kind: ch.kind as SendTarget['kind'],
    url: ch.urlSealed ? decryptSecret(ctx.keyring, ch.urlSealed, urlAad(ch.id)) : null,
    to: ch.emailTo,
    secret: ch.secretSealed ? decryptSecret(ctx.keyring, ch.secretSealed, secretAad(ch.id)) : null,
  };
}

export function subscribed(ch: ChannelRow, event: string): boolean {
  try {
    return (JSON.parse(ch.events) as string[]).includes(event);
  } catch {
    return false;
  }
}

/** A pending delivery row of `notice` to `channel`. */
export function newDelivery(ctx: Pick<AppContext, 'clock'>, channel: ChannelRow, notice: Notice): DeliveryRow {
  const at = clockIso(ctx.clock);
  return {
    id: newId('ntd'),
    orgId: channel.orgId,
    channelId: channel.id,
    event: notice.event,
    payload: JSON.stringify(notice),
    status: 'pending',
    attempts: 0,
    lastError: null,
    lastStatusCode: null,
    nextAttemptAt: at,
    deliveredAt: null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * Records a delivery for every channel of the org subscribed to the event and queues its first
 * attempt. Never throws: a notice that cannot be recorded is logged, and the caller's work goes on.
 */
export async function notifyEvent(ctx: NoticeCtx, input: NoticeInput): Promise<void> {
  try {
    const channels = (await store.listChannels(ctx.db, input.orgId)).filter((c) => subscribed(c, input.event));
    if (!channels.length) return;
    const notice: Notice = { event: input.event, projectId: input.projectId ?? null, subject: input.subject, detail: input.detail, url: input.url ?? null, at: clockIso(ctx.clock) };
    for (const ch of channels) {
      const row = newDelivery(ctx, ch, notice);
      await transaction(ctx.db, async (tx) => {
        await store.insertDelivery(tx, row);
        await ctx.jobs.enqueue(DELIVERY_JOB, { orgId: row.orgId, deliveryId: row.id }, { db: tx, orgId: row.orgId, maxAttempts: 3 });
      });
    }
  } catch (e) {
    ctx.log.warn({ orgId: input.orgId, event: input.event, err: (e as Error).message }, 'a notification could not be recorded');
  }
}

/**
 * One attempt of a pending delivery (a job's work, or a test send). Answers the row as it is after
 * the attempt; undefined when it or its channel is gone.
 */
export async function attemptDelivery(ctx: NotifyCtx, orgId: string, deliveryId: string, opts: { retry?: boolean } = {}): Promise<DeliveryRow | undefined> {
  const d = await store.findDelivery(ctx.db, orgId, deliveryId);
  if (!d || d.status !== 'pending') return d;
  const ch = await store.findChannel(ctx.db, orgId, d.channelId);
  if (!ch) return undefined;
  const out = await send(ctx, targetOf(ctx, ch), d.id, JSON.parse(d.payload) as Notice);
  const attempts = d.attempts + 1;
  const now = ctx.clock.now();
  const at = new Date(now).toISOString();
  if (out.ok) {
    const set = { status: 'delivered', attempts, lastError: null, lastStatusCode: out.statusCode, nextAttemptAt: null, deliveredAt: at, updatedAt: at };
    await store.updateDelivery(ctx.db, orgId, d.id, set);
    return { ...d, ...set };
  }
  const next = now + retryDelayMs(attempts);
  const again = (opts.retry ?? true) && out.retry && next <= Date.parse(d.createdAt) + RETRY_WINDOW_MS;
  const set = { status: again ? 'pending' : 'failed', attempts, lastError: out.error, lastStatusCode: out.statusCode, nextAttemptAt: again ? new Date(next).toISOString() : null, updatedAt: at };
  await transaction(ctx.db, async (tx) => {
    await store.updateDelivery(tx, orgId, d.id, set);
    if (again) await ctx.jobs.enqueue(DELIVERY_JOB, { orgId, deliveryId: d.id }, { db: tx, orgId, runAt: new Date(next), maxAttempts: 3 });
  });
  ctx.log.info({ deliveryId: d.id, channelId: ch.id, attempts, retry: again, statusCode: out.statusCode }, 'a notification delivery failed');
  return { ...d, ...set };
}

/** The jobs system's handler of DELIVERY_JOB. */
export function registerDeliveryJob(ctx: AppContext): void {
  ctx.jobs.register<{ orgId: string; deliveryId: string }>(DELIVERY_JOB, async (p) => {
    await attemptDelivery(ctx, p.orgId, p.deliveryId);
  }, { maxAttempts: 3, backoffMs: 5000 });
}
