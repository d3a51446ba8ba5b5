import { randomString } from '../../../src/lib/ids.js';
import { createService } from '../../../src/modules/services/managed.service.js';
import { findProject } from '../../../src/modules/projects/projects.store.js';
import { actorOf, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import type { Fixture, MatrixRow } from '../matrix.js';

export const fixtures: Record<string, Fixture> = {
  /** A managed Redis of a project of org A (or B); `sid` names it. */
  managedService: {
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server, owner, { name: `mx-svc-${randomString(6)}` });
      const row = (await findProject(world.server.ctx.db, owner.orgId, p.id))!;
      const s = await createService(world.server.ctx, actorOf(owner), row, { kind: 'redis', name: 'cache' });
      return { params: { id: p.id, sid: s.id }, grantKeys: [{ type: 'project', id: p.id }] };
    },
  },
};

const P = 'project';
const S = 'managedService';

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/services/kinds' },
  { method: 'GET', path: '/api/projects/:id/services', fixture: P },
  {
    method: 'POST',
    path: '/api/projects/:id/services',
    fixture: P,
    body: () => ({ kind: 'postgres', name: `mx-${randomString(6)}`, connectionUrl: 'postgres://u:p@127.0.0.1:5432/db' }),
  },
  { method: 'GET', path: '/api/projects/:id/services/:sid', fixture: S, idParam: 'id' },
  { method: 'PATCH', path: '/api/projects/:id/services/:sid', fixture: S, idParam: 'id', body: { stopped: true } },
  { method: 'POST', path: '/api/projects/:id/services/:sid/restart', fixture: S, idParam: 'id' },
  { method: 'DELETE', path: '/api/projects/:id/services/:sid', fixture: S, idParam: 'id', fresh: true },
  { method: 'GET', path: '/api/projects/:id/services/:sid/logs', fixture: S, idParam: 'id' },
  { method: 'GET', path: '/api/projects/:id/services/:sid/logs/stream', fixture: S, idParam: 'id', query: 'follow=false' },
  { method: 'GET', path: '/api/projects/:id/services/:sid/credentials', fixture: S, idParam: 'id' },
  { method: 'POST', path: '/api/projects/:id/services/:sid/tunnel', fixture: S, idParam: 'id', note: 'without an Upgrade header: 400 naming headers.upgrade (the tunnel itself: test/cli/commands-services.test.ts)' },
];
