import { randomString } from '../../../src/lib/ids.js';
import { createChannel } from '../../../src/modules/notifications/channels.service.js';
import { actorOf } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import type { Fixture, MatrixRow } from '../matrix.js';

/** Notification channels: the org's owners and admins only (`gate: 'admin'`); no grant opens them. */

const target = 'http://127.0.0.1:9/matrix';

export const fixtures: Record<string, Fixture> = {
  notificationChannel: {
    missingId: 'ntc_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const ch = await createChannel(world.server.ctx, actorOf(owner), { name: `mx-${randomString(4)}`, kind: 'webhook', url: target, events: ['deployment.failed'] });
      return { params: { id: ch.id } };
    },
  },
};

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/notification-channels' },
  { method: 'POST', path: '/api/notification-channels', body: () => ({ name: `mx-${randomString(4)}`, kind: 'slack', url: target, events: ['backup.failed'] }) },
  { method: 'GET', path: '/api/notification-channels/:id', fixture: 'notificationChannel' },
  { method: 'PATCH', path: '/api/notification-channels/:id', fixture: 'notificationChannel', body: { name: 'mx-renamed' } },
  { method: 'DELETE', path: '/api/notification-channels/:id', fixture: 'notificationChannel', fresh: true },
  { method: 'POST', path: '/api/notification-channels/:id/test', fixture: 'notificationChannel', note: 'the send fails (nothing listens on port 9): still 200 with the failed delivery' },
  { method: 'GET', path: '/api/notification-channels/:id/deliveries', fixture: 'notificationChannel' },
];
