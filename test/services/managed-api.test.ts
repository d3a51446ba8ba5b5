import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';

/**
 * Managed services' API (contract section 19, issue 37 points 1 and 6): the kinds each runtime offers,
 * the record, its validation, and who may see the credentials. Whether the databases really run is
 * test/services/sandbox-run.test.ts's.
 */
let server: TestServer;
let team: TestOrg;
let stranger: TestUser;

before(async () => {
  server = await startTestServer({ env: { BERTH_APPS_DOMAIN: 'apps.test' } });
  team = await createTeam(server);
  stranger = await createUser(server);
});
after(async () => {
  await server?.close();
});

const api = (u: TestUser) => server.api(u.token);

describe('managed services: the API', () => {
  it('GET /api/services/kinds lists kinds and versions per runtime; mongodb only under docker', async () => {
    const r = await api(team.member).get('/api/services/kinds');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.runtime, server.config.runtime);
    const byRuntime = Object.fromEntries(r.body.data.runtimes.map((o: any) => [o.runtime, o]));
    assert.deepEqual(Object.keys(byRuntime).sort(), ['docker', 'process', 'sandbox']);
    const sandboxKinds = byRuntime.sandbox.kinds.map((k: any) => k.kind).sort();
    assert.deepEqual(sandboxKinds, ['mysql', 'postgres', 'redis'], 'postgresql-15, mariadb-server and redis-server are installed here');
    assert.ok(byRuntime.sandbox.kinds.find((k: any) => k.kind === 'postgres').versions.includes('15'));
    assert.equal(byRuntime.sandbox.kinds.find((k: any) => k.kind === 'mysql').engine, 'MariaDB');
    assert.match(byRuntime.sandbox.unavailable.find((u: any) => u.kind === 'mongodb').reason, /docker/);
    // The docker runtime: each kind in the one version its image runs (the official images unless BERTH_IMAGE_<KIND> says).
    assert.deepEqual(
      byRuntime.docker.kinds.map((k: any) => [k.kind, k.versions, k.image]),
      [['postgres', ['15'], 'postgres:15'], ['mysql', ['11.4'], 'mariadb:11.4'], ['redis', ['7'], 'redis:7'], ['mongodb', ['7'], 'mongo:7']],
    );
    assert.equal((await server.api().get('/api/services/kinds')).status, 401);
  });

  it('creates a managed postgres: the record of contract 19, credentials sealed and never in responses', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main-db', resources: { memoryMb: 256 } });
    assert.equal(r.status, 201, r.text);
    const s = r.body.data;
    assert.deepEqual(Object.keys(s).sort(), ['createdAt', 'environment', 'id', 'internalHost', 'kind', 'managed', 'name', 'port', 'resources', 'seedFrom', 'status', 'version']);
    assert.deepEqual([s.environment, s.seedFrom], ['production', null], "production's, previews get empty instances");
    assert.equal(s.kind, 'postgres');
    assert.equal(s.version, '15');
    assert.equal(s.managed, true);
    assert.equal(s.port, 5432);
    assert.deepEqual(s.resources, { cpuCores: 0.5, memoryMb: 256, diskMb: 1024 });
    assert.ok(['starting', 'running'].includes(s.status), s.status);
    const row = await server.ctx.db.selectFrom('managedServices').selectAll().where('id', '=', s.id).executeTakeFirstOrThrow();
    assert.doesNotMatch(row.credentials, /password/, 'credentials are sealed at rest');
    const reveal = await api(team.owner).get(`/api/projects/${p.id}/services/${s.id}/credentials`);
    assert.equal(reveal.status, 200, reveal.text);
    assert.equal(reveal.body.data.username, 'app');
    assert.equal(reveal.body.data.database, 'main_db');
    const password = reveal.body.data.password as string;
    assert.ok(password.length >= 32);
    for (const res of [r, await api(team.member).get(`/api/projects/${p.id}/services`), await api(team.member).get(`/api/projects/${p.id}/services/${s.id}`)]) {
      assert.ok(!res.text.includes(password), 'the password is in no response but the reveal');
    }
    const list = await api(team.member).get(`/api/projects/${p.id}/services`);
    assert.deepEqual(list.body.data.map((x: any) => [x.name, x.managed]), [['data', false], ['main-db', true]]);
    const audit = await server.ctx.db.selectFrom('auditEvents').selectAll().where('orgId', '=', team.orgId).execute();
    assert.ok(audit.some((a) => a.action === 'project.service.credentials_reveal'));
    assert.ok(!JSON.stringify(audit).includes(password), 'nor in the audit log');
  });

  it('refuses what the runtime does not offer, naming the field', async () => {
    const p = await createProject(server, team.owner);
    const post = (body: object) => api(team.member).post(`/api/projects/${p.id}/services`, body);
    const mongo = await post({ kind: 'mongodb', name: 'docs' });
    assertError(mongo, 400, 'VALIDATION_FAILED', 'kind');
    assert.match(mongo.body.error.message, /docker/);
    assertError(await post({ kind: 'postgres', name: 'db', version: '9.6' }), 400, 'VALIDATION_FAILED', 'version');
    assertError(await post({ kind: 'oracle', name: 'db' }), 400, 'VALIDATION_FAILED', 'kind');
    assertError(await post({ kind: 'redis', name: 'Bad Name' }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await post({ kind: 'redis', name: 'cache', resources: { memoryMb: 1 } }), 400, 'VALIDATION_FAILED', 'resources.memoryMb');
    assertError(await post({ kind: 'redis', name: 'data' }), 409, 'CONFLICT', 'name');
    assertError(await post({ kind: 'redis', name: 'cache', connectionUrl: 'postgres://u:p@db.example.com/x' }), 400, 'VALIDATION_FAILED', 'kind');
  });

  it('stops, starts, resizes and deletes; another project, org or a member without admin cannot', async () => {
    const p = await createProject(server, team.owner);
    const s = (await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' })).body.data;
    const base = `/api/projects/${p.id}/services/${s.id}`;
    const stopped = await api(team.member).patch(base, { stopped: true });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.data.status, 'stopped');
    const resized = await api(team.member).patch(base, { resources: { memoryMb: 256, cpuCores: 1 } });
    assert.deepEqual(resized.body.data.resources, { cpuCores: 1, memoryMb: 256, diskMb: 1024 });
    assert.equal(resized.body.data.status, 'stopped', 'a stopped service stays stopped when resized');
    assertError(await api(team.member).patch(base, { resources: { diskMb: 512 } }), 400, 'VALIDATION_FAILED', 'resources.diskMb');
    assertError(await api(team.member).patch(base, {}), 400, 'VALIDATION_FAILED');
    // Another project of the same org, another org: 404.
    const other = await createProject(server, team.owner);
    assertError(await api(team.member).get(`/api/projects/${other.id}/services/${s.id}`), 404, 'NOT_FOUND');
    assertError(await api(stranger).get(base), 404, 'NOT_FOUND');
    assertError(await api(stranger).delete(base), 404, 'NOT_FOUND');
    // Deleting and revealing need admin on the project.
    assertError(await api(team.member).get(`${base}/credentials`), 403, 'FORBIDDEN');
    assertError(await api(team.member).delete(base), 403, 'FORBIDDEN');
    const del = await api(team.owner).delete(`${base}?keepVolume=true`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.data, { id: s.id, deleted: true, keptVolume: true });
    assertError(await api(team.owner).get(base), 404, 'NOT_FOUND');
  });

  it("a project's deletion takes its managed services with it", async () => {
    const p = await createProject(server, team.owner);
    await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache', resources: { memoryMb: 64 } });
    const preview = await api(team.owner).get(`/api/projects/${p.id}/deletion-preview`);
    assert.deepEqual(preview.body.data.managedServices, { count: 1, names: ['cache'] });
    assert.equal((await api(team.owner).delete(`/api/projects/${p.id}`)).status, 200);
    const rows = await server.ctx.db.selectFrom('managedServices').selectAll().where('projectId', '=', p.id).execute();
    assert.equal(rows.length, 0);
  });
});
