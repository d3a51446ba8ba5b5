import { randomString } from '../../../src/lib/ids.js';
import { createDeployment, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import { byGrant, type Fixture, type FixtureInput, type MatrixRow } from '../matrix.js';

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
};

const read = byGrant('read');
const write = byGrant('write');

export const rows: MatrixRow[] = [
  {
    method: 'POST',
    path: '/api/deployments',
    fixture: 'project',
    idParam: 'projectId',
    body: (rec) => ({ projectId: rec?.params.id ?? 'prj_missing0000000000000' }),
    allow: write,
    note: 'the project is named in the body: 400 (no source) for those allowed; the gate admits members, the service authorizes',
  },
  {
    method: 'POST',
    path: '/api/deployments/build/access',
    fixture: 'deployment',
    body: (rec) => ({ deploymentId: rec?.params.id ?? 'dpl_missing0000000000000' }),
    allow: read,
  },
  { method: 'GET', path: '/api/deployments/:id', fixture: 'deployment', allow: read },
  { method: 'POST', path: '/api/deployments/:id/cancel', fixture: 'queuedDeployment', fresh: true, allow: write },
  { method: 'GET', path: '/api/deployments/:id/logs', fixture: 'deployment', allow: read, note: 'public at the gate: a credential or a build token is checked in the handler' },
  { method: 'GET', path: '/api/deployments/:id/logs/stream', fixture: 'deployment', allow: read },
  { method: 'POST', path: '/api/projects/:id/deployment-session', fixture: 'project', allow: read, note: '409 while the project has no deployment' },
  { method: 'GET', path: '/api/projects/:id/logs', fixture: 'project', allow: read },
  { method: 'GET', path: '/api/projects/:id/logs/stream', fixture: 'project', query: 'follow=false', allow: read },
  { method: 'GET', path: '/api/projects/:id/server-logs/recent', fixture: 'project', allow: read },
  { method: 'GET', path: '/api/projects/:id/server-logs/stream-token', fixture: 'project', allow: read },
  { method: 'GET', path: '/api/projects/:id/server-logs/stream', fixture: 'project', query: 'follow=false', allow: read, note: 'also takes ?token= from stream-token' },
];
