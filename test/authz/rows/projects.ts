import { randomString } from '../../../src/lib/ids.js';
import { createRule } from '../../../src/modules/projects/route-rules.service.js';
import { findProject } from '../../../src/modules/projects/projects.store.js';
import { actorOf, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import { ANY_MEMBER, byGrant, type Fixture, type MatrixRow, type PrincipalName } from '../matrix.js';

/** Org-level project:write (create, ensure): owner, admin, member; restricted members hold no `*` grant here. */
const WRITERS: PrincipalName[] = ['owner', 'admin', 'member'];

export const fixtures: Record<string, Fixture> = {
  /** A rate-limit route rule of a project of org A (or B). */
  routeRule: {
    missingId: 'rr_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server, owner, { name: `mx-rr-${randomString(6)}` });
      const row = (await findProject(world.server.ctx.db, owner.orgId, p.id))!;
      const rule = await createRule(world.server.ctx, actorOf(owner), row, { kind: 'rate-limit', limit: 10, windowSeconds: 60 });
      return { params: { id: p.id, ruleId: rule.id }, grantKeys: [{ type: 'project', id: p.id }] };
    },
  },
};

const P = 'project';
const read = byGrant('read');
const write = byGrant('write');

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/projects', allow: ANY_MEMBER, note: 'restricted members get only what they can read' },
  { method: 'POST', path: '/api/projects', body: () => ({ name: `mx-${randomString(6)}` }), allow: WRITERS },
  { method: 'GET', path: '/api/projects/home', allow: ANY_MEMBER },
  { method: 'POST', path: '/api/projects/ensure', body: () => ({ name: `mx-${randomString(6)}` }), allow: WRITERS },
  { method: 'GET', path: '/api/projects/:id', fixture: P, allow: read },
  { method: 'PATCH', path: '/api/projects/:id', fixture: P, body: { framework: 'vite' }, allow: write },
  { method: 'DELETE', path: '/api/projects/:id', fixture: P, fresh: true, allow: byGrant('admin') },
  { method: 'GET', path: '/api/projects/:id/info', fixture: P, allow: read },
  { method: 'GET', path: '/api/projects/:id/deletion-preview', fixture: P, allow: read },
  { method: 'GET', path: '/api/projects/:id/environments', fixture: P, allow: read },
  { method: 'POST', path: '/api/projects/:id/environments', fixture: P, body: () => ({ name: `mx-${randomString(6)}` }), allow: write },
  { method: 'POST', path: '/api/projects/:id/options', fixture: P, body: { buildCommand: 'npm run build' }, allow: write },
  { method: 'POST', path: '/api/projects/:id/enable', fixture: P, allow: write },
  { method: 'POST', path: '/api/projects/:id/disable', fixture: P, allow: write },
  { method: 'POST', path: '/api/projects/:id/routing/retry', fixture: P, allow: write },
  { method: 'GET', path: '/api/projects/:id/env', fixture: P, allow: read },
  { method: 'PATCH', path: '/api/projects/:id/env', fixture: P, body: { upserts: [{ key: 'MX', value: '1', isSecret: false }] }, allow: write },
  { method: 'GET', path: '/api/projects/:id/clone-token', fixture: P, allow: read },
  { method: 'PATCH', path: '/api/projects/:id/clone-token', fixture: P, body: { token: 'mx-token' }, allow: byGrant('admin') },
  { method: 'GET', path: '/api/projects/:id/git', fixture: P, allow: read },
  { method: 'POST', path: '/api/projects/:id/git/link', fixture: P, body: { owner: 'acme', repo: 'web', branch: 'main' }, allow: write },
  { method: 'GET', path: '/api/projects/:id/branches', fixture: P, allow: read, note: '400 without a provider or a linked repository' },
  { method: 'GET', path: '/api/projects/:id/commit-status', fixture: P, allow: read },
  { method: 'POST', path: '/api/projects/:id/auto-deploy', fixture: P, body: { enabled: false }, allow: write },
  { method: 'POST', path: '/api/projects/:id/webhook-domain', fixture: P, body: { domain: 'hooks.example.com' }, allow: write },
  { method: 'POST', path: '/api/projects/:id/branch', fixture: P, body: { branch: 'main' }, allow: write },
  { method: 'GET', path: '/api/projects/:id/resources', fixture: P, allow: read },
  { method: 'PATCH', path: '/api/projects/:id/resources', fixture: P, body: { port: 3001 }, allow: write },
  { method: 'POST', path: '/api/projects/:id/resources', fixture: P, body: { port: 3002 }, allow: write },
  { method: 'POST', path: '/api/projects/:id/sleep-mode', fixture: P, body: { sleepMode: 'auto_sleep' }, allow: write },
  { method: 'GET', path: '/api/projects/:id/deployments', fixture: P, allow: read, note: 'project:deployment:list' },
  { method: 'GET', path: '/api/projects/:id/services', fixture: P, allow: read },
  {
    method: 'POST',
    path: '/api/projects/:id/services',
    fixture: P,
    body: () => ({ kind: 'postgres', name: `mx-${randomString(6)}`, connectionUrl: 'postgres://u:p@127.0.0.1:5432/db' }),
    allow: write,
  },
  { method: 'POST', path: '/api/projects/:id/connect', fixture: P, body: { domain: 'mx-connect.example.com' }, allow: write },
  { method: 'GET', path: '/api/projects/:id/route-rules', fixture: P, allow: read },
  { method: 'POST', path: '/api/projects/:id/route-rules', fixture: P, body: { kind: 'rate-limit', limit: 5, windowSeconds: 60 }, allow: write },
  { method: 'PATCH', path: '/api/projects/:id/route-rules/:ruleId', fixture: 'routeRule', idParam: 'id', body: { limit: 7 }, allow: write },
  { method: 'DELETE', path: '/api/projects/:id/route-rules/:ruleId', fixture: 'routeRule', idParam: 'id', fresh: true, allow: write },
];
