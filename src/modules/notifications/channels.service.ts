import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { clockIso } from '../../lib/clock.js';
import { encryptSecret } from '../../lib/crypto.js';
import { invalid } from '../../lib/errors.js';
import { newId, newSecretToken } from '../../lib/ids.js';
import { OutboundRefusedError, outboundPolicy } from '../../lib/outbound.js';
import { insertAuditEvent } from '../audit/index.js';
import { attemptDelivery, newDelivery, secretAad, urlAad, type NotifyCtx } from './delivery.js';
import type { ChannelKind, NotificationEvent, Notice } from './events.js';
import { channelView, deliveryView, maskUrl } from './notifications.presenters.js';
import * as store from './notifications.store.js';
import type { ChannelRow } from './notifications.store.js';

/**
 * Notification channels of an org (contract section 20): their fields checked (a URL obeys the
 * outbound rules of contract section 17, an email channel needs BERTH_SMTP_URL), their URL and a
 * webhook's signing secret sealed, every change audited, and a test send.
 */

export interface ChannelBody {
  name?: string;
  kind?: ChannelKind;
  url?: string;
  to?: string;
  events?: NotificationEvent[];
}

const EMAIL_RE = /^[^\s@<>(),;:"]+@[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i;

async function audit(ctx: NotifyCtx, actor: Actor, action: string, id: string, details: Record<string, unknown>): Promise<void> {
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action, resourceType: 'notification_channel', resourceId: id, details }).catch((e) =>
    ctx.log.warn({ err: (e as Error).message, action }, 'audit event not recorded'),
  );
}

/** An http(s) URL whose host is not (and does not resolve to) an internal address, unless BERTH_OUTBOUND_ALLOW lists it: else 400 naming `url`. */
async function checkUrl(ctx: Pick<AppContext, 'config'>, raw: string): Promise<void> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid('url', 'url must be an http(s) URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid('url', 'url must be an http(s) URL');
  if (u.username || u.password) throw invalid('url', 'url must not contain credentials');
  try {
    await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(u.hostname);
  } catch (e) {
    if (!(e instanceof OutboundRefusedError)) throw e;
    if (e.reason === 'unresolvable') throw invalid('url', `url: the host ${e.host} does not resolve`);
    if (e.reason === 'invalid') throw invalid('url', 'url must name one host reachable over TCP');
    throw invalid('url', `url points to a ${e.detail ?? 'internal'} address (or to a name that resolves to one); Berth does not connect to loopback, private, link-local or metadata addresses unless BERTH_OUTBOUND_ALLOW lists them`);
  }
}

async function checkFields(ctx: Pick<AppContext, 'config'>, kind: string, b: ChannelBody, creating: boolean): Promise<void> {
  if (kind === 'email') {
    if (b.url !== undefined) throw invalid('url', 'url is for webhook, slack and discord channels; an email channel takes to');
    if (creating && !b.to) throw invalid('to', 'to is required for an email channel');
    if (b.to !== undefined && !EMAIL_RE.test(b.to)) throw invalid('to', 'to must be one email address');
    if (!ctx.config.smtpUrl) throw invalid('kind', 'email channels need a mail server: this server has no BERTH_SMTP_URL');
    return;
  }
  if (b.to !== undefined) throw invalid('to', 'to is for email channels; this channel takes url');
  if (creating && !b.url) throw invalid('url', `url is required for a ${kind} channel`);
  if (b.url !== undefined) await checkUrl(ctx, b.url);
  if (b.events !== undefined && new Set(b.events).size !== b.events.length) throw invalid('events', 'events must not repeat an event');
}

export async function listChannels(ctx: NotifyCtx, actor: Actor) {
  return (await store.listChannels(ctx.db, actor.orgId)).map(channelView);
}

export async function createChannel(ctx: NotifyCtx, actor: Actor, body: ChannelBody & { name: string; kind: ChannelKind; events: NotificationEvent[] }) {
  await checkFields(ctx, body.kind, body, true);
  if (new Set(body.events).size !== body.events.length) throw invalid('events', 'events must not repeat an event');
  const id = newId('ntc');
  const at = clockIso(ctx.clock);
  const secret = body.kind === 'webhook' ? newSecretToken('berth_whs') : null;
  const row: ChannelRow = {
    id,
    orgId: actor.orgId,
    name: body.name,
    kind: body.kind,
    urlSealed: body.url ? encryptSecret(ctx.keyring, body.url, urlAad(id)) : null,
    urlDisplay: body.url ? maskUrl(body.url) : null,
    emailTo: body.kind === 'email' ? body.to! : null,
    secretSealed: secret ? encryptSecret(ctx.keyring, secret, secretAad(id)) : null,
    events: JSON.stringify(body.events),
    createdAt: at,
    updatedAt: at,
  };
  await store.insertChannel(ctx.db, row);
  await audit(ctx, actor, 'notification_channel.create', id, { name: row.name, kind: row.kind, events: body.events });
  return { ...channelView(row), secret };
}

export async function updateChannel(ctx: NotifyCtx, actor: Actor, row: ChannelRow, body: ChannelBody) {
  if (body.kind !== undefined && body.kind !== row.kind) throw invalid('kind', 'kind cannot change; create a new channel');
  await checkFields(ctx, row.kind, body, false);
  const set: Partial<ChannelRow> = { updatedAt: clockIso(ctx.clock) };
  if (body.name !== undefined) set.name = body.name;
  if (body.url !== undefined) {
    set.urlSealed = encryptSecret(ctx.keyring, body.url, urlAad(row.id));
    set.urlDisplay = maskUrl(body.url);
  }
  if (body.to !== undefined) set.emailTo = body.to;
  if (body.events !== undefined) set.events = JSON.stringify(body.events);
  await store.updateChannel(ctx.db, row.orgId, row.id, set);
  await audit(ctx, actor, 'notification_channel.update', row.id, { fields: Object.keys(body).filter((k) => k !== 'kind') });
  return channelView({ ...row, ...set });
}

export async function deleteChannel(ctx: NotifyCtx, actor: Actor, row: ChannelRow) {
  await store.deleteChannel(ctx.db, row.orgId, row.id);
  await audit(ctx, actor, 'notification_channel.delete', row.id, { name: row.name, kind: row.kind });
  return { id: row.id, deleted: true as const };
}

/** Sends one `test` notice now (one attempt, no retries) and answers its delivery. */
export async function testChannel(ctx: NotifyCtx, actor: Actor, row: ChannelRow) {
  const notice: Notice = {
    event: 'test',
    projectId: null,
    subject: `Test notification from Berth (${row.name})`,
    detail: `${actor.email} sent this test to the channel "${row.name}". Notifications of ${(JSON.parse(row.events) as string[]).join(', ')} will arrive here.`,
    url: null,
    at: clockIso(ctx.clock),
  };
  const d = newDelivery(ctx, row, notice);
  await store.insertDelivery(ctx.db, d);
  const after = await attemptDelivery(ctx, row.orgId, d.id, { retry: false });
  return deliveryView(after ?? d);
}

export async function listDeliveries(ctx: NotifyCtx, row: ChannelRow, limit = 50) {
  return (await store.listDeliveries(ctx.db, row.orgId, row.id, limit)).map(deliveryView);
}

export const channelOf = channelView;
