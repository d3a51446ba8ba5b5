import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/client.js';
import { createProject, createTeam, type TestOrg } from '../support/factories.js';
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
