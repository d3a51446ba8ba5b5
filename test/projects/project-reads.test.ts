import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/client.js';
import { createProject, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

let server: TestServer;
let team: TestOrg;

before(async () => {
  server = await startTestServer();
  team = await createTeam(server);
});
after(async () => {
  await server?.close();
});

describe('write events (src/db/write-events.ts)', () => {
  it('name the table of every insert, update and delete the query builder compiles, and nothing for a select', async () => {
    const seen: string[] = [];
    const off = server.ctx.writes.on(['projects', 'domains'], (t) => seen.push(t));
    try {
      await server.ctx.db.selectFrom('projects').select('id').execute();
      assert.deepEqual(seen, []);
      await server.ctx.db.updateTable('projects').set({ updatedAt: new Date().toISOString() }).where('id', '=', 'prj_none').execute();
      await server.ctx.db.deleteFrom('domains').where('domain', '=', 'none.example').execute();
      assert.deepEqual(seen, ['projects', 'domains']);
    } finally {
      off();
    }
  });
});

describe('GET /api/projects/:id read cache', () => {
  it('a write on this server is seen by the very next read', async () => {
    const p = await createProject(server, team.owner, { name: 'before' });
    const api = server.api(team.owner.token);
    assert.equal((await api.get(`/api/projects/${p.id}`)).body.data.name, 'before');
    assert.equal((await api.patch(`/api/projects/${p.id}`, { name: 'after' })).status, 200);
    assert.equal((await api.get(`/api/projects/${p.id}`)).body.data.name, 'after');
    assert.equal((await api.post(`/api/projects/${p.id}/connect`, { domain: 'shop-reads.example' })).status, 200);
    const domains = (await api.get(`/api/projects/${p.id}`)).body.data.routes.domains.map((d: { domain: string }) => d.domain);
    assert.deepEqual(domains, ['shop-reads.example']);
  });

  it('a warm read sends the JSON kept with the cached row and routes: the same bytes as a fresh one, and a new one after any write', async () => {
    const p = await createProject(server, team.owner, { name: 'kept-json' });
    const api = server.api(team.owner.token);
    const first = await api.get(`/api/projects/${p.id}`);
    const warm = await api.get(`/api/projects/${p.id}`);
    assert.equal(first.status, 200, first.text);
    assert.equal(warm.text, first.text);
    assert.equal(warm.headers.get('content-type'), 'application/json; charset=utf-8');
    // Another member of the org reads the same row: the same answer (nothing in it is the reader's).
    assert.equal((await server.api(team.member.token).get(`/api/projects/${p.id}`)).text, first.text);
    assert.equal((await api.post(`/api/projects/${p.id}/connect`, { domain: 'kept-json.example' })).status, 200);
    const after = await api.get(`/api/projects/${p.id}`);
    assert.deepEqual(after.body.data.routes.domains.map((d: { domain: string }) => d.domain), ['kept-json.example']);
    assert.equal((await api.get(`/api/projects/${p.id}`)).text, after.text);
    // What is kept is behind the gate: a restricted member without a grant on it is 403, another org 404.
    assert.equal((await server.api(team.restricted.token).get(`/api/projects/${p.id}`)).status, 403);
    assert.equal((await server.api((await createUser(server)).token).get(`/api/projects/${p.id}`)).status, 404);
  });

  it("another instance's write is seen as soon as it commits (PostgreSQL tells every instance), and a deleted project is 404 at once here", async (t) => {
    const p = await createProject(server, team.owner, { name: 'shared' });
    const api = server.api(team.owner.token);
    assert.equal((await api.get(`/api/projects/${p.id}`)).body.data.name, 'shared');
    if (server.ctx.dialect === 'postgres') {
      // A second handle on the same database stands for another instance: nothing in this process is
      // told of its write; the database's notification on commit is (migration 024).
      const other = openDatabase({ dataDir: server.dataDir, databaseUrl: server.config.databaseUrl });
      t.after(() => other.close());
      await other.db.updateTable('projects').set({ name: 'renamed elsewhere' }).where('id', '=', p.id).execute();
      await waitFor(async () => (await api.get(`/api/projects/${p.id}`)).body.data.name === 'renamed elsewhere', "the other instance's rename", 5000);
    } else {
      t.diagnostic('SQLite: one instance per data dir, no other instance to hear from');
    }
    assert.equal((await api.delete(`/api/projects/${p.id}`)).status, 200);
    assert.equal((await api.get(`/api/projects/${p.id}`)).status, 404);
  });
});
