import assert from 'node:assert/strict';
import { cpSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

const FIX = path.resolve(import.meta.dirname, '../fixtures/detect');

let server: TestServer;
let team: TestOrg;
let other: TestUser;
let roots: string;
let rootA: string;
let rootB: string;
let outside: string;

before(async () => {
  roots = realpathSync(tempDir('berth-local-'));
  rootA = path.join(roots, 'a');
  rootB = path.join(roots, 'b');
  outside = path.join(roots, 'outside');
  for (const d of [rootA, rootB, outside]) mkdirSync(d);
  cpSync(path.join(FIX, 'next'), path.join(rootA, 'shop'), { recursive: true });
  cpSync(path.join(FIX, 'django'), path.join(rootB, 'blog'), { recursive: true });
  cpSync(path.join(FIX, 'express'), path.join(outside, 'secret-app'), { recursive: true });
  symlinkSync(path.join(outside, 'secret-app'), path.join(rootA, 'sneaky'));
  symlinkSync(path.join(rootB, 'blog'), path.join(rootA, 'blog-link'));
  writeFileSync(path.join(rootA, 'file.txt'), 'not a folder');
  server = await startTestServer({ env: { BERTH_LOCAL_ROOTS: `${rootA}:${rootB}` } });
  team = await createTeam(server);
  other = await createUser(server);
});
after(async () => {
  await server.close();
  rmSync(roots, { recursive: true, force: true });
});

describe('local folders: scan, import, list', () => {
  it('scan reads a folder inside BERTH_LOCAL_ROOTS and answers the detected build', async () => {
    const res = await server.api(team.member.token).post('/api/projects/scan', { path: path.join(rootA, 'shop') });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.framework, 'next');
    assert.equal(res.body.data.runtime, 'node');
    assert.equal(res.body.data.path, path.join(rootA, 'shop'));
    const b = await server.api(team.member.token).post('/api/projects/scan', { path: path.join(rootB, 'blog') });
    assert.equal(b.body.data.framework, 'django');
  });

  it('a path outside the roots, or a symlink leading out, is refused with a 400 naming path', async () => {
    for (const p of [outside, path.join(outside, 'secret-app'), path.join(rootA, 'sneaky'), path.join(rootA, '..', 'outside'), '/etc', '/', 'shop/../../outside']) {
      const res = await server.api(team.member.token).post('/api/projects/scan', { path: p });
      assert.equal(res.status, 400, `${p}: ${res.text}`);
      assert.equal(res.body.error.field, 'path');
      assert.match(res.body.error.message, /outside|does not exist/);
    }
    const missing = await server.api(team.member.token).post('/api/projects/scan', { path: path.join(rootA, 'nope') });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /does not exist/);
    const file = await server.api(team.member.token).post('/api/projects/scan', { path: path.join(rootA, 'file.txt') });
    assert.equal(file.status, 400);
    assert.match(file.body.error.message, /not a folder/);
    const empty = await server.api(team.member.token).post('/api/projects/scan', {});
    assert.equal(empty.status, 400);
    assert.equal(empty.body.error.field, 'path');
  });

  it('a symlink that stays inside the roots resolves to its real path', async () => {
    const res = await server.api(team.member.token).post('/api/projects/scan', { path: path.join(rootA, 'blog-link') });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.path, path.join(rootB, 'blog'));
    const rel = await server.api(team.member.token).post('/api/projects/scan', { path: 'shop' });
    assert.equal(rel.status, 200, 'relative paths are taken from the first root');
    assert.equal(rel.body.data.path, path.join(rootA, 'shop'));
  });

  it('import creates a project with source type local and the detected config; local lists it', async () => {
    const res = await server.api(team.member.token).post('/api/projects/import', { path: path.join(rootA, 'shop') });
    assert.equal(res.status, 201, res.text);
    const p = res.body.data;
    assert.equal(p.name, 'shop');
    assert.equal(p.source.type, 'local');
    assert.equal(p.source.localPath, path.join(rootA, 'shop'));
    assert.equal(p.config.framework, 'next');
    assert.equal(p.config.buildCommand, 'npm run build');
    const named = await server.api(team.member.token).post('/api/projects/import', { path: path.join(rootB, 'blog'), name: 'My blog' });
    assert.equal(named.status, 201, named.text);
    assert.equal(named.body.data.name, 'My blog');
    const dupe = await server.api(team.member.token).post('/api/projects/import', { path: path.join(rootA, 'blog-link') });
    assert.equal(dupe.status, 409);
    assert.equal(dupe.body.error.field, 'path');
    const plain = await server.api(team.member.token).post('/api/projects', { name: 'not-local' });
    assert.equal(plain.status, 201);

    const list = await server.api(team.member.token).get('/api/projects/local');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((x: any) => x.name).sort(), ['My blog', 'shop']);
    assert.ok(list.body.data.every((x: any) => x.source.type === 'local'));
    // Other orgs and restricted members without grants see none of them.
    assert.deepEqual((await server.api(other.token).get('/api/projects/local')).body.data, []);
    assert.deepEqual((await server.api(team.restricted.token).get('/api/projects/local')).body.data, []);
  });

  it('import and scan need project:write; import outside the roots is refused and creates nothing', async () => {
    const r = await server.api(team.restricted.token).post('/api/projects/import', { path: path.join(rootA, 'shop') });
    assert.equal(r.status, 403);
    const s = await server.api(team.restricted.token).post('/api/projects/scan', { path: path.join(rootA, 'shop') });
    assert.equal(s.status, 403);
    const before = (await server.api(team.member.token).get('/api/projects')).body.data.length;
    const out = await server.api(team.member.token).post('/api/projects/import', { path: path.join(rootA, 'sneaky') });
    assert.equal(out.status, 400);
    assert.equal(out.body.error.field, 'path');
    assert.equal((await server.api(team.member.token).get('/api/projects')).body.data.length, before);
  });

  it('the local routes and the relay are self-hosted only (404 on a cloud instance)', async () => {
    const cloud = await startTestServer({ flags: { mode: 'cloud' }, env: { BERTH_LOCAL_ROOTS: rootA } });
    try {
      const u = await createUser(cloud);
      const api = cloud.api(u.token);
      assert.equal((await api.get('/api/projects/local')).status, 404);
      assert.equal((await api.post('/api/projects/scan', { path: path.join(rootA, 'shop') })).status, 404);
      assert.equal((await api.post('/api/projects/import', { path: path.join(rootA, 'shop') })).status, 404);
      const relay = await api.post('/api/projects/folder/upload/upl_x', Buffer.from('x'), { 'content-type': 'application/gzip' });
      assert.equal(relay.status, 404);
    } finally {
      await cloud.close();
    }
  });
});
