import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../http/schemas.js';
import { CHANNEL_KINDS, NOTIFICATION_EVENTS } from './events.js';
import type { ChannelRow, DeliveryRow } from './notifications.store.js';

/**
 * Channels and deliveries as the API shows them. A channel's URL is shown masked (scheme, host and
 * port); a webhook's signing secret only once, in the answer to its creation.
 */

const Time = Type.String({ description: 'ISO-8601 timestamp' });
export const EventName = Type.Union(NOTIFICATION_EVENTS.map((e) => Type.Literal(e)));
export const ChannelKind = Type.Union(CHANNEL_KINDS.map((k) => Type.Literal(k)));

export const Channel = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    kind: ChannelKind,
    url: Nullable(Type.String({ description: 'The target with its path masked (the full URL is never shown again)' })),
    to: Nullable(Type.String()),
    events: Type.Array(EventName),
    signed: Type.Boolean({ description: 'Bodies carry X-Berth-Signature (webhook channels)' }),
    createdAt: Time,
    updatedAt: Time,
  },
  { title: 'NotificationChannel' },
);
export type ChannelView = Static<typeof Channel>;

export const CreatedChannel = Type.Object(
  { ...Channel.properties, secret: Nullable(Type.String({ description: 'The webhook signing secret: shown this once, never again' })) },
  { title: 'CreatedNotificationChannel' },
);

export const Delivery = Type.Object(
  {
    id: Type.String(),
    channelId: Type.String(),
    event: Type.String(),
    subject: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    attempts: Type.Integer(),
    lastError: Nullable(Type.String()),
    lastStatusCode: Nullable(Type.Integer()),
    nextAttemptAt: Nullable(Time),
    deliveredAt: Nullable(Time),
    createdAt: Time,
    updatedAt: Time,
  },
  { title: 'NotificationDelivery' },
);
export type DeliveryView = Static<typeof Delivery>;

export const Deleted = Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { title: 'NotificationChannelDeleted' });

export function channelView(row: ChannelRow): ChannelView {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind as ChannelView['kind'],
    url: row.urlDisplay,
    to: row.emailTo,
    events: JSON.parse(row.events) as ChannelView['events'],
    signed: !!row.secretSealed,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function deliveryView(row: DeliveryRow): DeliveryView {
  let subject = '';
  try {
    subject = String((JSON.parse(row.payload) as { subject?: string }).subject ?? '');
  } catch {
    /* an unreadable payload shows no subject */
  }
  return {
    id: row.id,
    channelId: row.channelId,
    event: row.event,
    subject,
    status: row.status as DeliveryView['status'],
    attempts: row.attempts,
    lastError: row.lastError,
    lastStatusCode: row.lastStatusCode,
    nextAttemptAt: row.nextAttemptAt,
    deliveredAt: row.deliveredAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** `https://hooks.slack.com/…`: scheme, host and port of a URL; its path and query may hold a token. */
export function maskUrl(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname === '/' && !u.search ? '/' : '/…'}`;
}
