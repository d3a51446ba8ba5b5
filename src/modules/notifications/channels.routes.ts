import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import * as svc from './channels.service.js';
import { Channel, ChannelKind, CreatedChannel, Deleted, Delivery, EventName } from './notifications.presenters.js';

/**
 * Routes of notification channels (`/api/notification-channels`, contract section 20): the org's
 * owners and admins only (`gate: 'admin'`).
 */

const fields = {
  url: Type.Optional(Str({ min: 1, max: 2048, description: 'webhook, slack, discord: where to POST' })),
  to: Type.Optional(Str({ min: 3, max: 254, description: 'email: the recipient' })),
};
const Events = Type.Array(EventName, { minItems: 1, maxItems: 20 });
const ChannelCreate = Obj({ name: Str({ min: 1, max: 100 }), kind: ChannelKind, ...fields, events: Events });
const ChannelPatch = Obj({ name: Type.Optional(Str({ min: 1, max: 100 })), kind: Type.Optional(ChannelKind), ...fields, events: Type.Optional(Events) });
const Params = Obj({ id: Id });
const resource = { kind: 'notification_channel', param: 'id' } as const;

export const channelRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/notification-channels',
    summary: "List the org's notification channels (URLs masked, no secrets)",
    tag: 'notification_channel:read',
    gate: 'admin',
    schema: { response: Type.Array(Channel) },
    handler: ({ actor }, ctx) => svc.listChannels(ctx, actor),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/notification-channels',
    summary: 'Create a notification channel (a webhook channel answers its signing secret this once)',
    tag: 'notification_channel:write',
    gate: 'admin',
    status: 201,
    schema: { body: ChannelCreate, response: CreatedChannel },
    handler: ({ actor, body }, ctx) => svc.createChannel(ctx, actor, body),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/notification-channels/:id',
    summary: 'Get one notification channel',
    tag: 'notification_channel:read',
    gate: 'admin',
    resource,
    schema: { params: Params, response: Channel },
    handler: ({ resource }) => svc.channelOf(resource.record),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/notification-channels/:id',
    summary: 'Update a notification channel (its name, url or to, events)',
    tag: 'notification_channel:write',
    gate: 'admin',
    resource,
    schema: { params: Params, body: ChannelPatch, response: Channel },
    handler: ({ actor, resource, body }, ctx) => svc.updateChannel(ctx, actor, resource.record, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/notification-channels/:id',
    summary: 'Delete a notification channel and its deliveries',
    tag: 'notification_channel:admin',
    gate: 'admin',
    resource,
    schema: { params: Params, response: Deleted },
    handler: ({ actor, resource }, ctx) => svc.deleteChannel(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/notification-channels/:id/test',
    summary: 'Send one test notification now and answer its delivery',
    tag: 'notification_channel:write',
    gate: 'admin',
    resource,
    schema: { params: Params, response: Delivery },
    handler: ({ actor, resource }, ctx) => svc.testChannel(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/notification-channels/:id/deliveries',
    summary: "A channel's deliveries, newest first: status, attempts, last error (no bodies)",
    tag: 'notification_channel:read',
    gate: 'admin',
    resource,
    schema: { params: Params, querystring: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })) }), response: Type.Array(Delivery) },
    handler: ({ resource, query }, ctx) => svc.listDeliveries(ctx, resource.record, query.limit),
  }),
];
