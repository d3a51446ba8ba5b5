import { randomString } from '../../../src/lib/ids.js';
import { ensurePreviewEnvironment } from '../../../src/modules/deployments/index.js';
import { actorOf, createDeployment, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import type { Fixture, FixtureInput, MatrixRow } from '../matrix.js';

/** A deployment row of a fresh project of org A (or B), in `status`. */
async function deployment({ world, which }: FixtureInput, status: string) {
  const owner = ownerFor(world, which);
  const p = await createProject(world.server, owner, { name: `mx-dpl-${randomString(6)}` });
  const id = await createDeployment(world.server, p, { id: `dpl_${randomString(20)}`, status, finished: status !== 'queued' });
  return { params: { id }, grantKeys: [{ type: 'project' as const, id: p.id }] };
}

export const fixtures: Record<string, Fixture> = {
  /** A finished (failed) deployment: its build-log stream closes at once. */
  deployment: { missingId: 'dpl_missing0000000000000', make: (i) => deployment(i, 'failed') },
  /** A queued deployment (cancel uses it up). */
  queuedDeployment: { missingId: 'dpl_missing0000000000000', make: (i) => deployment(i, 'queued') },
  /** A preview environment `mx-preview` (no deployment) of a fresh project of org A (or B). */
  previewEnvironment: {
    missingId: 'prj_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server, owner, { name: `mx-env-${randomString(6)}` });
      await ensurePreviewEnvironment(world.server.ctx, actorOf(owner), p, { name: 'mx-preview', branch: 'feature/mx' });
      return { params: { id: p.id, env: 'mx-preview' }, grantKeys: [{ type: 'project' as const, id: p.id }] };
    },
  },
};

export const rows: MatrixRow[] = [
  {
    method: 'POST',
    path: '/api/deployments',
    fixture: 'project',
    idParam: 'projectId',
    body: (rec) => ({ projectId: rec?.params.id ?? 'prj_missing0000000000000' }),
    note: 'the project is named in the body (resource body projectId): 400 (no source) for those allowed',
  },
  {
    method: 'POST',
    path: '/api/deployments/build/access',
    fixture: 'deployment',
    body: (rec) => ({ deploymentId: rec?.params.id ?? 'dpl_missing0000000000000' }),
  },
  { method: 'GET', path: '/api/deployments/:id', fixture: 'deployment' },
  { method: 'POST', path: '/api/deployments/:id/cancel', fixture: 'queuedDeployment', fresh: true },
  { method: 'GET', path: '/api/deployments/:id/logs', fixture: 'deployment', note: "access 'stream-token': a credential or a build token, checked by the gate" },
  { method: 'GET', path: '/api/deployments/:id/logs/stream', fixture: 'deployment' },
  {
    method: 'POST',
    path: '/api/projects/:id/rollback',
    fixture: 'project',
    note: 'the body is optional: 409 (nothing to roll back to) for those allowed, the project has no release',
  },
  { method: 'DELETE', path: '/api/projects/:id/environments/:env', fixture: 'previewEnvironment', fresh: true },
  {
    method: 'POST',
    path: '/api/projects/:id/environments/:env/promote',
    fixture: 'previewEnvironment',
    note: 'the body is optional: 400 deploymentId (the preview has no ready release) for those allowed',
  },
  { method: 'POST', path: '/api/projects/:id/deployment-session', fixture: 'project', note: '409 while the project has no deployment' },
  { method: 'GET', path: '/api/projects/:id/logs', fixture: 'project' },
  { method: 'GET', path: '/api/projects/:id/logs/stream', fixture: 'project', query: 'follow=false' },
  { method: 'GET', path: '/api/projects/:id/logs/download', fixture: 'project' },
  { method: 'GET', path: '/api/projects/:id/server-logs/recent', fixture: 'project' },
  { method: 'GET', path: '/api/projects/:id/server-logs/stream-token', fixture: 'project' },
  { method: 'GET', path: '/api/projects/:id/server-logs/stream', fixture: 'project', query: 'follow=false', note: 'also takes ?token= from stream-token' },
];
