import { randomString } from '../../../src/lib/ids.js';
import { addDomain } from '../../../src/modules/projects/domains.service.js';
import { createRule } from '../../../src/modules/projects/route-rules.service.js';
import { findProject } from '../../../src/modules/projects/projects.store.js';
import { actorOf, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import type { Fixture, MatrixRow } from '../matrix.js';

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
  /** A custom domain of a project of org A (or B), named by the path parameter `domain`. */
  projectDomain: {
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server, owner, { name: `mx-dom-${randomString(6)}` });
      const row = (await findProject(world.server.ctx.db, owner.orgId, p.id))!;
      const d = await addDomain(world.server.ctx, actorOf(owner), row, { domain: `mx-${randomString(10)}.example.com` });
      return { params: { id: p.id, domain: d.domain }, grantKeys: [{ type: 'project', id: p.id }] };
    },
  },
};

const P = 'project';

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/projects', note: 'restricted members get only what they can read' },
  { method: 'POST', path: '/api/projects', body: () => ({ name: `mx-${randomString(6)}` }) },
  { method: 'GET', path: '/api/projects/home' },
  { method: 'POST', path: '/api/projects/ensure', body: () => ({ name: `mx-${randomString(6)}` }) },
  { method: 'GET', path: '/api/projects/:id', fixture: P },
  { method: 'PATCH', path: '/api/projects/:id', fixture: P, body: { framework: 'vite' } },
  { method: 'DELETE', path: '/api/projects/:id', fixture: P, fresh: true },
  { method: 'GET', path: '/api/projects/:id/info', fixture: P },
  { method: 'GET', path: '/api/projects/:id/deletion-preview', fixture: P },
  { method: 'GET', path: '/api/projects/:id/environments', fixture: P },
  { method: 'POST', path: '/api/projects/:id/environments', fixture: P, body: () => ({ name: `mx-${randomString(6)}` }) },
  { method: 'POST', path: '/api/projects/:id/options', fixture: P, body: { buildCommand: 'npm run build' } },
  { method: 'POST', path: '/api/projects/:id/enable', fixture: P },
  { method: 'POST', path: '/api/projects/:id/disable', fixture: P },
  { method: 'POST', path: '/api/projects/:id/routing/retry', fixture: P },
  { method: 'GET', path: '/api/projects/:id/env', fixture: P },
  { method: 'PATCH', path: '/api/projects/:id/env', fixture: P, body: { upserts: [{ key: 'MX', value: '1', isSecret: false }] } },
  { method: 'GET', path: '/api/projects/:id/clone-token', fixture: P },
  { method: 'PATCH', path: '/api/projects/:id/clone-token', fixture: P, body: { token: 'mx-token' } },
  { method: 'GET', path: '/api/projects/:id/git', fixture: P },
  { method: 'POST', path: '/api/projects/:id/git/link', fixture: P, body: { owner: 'acme', repo: 'web', branch: 'main' } },
  { method: 'GET', path: '/api/projects/:id/branches', fixture: P, note: '400 without a provider or a linked repository' },
  { method: 'GET', path: '/api/projects/:id/commit-status', fixture: P },
  { method: 'POST', path: '/api/projects/:id/auto-deploy', fixture: P, body: { enabled: false } },
  { method: 'POST', path: '/api/projects/:id/webhook-domain', fixture: P, body: { domain: 'hooks.example.com' } },
  { method: 'POST', path: '/api/projects/:id/branch', fixture: P, body: { branch: 'main' } },
  { method: 'GET', path: '/api/projects/:id/resources', fixture: P },
  { method: 'PATCH', path: '/api/projects/:id/resources', fixture: P, body: { port: 3001 } },
  { method: 'POST', path: '/api/projects/:id/resources', fixture: P, body: { port: 3002 } },
  { method: 'POST', path: '/api/projects/:id/sleep-mode', fixture: P, body: { sleepMode: 'auto_sleep' } },
  { method: 'GET', path: '/api/projects/:id/deployments', fixture: P, note: 'project:deployment:list' },
  { method: 'POST', path: '/api/projects/:id/connect', fixture: P, body: { domain: 'mx-connect.example.com' } },
  { method: 'GET', path: '/api/projects/:id/domains', fixture: P },
  { method: 'POST', path: '/api/projects/:id/domains', fixture: P, body: () => ({ domain: `mx-${randomString(10)}.example.com` }) },
  { method: 'DELETE', path: '/api/projects/:id/domains/:domain', fixture: 'projectDomain', idParam: 'id', fresh: true },
  { method: 'POST', path: '/api/projects/:id/domains/:domain/verify', fixture: 'projectDomain', idParam: 'id', note: 'already verified on an instance without verification: 200' },
  { method: 'GET', path: '/api/projects/:id/route-rules', fixture: P },
  { method: 'POST', path: '/api/projects/:id/route-rules', fixture: P, body: { kind: 'rate-limit', limit: 5, windowSeconds: 60 } },
  { method: 'PATCH', path: '/api/projects/:id/route-rules/:ruleId', fixture: 'routeRule', idParam: 'id', body: { limit: 7 } },
  { method: 'DELETE', path: '/api/projects/:id/route-rules/:ruleId', fixture: 'routeRule', idParam: 'id', fresh: true },
];
