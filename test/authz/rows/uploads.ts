import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { randomString } from '../../../src/lib/ids.js';
import { authenticateUpload, createSession, receiveUpload } from '../../../src/modules/uploads/index.js';
import { actorOf, createProject } from '../../support/factories.js';
import { ownerFor } from '../fixtures.js';
import { PRINCIPALS, type Fixture, type MatrixRow, type PrincipalName } from '../matrix.js';

/** A one-file gzipped tarball. */
function tinyTgz(): Buffer {
  const data = Buffer.from('<h1>hello</h1>\n');
  const h = Buffer.alloc(512);
  new Header({ path: 'index.html', type: 'File', size: data.length, mode: 0o644, mtime: new Date(0) } as never).encode(h, 0);
  return gzipSync(Buffer.concat([h, data, Buffer.alloc(512 - data.length), Buffer.alloc(1024)]));
}

export const fixtures: Record<string, Fixture> = {
  /** An upload session of org A (or B) opened for a project, with a tiny upload received. */
  uploadSession: {
    missingId: 'upl_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const actor = actorOf(owner);
      const ctx = world.server.ctx;
      const p = await createProject(world.server, owner, { name: `mx-upl-${randomString(6)}` });
      const s = await createSession(ctx, actor, { projectId: p.id });
      const row = await authenticateUpload(ctx, s.sessionId, s.headers['x-berth-upload-token']);
      await receiveUpload(ctx, row, [tinyTgz()]);
      return { params: { sessionId: s.sessionId }, grantKeys: [{ type: 'project', id: p.id }] };
    },
  },
};

/** Every principal: the relay's credential is the session's upload token header, never a bearer. */
const ALL_401 = Object.fromEntries(PRINCIPALS.map((p) => [p, 401])) as Record<PrincipalName, number>;

export const rows: MatrixRow[] = [
  { method: 'POST', path: '/api/projects/folder/session', body: {}, expect: { owner: 201, admin: 201, member: 201 }, note: 'naming projectId needs project:write on it (service check)' },
  {
    method: 'POST',
    path: '/api/projects/folder/upload/:sessionId',
    fixture: 'uploadSession',
    allow: [],
    expect: ALL_401,
    otherOrg: 401,
    missing: 401,
    note: 'access public + upload token (x-berth-upload-token, constant-time): no bearer of any principal opens the relay; the relay tests cover the token',
  },
  { method: 'POST', path: '/api/projects/folder/scan/:sessionId', fixture: 'uploadSession' },
  { method: 'GET', path: '/api/projects/local', note: 'restricted members get only what they can read' },
  { method: 'POST', path: '/api/projects/scan', body: { path: '/' }, note: '400: outside BERTH_LOCAL_ROOTS' },
  { method: 'POST', path: '/api/projects/import', body: { path: '/' }, note: '400: outside BERTH_LOCAL_ROOTS' },
];
