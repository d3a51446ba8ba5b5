import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RuntimePort } from '../../src/modules/projects/index.js';
import { createDeployment, createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';

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

/** A server of its own whose runtime port is `runtime` (null: no build-and-run plugged in), with a team. */
async function serverWithRuntime(t: { after(fn: () => Promise<void>): void }, runtime: RuntimePort | null): Promise<{ srv: TestServer; org: TestOrg }> {
  const srv = await startTestServer({ env: { BERTH_APPS_DOMAIN: 'apps.test' }, ports: { runtime } });
  t.after(() => srv.close());
  return { srv, org: await createTeam(srv) };
}

describe('POST /api/projects', () => {
  it('creates an enabled project with a production environment and the data volume service, without a build', async () => {
    const r = await api(team.member).post('/api/projects', {
      name: 'My Shop!',
      gitOwner: 'acme',
      gitRepo: 'shop',
      gitBranch: 'main',
      framework: 'next',
      buildCommand: 'npm run build',
      installCommand: 'npm ci',
      startCommand: 'npm start',
      outputDirectory: '.next',
      rootDirectory: 'web',
      port: 8080,
      unknownField: 'dropped',
    });
    assert.equal(r.status, 201, r.text);
    const p = r.body.data;
    assert.match(p.id, /^prj_/);
    assert.equal(p.orgId, team.orgId);
    assert.equal(p.name, 'My Shop!');
    assert.equal(p.slug, 'my-shop');
    assert.equal(p.status, 'enabled');
    assert.equal(p.location, 'local');
    assert.deepEqual(p.config, {
      framework: 'next',
      installCommand: 'npm ci',
      buildCommand: 'npm run build',
      startCommand: 'npm start',
      outputDirectory: '.next',
      rootDirectory: 'web',
      port: 8080,
      packageManager: null,
      runtime: null,
      dockerfile: null,
      httpsRedirect: null,
      hsts: false,
      healthPath: null,
      autoRollback: false,
      static: { outputDirectory: '.next', spa: null, cleanUrls: false },
    });
    assert.deepEqual(p.source, { type: 'git', gitProvider: 'github', gitOwner: 'acme', gitRepo: 'shop', gitBranch: 'main', localPath: null });
    assert.deepEqual(p.routes, { freeDomain: 'my-shop.apps.test', primaryDomain: 'my-shop.apps.test', domains: [], previewDomains: [] });
    assert.equal(p.sleepMode, 'always_on');
    assert.equal(p.autoDeploy, false);
    assert.ok(p.createdAt && p.updatedAt);
    assert.equal('unknownField' in p, false);

    const envs = await api(team.member).get(`/api/projects/${p.id}/environments`);
    assert.equal(envs.status, 200);
    assert.deepEqual(
      envs.body.data.map((e: any) => [e.name, e.type, e.branch]),
      [['production', 'production', 'main']],
    );
    const svcs = await api(team.member).get(`/api/projects/${p.id}/services`);
    assert.deepEqual(
      svcs.body.data.map((s: any) => [s.kind, s.name]),
      [['volume', 'data']],
    );
    const deps = await api(team.member).get(`/api/projects/${p.id}/deployments`);
    assert.deepEqual(deps.body.data, [], 'creating a project starts no build');
  });

  it('keeps config.healthPath and config.autoRollback (default off), and names healthPath when it is not a path', async () => {
    const c = api(team.owner);
    const p = await createProject(server, team.owner, { name: 'Checked' });
    const r = await c.patch(`/api/projects/${p.id}`, { healthPath: '/healthz', autoRollback: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.config.healthPath, '/healthz');
    assert.equal(r.body.data.config.autoRollback, true);
    assertError(await c.patch(`/api/projects/${p.id}`, { healthPath: 'healthz' }), 400, 'VALIDATION_FAILED', 'healthPath');
    assertError(await c.patch(`/api/projects/${p.id}`, { autoRollback: 'yes' }), 400, 'VALIDATION_FAILED', 'autoRollback');
    const cleared = await c.patch(`/api/projects/${p.id}`, { healthPath: '', autoRollback: null });
    assert.equal(cleared.body.data.config.healthPath, null);
    assert.equal(cleared.body.data.config.autoRollback, false);
  });

  it('gives the same name a suffixed slug, unique across the instance', async () => {
    const a = await createProject(server, team.owner, { name: 'Twin' });
    const b = await createProject(server, stranger, { name: 'Twin' });
    assert.equal(a.slug, 'twin');
    assert.equal(b.slug, 'twin-2');
    assert.equal(b.routes.freeDomain, 'twin-2.apps.test');
  });

  it('marks a folder-upload project with gitProvider "upload"', async () => {
    const p = await createProject(server, team.owner, { gitProvider: 'upload' });
    assert.equal(p.source.type, 'upload');
    const none = await createProject(server, team.owner);
    assert.equal(none.source.type, 'none');
  });

  it('answers 400 naming the field: missing or empty name, bad port, framework over 64 characters, unlinked repo half', async () => {
    const c = api(team.owner);
    assertError(await c.post('/api/projects', {}), 400, 'VALIDATION_FAILED', 'name');
    assertError(await c.post('/api/projects', { name: '' }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await c.post('/api/projects', { name: '   ' }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await c.post('/api/projects', { name: 42 }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await c.post('/api/projects', { name: 'x', port: 70000 }), 400, 'VALIDATION_FAILED', 'port');
    assertError(await c.post('/api/projects', { name: 'x', framework: 'f'.repeat(65) }), 400, 'VALIDATION_FAILED', 'framework');
    assertError(await c.post('/api/projects', { name: 'x', gitOwner: 'acme' }), 400, 'VALIDATION_FAILED', 'gitRepo');
    assertError(await c.post('/api/projects', { name: 'x', gitOwner: 'a b', gitRepo: 'r' }), 400, 'VALIDATION_FAILED', 'gitOwner');
    assertError(await c.post('/api/projects', { name: 'x', rootDirectory: '../etc' }), 400, 'VALIDATION_FAILED', 'rootDirectory');
    assertError(await c.post('/api/projects', { name: 'x', dockerfile: '/etc/Dockerfile' }), 400, 'VALIDATION_FAILED', 'dockerfile');
    const bad = await c.request('POST', '/api/projects', '{not json');
    assert.equal(bad.status, 400);
  });

  it('is 403 for a restricted member without a wildcard grant', async () => {
    assertError(await api(team.restricted).post('/api/projects', { name: 'nope' }), 403, 'FORBIDDEN');
  });
});

describe('GET /api/projects and /api/projects/home', () => {
  it('lists the org’s projects only; a restricted member sees only the ones it can read', async () => {
    const org = await createTeam(server);
    const p1 = await createProject(server, org.owner, { name: 'one' });
    const p2 = await createProject(server, org.owner, { name: 'two' });
    const all = await api(org.member).get('/api/projects');
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.data.map((p: any) => p.id).sort(), [p1.id, p2.id].sort());
    assert.equal(all.body.data.find((p: any) => p.id === p1.id).name, 'one');

    const none = await api(org.restricted).get('/api/projects');
    assert.equal(none.status, 200);
    assert.deepEqual(none.body.data, []);
    await createGrant(server, org.restricted, 'project', p2.id, ['read']);
    const some = await api(org.restricted).get('/api/projects');
    assert.deepEqual(some.body.data.map((p: any) => p.id), [p2.id]);

    const home = await api(org.restricted).get('/api/projects/home');
    assert.equal(home.status, 200);
    assert.deepEqual(home.body.data.projects.map((p: any) => p.id), [p2.id]);
    assert.equal(home.body.data.cloudUnreachable, false);

    const other = await api(stranger).get('/api/projects');
    assert.ok(!other.body.data.some((p: any) => p.id === p1.id || p.id === p2.id));
  });
});

describe('GET/PATCH/DELETE /api/projects/:id', () => {
  it('gets, updates partially, and leaves unnamed fields alone', async () => {
    const p = await createProject(server, team.owner, { name: 'patchme', buildCommand: 'make', framework: 'vite' });
    const g = await api(team.member).get(`/api/projects/${p.id}`);
    assert.equal(g.status, 200);
    assert.deepEqual(g.body.data, p);

    const u = await api(team.member).patch(`/api/projects/${p.id}`, { framework: 'astro', port: 4321 });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.config.framework, 'astro');
    assert.equal(u.body.data.config.port, 4321);
    assert.equal(u.body.data.config.buildCommand, 'make');
    assert.equal(u.body.data.name, 'patchme');
    assert.equal(u.body.data.slug, p.slug, 'renaming keeps the slug (and the free domain)');

    const cleared = await api(team.member).patch(`/api/projects/${p.id}`, { buildCommand: null, name: 'renamed' });
    assert.equal(cleared.body.data.config.buildCommand, null);
    assert.equal(cleared.body.data.name, 'renamed');
    assertError(await api(team.member).patch(`/api/projects/${p.id}`, { name: '' }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await api(team.member).patch(`/api/projects/${p.id}`, { port: 0 }), 400, 'VALIDATION_FAILED', 'port');
  });

  it('config.static: PATCH sets outputDirectory, spa and cleanUrls; null clears them; bad values are 400 naming the field', async () => {
    const p = await createProject(server, team.owner, { name: 'static-config' });
    assert.deepEqual(p.config.static, { outputDirectory: null, spa: null, cleanUrls: false });
    const set = await api(team.member).patch(`/api/projects/${p.id}`, { static: { outputDirectory: 'dist', spa: true, cleanUrls: true } });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.data.config.static, { outputDirectory: 'dist', spa: true, cleanUrls: true });
    assert.equal(set.body.data.config.outputDirectory, 'dist', 'one output directory, shown in both places');
    const partial = await api(team.member).patch(`/api/projects/${p.id}`, { static: { spa: false } });
    assert.deepEqual(partial.body.data.config.static, { outputDirectory: 'dist', spa: false, cleanUrls: true });
    const cleared = await api(team.member).patch(`/api/projects/${p.id}`, { static: null });
    assert.deepEqual(cleared.body.data.config.static, { outputDirectory: null, spa: null, cleanUrls: false });
    assertError(await api(team.member).patch(`/api/projects/${p.id}`, { static: { outputDirectory: '../etc' } }), 400, 'VALIDATION_FAILED', 'static.outputDirectory');
    const bad = await api(team.member).patch(`/api/projects/${p.id}`, { static: { spa: 'yes' } });
    assert.equal(bad.status, 400, bad.text);
    assert.match(JSON.stringify(bad.body.error), /static/);
  });

  it('is 404 for another org’s project and for a missing one, with the same body', async () => {
    const p = await createProject(server, team.owner);
    const a = await api(stranger).get(`/api/projects/${p.id}`);
    const b = await api(stranger).get('/api/projects/prj_doesnotexist');
    assertError(a, 404, 'NOT_FOUND');
    assertError(b, 404, 'NOT_FOUND');
    assert.equal(a.body.error.message, b.body.error.message);
    assertError(await api(stranger).patch(`/api/projects/${p.id}`, { name: 'x' }), 404, 'NOT_FOUND');
    assertError(await api(stranger).delete(`/api/projects/${p.id}`), 404, 'NOT_FOUND');
  });

  it('restricted: 403 without a grant; with a read grant reads P but cannot write it; other projects stay 403', async () => {
    const org = await createTeam(server);
    const p = await createProject(server, org.owner);
    const q = await createProject(server, org.owner);
    assertError(await api(org.restricted).get(`/api/projects/${p.id}`), 403, 'FORBIDDEN');
    await createGrant(server, org.restricted, 'project', p.id, ['read']);
    assert.equal((await api(org.restricted).get(`/api/projects/${p.id}`)).status, 200);
    assert.equal((await api(org.restricted).get(`/api/projects/${p.id}/env`)).status, 200);
    assertError(await api(org.restricted).patch(`/api/projects/${p.id}`, { name: 'x' }), 403, 'FORBIDDEN');
    assertError(await api(org.restricted).patch(`/api/projects/${p.id}/env`, { upserts: [] }), 403, 'FORBIDDEN');
    assertError(await api(org.restricted).get(`/api/projects/${q.id}`), 403, 'FORBIDDEN');
  });

  it('restricted with a write grant writes P; a member cannot DELETE (project:admin); an admin can', async () => {
    const org = await createTeam(server);
    const p = await createProject(server, org.owner);
    await createGrant(server, org.restricted, 'project', p.id, ['write']);
    assert.equal((await api(org.restricted).patch(`/api/projects/${p.id}`, { framework: 'hono' })).status, 200);
    assertError(await api(org.restricted).delete(`/api/projects/${p.id}`), 403, 'FORBIDDEN');
    assertError(await api(org.member).delete(`/api/projects/${p.id}`), 403, 'FORBIDDEN');
    const d = await api(org.admin).delete(`/api/projects/${p.id}`);
    assert.equal(d.status, 200, d.text);
    assertError(await api(org.admin).get(`/api/projects/${p.id}`), 404, 'NOT_FOUND');
  });
});

describe('POST /api/projects/ensure', () => {
  it('creates without projectId (201) and updates in place with it (200)', async () => {
    const c = await api(team.member).post('/api/projects/ensure', { name: 'uploaded', gitProvider: 'upload', framework: 'vite', outputDirectory: 'dist' });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.data.source.type, 'upload');
    const u = await api(team.member).post('/api/projects/ensure', { projectId: c.body.data.id, name: 'uploaded', gitProvider: 'upload', buildCommand: 'vite build' });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.id, c.body.data.id);
    assert.equal(u.body.data.config.buildCommand, 'vite build');
    assert.equal(u.body.data.config.framework, 'vite');
  });

  it('is 400 without a name when creating, 404 for another org’s projectId, 403 without write', async () => {
    assertError(await api(team.member).post('/api/projects/ensure', { framework: 'vite' }), 400, 'VALIDATION_FAILED', 'name');
    const theirs = await createProject(server, stranger);
    assertError(await api(team.member).post('/api/projects/ensure', { projectId: theirs.id, name: 'x' }), 404, 'NOT_FOUND');
    assertError(await api(team.member).post('/api/projects/ensure', { projectId: 'prj_missing', name: 'x' }), 404, 'NOT_FOUND');
    const mine = await createProject(server, team.owner);
    assertError(await api(team.restricted).post('/api/projects/ensure', { projectId: mine.id, name: 'x' }), 403, 'FORBIDDEN');
    assertError(await api(team.restricted).post('/api/projects/ensure', { name: 'x' }), 403, 'FORBIDDEN');
  });
});

describe('deletion', () => {
  it('previews real counts and names, then removes all of it (files included) in one go, with an audit event', async () => {
    const org = await createTeam(server);
    const p = await createProject(server, org.owner, { name: 'doomed' });
    const c = api(org.owner);
    await c.patch(`/api/projects/${p.id}/env`, { upserts: [{ key: 'A', value: '1' }, { key: 'S', value: 'x', isSecret: true }] });
    await c.post(`/api/projects/${p.id}/environments`, { name: 'staging' });
    await c.patch(`/api/projects/${p.id}/env`, { environment: 'staging', upserts: [{ key: 'B', value: '2' }] });
    await c.post(`/api/projects/${p.id}/connect`, { domain: 'doomed.example.com' });
    await c.post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'db', connectionUrl: 'postgres://u:p@127.0.0.1:5432/app' });
    await createDeployment(server, p, { id: 'dep_doomed1', status: 'ready', trigger: 'manual', commit: 'abc', ref: 'main', finished: false });
    const vol = path.join(server.dataDir, 'volumes', p.id, 'data');
    mkdirSync(vol, { recursive: true });
    writeFileSync(path.join(vol, 'file.txt'), 'hello');

    const pre = await api(org.member).get(`/api/projects/${p.id}/deletion-preview`);
    assert.equal(pre.status, 200, pre.text);
    const d = pre.body.data;
    assert.deepEqual(d.deployments, { count: 1, names: ['dep_doomed1'] });
    // The preview got a copy of production's variables when it was made (contract section 16).
    assert.deepEqual(d.envVars, { count: 5, names: ['production:A', 'production:S', 'staging:A', 'staging:B', 'staging:S'] });
    assert.deepEqual(d.domains, { count: 1, names: ['doomed.example.com'] });
    assert.deepEqual(d.environments.names.sort(), ['production', 'staging']);
    assert.deepEqual(d.services.names.sort(), ['data', 'db']);
    assert.equal(typeof d.backupPolicies.count, 'number');
    assert.equal(typeof d.backupRuns.count, 'number');

    const del = await c.delete(`/api/projects/${p.id}`);
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.data.deleted, true);
    assert.equal(existsSync(path.join(server.dataDir, 'volumes', p.id)), false);
    for (const t of ['envVars', 'domains', 'services', 'deployments', 'environments'] as const) {
      const left = await server.ctx.db.selectFrom(t).select('id').where('projectId', '=', p.id).execute();
      assert.equal(left.length, 0, t);
    }
    const audit = await server.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', p.id).where('action', '=', 'project.delete').execute();
    assert.equal(audit.length, 1);
    // The domain is free again.
    const q = await createProject(server, org.owner);
    assert.equal((await c.post(`/api/projects/${q.id}/connect`, { domain: 'doomed.example.com' })).status, 200);
  });
});

describe('info, environments, options, enable/disable, routing, deployments, services', () => {
  it('info answers runtime (nothing running yet), build from the latest deployment and source', async (t) => {
    // Without a runtime (build-and-run not plugged in), nothing runs.
    const { srv, org } = await serverWithRuntime(t, null);
    const c = srv.api(org.member.token);
    const p = await createProject(srv, org.owner, { name: 'infoapp', port: 5000 });
    let r = await c.get(`/api/projects/${p.id}/info`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.runtime.state, 'not_deployed');
    assert.match(r.body.data.runtime.url, /^http:\/\/infoapp\.apps\.test/);
    assert.equal(r.body.data.runtime.port, 5000);
    assert.deepEqual(r.body.data.build, { lastDeploymentId: null, status: null, commit: null });
    assert.deepEqual(r.body.data.source, p.source);
    const deploymentId = await createDeployment(srv, p, { status: 'ready', trigger: 'api', commit: 'c0ffee', ref: 'main' });
    r = await c.get(`/api/projects/${p.id}/info`);
    assert.equal(r.body.data.runtime.state, 'stopped');
    assert.deepEqual(r.body.data.build, { lastDeploymentId: deploymentId, status: 'ready', commit: 'c0ffee' });
    const deps = await c.get(`/api/projects/${p.id}/deployments`);
    assert.equal(deps.status, 200);
    assert.deepEqual(Object.keys(deps.body.data[0]).sort(), ['commit', 'createdAt', 'current', 'environment', 'error', 'finishedAt', 'id', 'projectId', 'promotedFrom', 'ref', 'startedAt', 'status', 'trigger'].sort());
    assertError(await c.get(`/api/projects/${p.id}/deployments?limit=0`), 400, 'VALIDATION_FAILED', 'limit');
  });

  it('environments: creates a preview; 409 on a duplicate; 400 on a bad name or branch', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'preview-1', branch: 'feature/x' });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.data.type, 'preview');
    assert.equal(r.body.data.branch, 'feature/x');
    assert.deepEqual(Object.keys(r.body.data).sort(), ['branch', 'createdAt', 'domain', 'id', 'name', 'type', 'url']);
    assert.equal(r.body.data.domain, `feature-x--${p.slug}.apps.test`);
    assertError(await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'preview-1' }), 409, 'CONFLICT', 'name');
    assertError(await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'production' }), 409, 'CONFLICT', 'name');
    assertError(await api(team.member).post(`/api/projects/${p.id}/environments`, {}), 400, 'VALIDATION_FAILED', 'name');
    assertError(await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'Bad Name' }), 400, 'VALIDATION_FAILED', 'name');
    assertError(await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'ok', branch: 'a..b' }), 400, 'VALIDATION_FAILED', 'branch');
    const list = await api(team.member).get(`/api/projects/${p.id}/environments`);
    assert.deepEqual(list.body.data.map((e: any) => e.name), ['production', 'preview-1']);
  });

  it('options: writes the build options and answers them', async () => {
    const p = await createProject(server, team.owner);
    // A major version this host offers: the one the server runs on (20, 22 or 24).
    const major = process.versions.node.split('.')[0]!;
    const r = await api(team.member).post(`/api/projects/${p.id}/options`, { installCommand: 'pnpm i', nodeVersion: major, outputDirectory: 'build' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { installCommand: 'pnpm i', buildCommand: null, startCommand: null, outputDirectory: 'build', rootDirectory: null, nodeVersion: major });
    const g = await api(team.member).get(`/api/projects/${p.id}`);
    assert.equal(g.body.data.config.installCommand, 'pnpm i');
    assertError(await api(team.member).post(`/api/projects/${p.id}/options`, { nodeVersion: 'banana' }), 400, 'VALIDATION_FAILED', 'nodeVersion');
    // A version the host does not offer is refused, naming what it offers (never silently ignored).
    const far = await api(team.member).post(`/api/projects/${p.id}/options`, { nodeVersion: '12' });
    assertError(far, 400, 'VALIDATION_FAILED', 'nodeVersion');
    assert.match(far.body.error.message, new RegExp(`offers Node.js ${process.versions.node.replace(/\./g, '\\.')}`));
    assert.equal((await api(team.member).post(`/api/projects/${p.id}/options`, { nodeVersion: `>=${process.versions.node.split('.')[0]}` })).status, 200);
    assertError(await api(team.member).post(`/api/projects/${p.id}/options`, { outputDirectory: '/etc' }), 400, 'VALIDATION_FAILED', 'outputDirectory');
  });

  it('enable/disable flip the status and call the runtime hooks when a runtime is present', async (t) => {
    const calls: string[] = [];
    const port: RuntimePort = {
      state: async () => null,
      bringOnline: async (_c, _o, id) => void calls.push(`online:${id}`),
      takeOffline: async (_c, _o, id) => void calls.push(`offline:${id}`),
      syncRouting: async () => ({ status: 'synced' }),
      removeProject: async () => {},
    };
    const { srv, org } = await serverWithRuntime(t, port);
    const c = srv.api(org.member.token);
    const p = await createProject(srv, org.owner);
    const d = await c.post(`/api/projects/${p.id}/disable`);
    assert.equal(d.status, 200, d.text);
    assert.equal(d.body.data.status, 'disabled');
    const e = await c.post(`/api/projects/${p.id}/enable`);
    assert.equal(e.body.data.status, 'enabled');
    assert.deepEqual(calls, [`offline:${p.id}`, `online:${p.id}`]);
    const rr = await c.post(`/api/projects/${p.id}/routing/retry`);
    assert.equal(rr.body.data.status, 'synced');
  });

  it('routing/retry records the attempt and answers the free domain', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).post(`/api/projects/${p.id}/routing/retry`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.domain, p.routes.freeDomain);
    // 'recorded' without a runtime; the build-and-run runtime answers 'synced'.
    assert.ok(['recorded', 'synced'].includes(r.body.data.status), r.text);
    const rows = await server.ctx.db.selectFrom('routingAttempts').selectAll().where('projectId', '=', p.id).execute();
    assert.equal(rows.length, 1);
  });

  it('services: attaches a postgres database; its URL is encrypted and never returned', async () => {
    const p = await createProject(server, team.owner);
    const url = 'postgres://app:s3cretpw@127.0.0.1:5432/app';
    const r = await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main-db', connectionUrl: url });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(Object.keys(r.body.data).sort(), ['createdAt', 'id', 'internalHost', 'kind', 'managed', 'name', 'port', 'resources', 'status', 'version']);
    assert.equal(r.body.data.managed, false);
    assert.ok(!r.text.includes('s3cretpw'));
    const list = await api(team.member).get(`/api/projects/${p.id}/services`);
    assert.ok(!list.text.includes('s3cretpw'));
    assert.deepEqual(list.body.data.map((s: any) => s.name).sort(), ['data', 'main-db']);
    const row = await server.ctx.db.selectFrom('services').selectAll().where('id', '=', r.body.data.id).executeTakeFirstOrThrow();
    assert.ok(!row.connectionUrl!.includes('s3cretpw'));
    assertError(await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main-db', connectionUrl: url }), 409, 'CONFLICT', 'name');
    assertError(await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'mysql', name: 'x', connectionUrl: url }), 400, 'VALIDATION_FAILED', 'kind');
    assertError(await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'x', connectionUrl: 'http://x' }), 400, 'VALIDATION_FAILED', 'connectionUrl');
    assertError(await api(team.member).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'x', connectionUrl: url, version: '15' }), 400, 'VALIDATION_FAILED', 'version');
  });
});
