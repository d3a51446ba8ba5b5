/**
 * Rollback (contract section 12), against a real server with the real runtime: an environment's
 * current release goes back to a kept ready deployment without a build, with the same
 * zero-downtime swap as a deploy (the old app serves until the new one answers); static sites are a
 * pointer switch; releases beyond BERTH_RELEASES_KEPT are gone; every deploy, cancel and rollback
 * is in the audit log with its actor.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createDeployment, createProject, createUser, type TestUser } from '../support/factories.js';
import { assertError, type HttpClient, edgeRequest, type EdgeAnswer } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import * as m014 from '../../src/db/migrations/014_current_releases.js';
import { markReady, switchCurrent } from '../../src/modules/deployments/deployments.store.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

let root: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;

/** A request to the edge of `srv` for `host`. */
function edge(srv: TestServer, host: string, pathName = '/'): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(srv.ctx).edgePort(), host, pathName);
}

async function boot(env: Record<string, string> = {}): Promise<TestServer> {
  const s = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), ...env } });
  await getRuntime(s.ctx).restored;
  return s;
}

/** Imports a folder of the local root as a project (its scan sets the commands). */
async function importFolder(client: HttpClient, name: string): Promise<{ id: string; slug: string }> {
  const res = await client.post('/api/projects/import', { path: path.join(root, 'local', name), name });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
}

/** Deploys the project (an environment when given) and waits until the deployment is ready. */
async function deployReady(client: HttpClient, projectId: string, environment?: string): Promise<any> {
  const res = await client.post('/api/deployments', { projectId, ...(environment ? { environment } : {}) });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.data.current, false, 'a queued deployment is not current');
  const done = await waitForDeployment(client, res.body.data.id, 120_000);
  assert.equal(done.status, 'ready', done.error);
  return done;
}

async function deploymentsOf(client: HttpClient, projectId: string, environment?: string): Promise<any[]> {
  const res = await client.get(`/api/projects/${projectId}/deployments${environment ? `?environment=${environment}` : ''}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/** The ids of the deployments whose `current` flag is set. */
async function currentIds(client: HttpClient, projectId: string): Promise<string[]> {
  return (await deploymentsOf(client, projectId)).filter((d) => d.current).map((d) => d.id);
}

async function buildLog(client: HttpClient, id: string): Promise<string[]> {
  const res = await client.get(`/api/deployments/${id}/logs`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.map((l: any) => `${l.ts} ${l.line}`);
}

async function auditEvents(client: HttpClient, action: string): Promise<any[]> {
  const res = await client.get('/api/audit?limit=200');
  assert.equal(res.status, 200, res.text);
  return res.body.data.filter((e: any) => e.action === action);
}

function write(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
}

before(async () => {
  root = tempDir('berth-rollback-');
  mkdirSync(path.join(root, 'local'), { recursive: true });
  server = await boot();
  owner = await createUser(server);
  api = server.api(owner.token);
});

after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

interface TinyProject {
  project: { id: string; slug: string };
  /** Its folder in the local root (write the next version there). */
  dir: string;
  host: string;
  v1: any;
  v2: any;
}

/** A tiny server app imported from a folder of its own and deployed twice (v1, then v2: current). */
async function tinyProject(name: string): Promise<TinyProject> {
  const dir = path.join(root, 'local', name);
  writeTinyApp(dir, { version: 'v1' });
  const project = await importFolder(api, name);
  const v1 = await deployReady(api, project.id);
  writeTinyApp(dir, { version: 'v2' });
  const v2 = await deployReady(api, project.id);
  return { project, dir, host: `${project.slug}.localhost`, v1, v2 };
}

describe('a server app rolls back without a build', () => {
  // A project the cases below only read (or leave as they found it); a case that moves a pointer has its own.
  let tiny: TinyProject;
  before(async () => {
    tiny = await tinyProject('tiny');
  });

  test('the newest ready deployment is the current one, and every deployment answer says whether it is', async () => {
    const { project, host, v1, v2 } = tiny;
    assert.match((await edge(server, host)).text, /^hello v2/);
    assert.deepEqual(await currentIds(api, project.id), [v2.id]);
    assert.equal((await api.get(`/api/deployments/${v2.id}`)).body.data.current, true);
    assert.equal((await api.get(`/api/deployments/${v1.id}`)).body.data.current, false);
  });

  test('rollback with no body serves the release before the current one through the edge, with no new deployment and no build, and no request fails during the swap', async () => {
    const { project, host, v1, v2 } = await tinyProject('tiny-back');
    const countBefore = (await deploymentsOf(api, project.id)).length;
    const logBefore = await buildLog(api, v1.id);
    // Requests keep going through the edge during the swap: the old app serves until the new one answers.
    let swapping = true;
    const seen: number[] = [];
    const traffic = (async () => {
      while (swapping) seen.push((await edge(server, host)).status);
    })();
    const res = await api.post(`/api/projects/${project.id}/rollback`);
    swapping = false;
    await traffic;
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.id, v1.id);
    assert.equal(res.body.data.status, 'ready');
    assert.equal(res.body.data.current, true);
    assert.ok(seen.length > 0 && seen.every((s) => s === 200), `statuses during the swap: ${seen.join(',')}`);

    assert.match((await edge(server, host)).text, /^hello v1/);
    assert.equal((await deploymentsOf(api, project.id)).length, countBefore, 'no deployment was made');
    assert.deepEqual(await currentIds(api, project.id), [v1.id]);
    assert.equal((await api.get(`/api/deployments/${v2.id}`)).body.data.current, false);
    assert.deepEqual(await buildLog(api, v1.id), logBefore, 'no build ran: its build log is unchanged');
    const info = await api.get(`/api/projects/${project.id}/info`);
    assert.equal(info.body.data.runtime.state, 'running');
  });

  test('rollback to a named deployment serves it again; rolling back to the current one changes nothing', async () => {
    const { project, host, v1 } = await tinyProject('tiny-named');
    const res = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: v1.id });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.id, v1.id);
    assert.equal(res.body.data.current, true);
    assert.match((await edge(server, host)).text, /^hello v1/);
    assert.deepEqual(await currentIds(api, project.id), [v1.id]);

    const rollbacks = (await auditEvents(api, 'deployment.rollback')).length;
    const pid = (await api.get(`/api/projects/${project.id}/info`)).body.data.runtime.pid;
    const again = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: v1.id });
    assert.equal(again.status, 202, again.text);
    assert.equal(again.body.data.current, true);
    assert.equal((await api.get(`/api/projects/${project.id}/info`)).body.data.runtime.pid, pid, 'the app was not restarted');
    assert.equal((await auditEvents(api, 'deployment.rollback')).length, rollbacks, 'a no-op is not audited');
  });

  test('a release that fails its health check is refused with the reason, and the current one keeps serving', async () => {
    const { project, host, v1, v2 } = tiny;
    const build = await server.ctx.db.selectFrom('deploymentBuilds').select('releaseDir').where('deploymentId', '=', v1.id).executeTakeFirstOrThrow();
    const file = path.join(build.releaseDir!, 'server.js');
    const { readFileSync } = await import('node:fs');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, "console.error('broken release'); process.exit(3);\n");
    try {
      const res = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: v1.id });
      assertError(res, 409, 'CONFLICT');
      assert.match(res.body.error.message, new RegExp(`deployment ${v1.id} did not start: .+; ${v2.id} keeps serving`));
      assert.match((await edge(server, host)).text, /^hello v2/);
      assert.deepEqual(await currentIds(api, project.id), [v2.id]);
    } finally {
      writeFileSync(file, good);
    }
  });

  test('a build in flight is not cancelled by a rollback: when it becomes ready later, it is current', async () => {
    const { project, dir, host, v1 } = await tinyProject('tiny-inflight');
    writeTinyApp(dir, { version: 'v3' });
    const patch = await api.patch(`/api/projects/${project.id}`, { buildCommand: 'node -e "setTimeout(() => {}, 2500)"' });
    assert.equal(patch.status, 200, patch.text);
    try {
      const started = await api.post('/api/deployments', { projectId: project.id });
      assert.equal(started.status, 202, started.text);
      const rb = await api.post(`/api/projects/${project.id}/rollback`);
      assert.equal(rb.status, 202, rb.text);
      assert.equal(rb.body.data.id, v1.id);
      assert.ok(['queued', 'building', 'deploying'].includes((await api.get(`/api/deployments/${started.body.data.id}`)).body.data.status), 'the build goes on');
      assert.match((await edge(server, host)).text, /^hello v1/);
      const done = await waitForDeployment(api, started.body.data.id, 60_000);
      assert.equal(done.status, 'ready', done.error);
      assert.equal(done.current, true);
      assert.match((await edge(server, host)).text, /^hello v3/);
      assert.deepEqual(await currentIds(api, project.id), [done.id]);
    } finally {
      await api.patch(`/api/projects/${project.id}`, { buildCommand: null });
    }
  });

  test('the errors: a deployment of another project or org or none is 404 naming deploymentId, one not ready is 409, a bad id is 400', async () => {
    // Records only: a named deployment is checked before anything runs.
    const project = await createProject(server, owner);
    assertError(await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: 'dpl_missing0000000000000' }), 404, 'NOT_FOUND', 'deploymentId');
    const other = await createProject(server, owner);
    const otherDeployment = await createDeployment(server, other, { status: 'ready' });
    assertError(await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: otherDeployment }), 404, 'NOT_FOUND', 'deploymentId');
    const stranger = await createUser(server);
    const foreign = await createDeployment(server, await createProject(server, stranger), { status: 'ready' });
    assertError(await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: foreign }), 404, 'NOT_FOUND', 'deploymentId');
    for (const status of ['failed', 'queued', 'cancelled']) {
      const d = await createDeployment(server, { id: project.id, orgId: owner.orgId }, { status });
      const res = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: d });
      assertError(res, 409, 'CONFLICT', 'deploymentId');
      assert.match(res.body.error.message, new RegExp(`is ${status}`));
    }
    assertError(await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: 42 }), 400, 'VALIDATION_FAILED', 'deploymentId');
    // another org's project: 404, as every route names it
    assertError(await server.api(stranger.token).post(`/api/projects/${project.id}/rollback`), 404, 'NOT_FOUND');
  });

  test('a project with nothing before its current release, none at all, or disabled answers 409', async () => {
    const empty = await createProject(server, owner);
    const none = await api.post(`/api/projects/${empty.id}/rollback`);
    assertError(none, 409, 'CONFLICT');
    assert.match(none.body.error.message, /nothing to roll back to/);

    const disabled = await api.post(`/api/projects/${empty.id}/disable`);
    assert.equal(disabled.status, 200, disabled.text);
    const refused = await api.post(`/api/projects/${empty.id}/rollback`);
    assertError(refused, 409, 'CONFLICT');
    assert.match(refused.body.error.message, /disabled/);
  });

  test('a non-production environment moves its own pointer only', async () => {
    const { project, host } = await tinyProject('tiny-staging');
    const env = await api.post(`/api/projects/${project.id}/environments`, { name: 'staging' });
    assert.equal(env.status, 201, env.text);
    const s1 = await deployReady(api, project.id, 'staging');
    const s2 = await deployReady(api, project.id, 'staging');
    const production = await currentIds(api, project.id);
    assert.equal(production.length, 2, 'one current release per environment');
    assert.ok(production.includes(s2.id));
    const res = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: s1.id });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.environment, 'staging');
    const staging = await deploymentsOf(api, project.id, 'staging');
    assert.deepEqual(staging.filter((d) => d.current).map((d) => d.id), [s1.id]);
    assert.ok((await currentIds(api, project.id)).includes(production.find((id) => id !== s2.id)!), 'production keeps its release');
    assert.match((await edge(server, host)).text, /^hello v2/);
  });

  test('deploy, cancel and rollback are audited with the actor', async () => {
    const { project, v1, v2 } = await tinyProject('tiny-audit');
    const back = await api.post(`/api/projects/${project.id}/rollback`);
    assert.equal(back.status, 202, back.text);
    const creates = await auditEvents(api, 'deployment.create');
    const create = creates.find((e) => e.resourceId === v2.id);
    assert.ok(create, 'the deploy of v2');
    assert.equal(create.actorId, owner.userId);
    assert.equal(create.resourceType, 'deployment');
    assert.equal(create.details.projectId, project.id);
    assert.equal(create.details.environment, 'production');
    assert.equal(create.details.trigger, 'api');

    const rollback = (await auditEvents(api, 'deployment.rollback')).find((e) => e.details.to === v1.id && e.details.from === v2.id);
    assert.ok(rollback, 'the rollback from v2 to v1');
    assert.equal(rollback.actorId, owner.userId);
    assert.equal(rollback.resourceId, v1.id);
    assert.equal(rollback.details.environment, 'production');

    const queued = await createDeployment(server, { id: project.id, orgId: owner.orgId }, { status: 'queued', finished: false });
    const c = await api.post(`/api/deployments/${queued}/cancel`);
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.current, false);
    const cancel = (await auditEvents(api, 'deployment.cancel')).find((e) => e.resourceId === queued);
    assert.ok(cancel, 'the cancel');
    assert.equal(cancel.actorId, owner.userId);
    assert.equal(cancel.details.from, 'queued');
    assert.equal((await api.post(`/api/deployments/${queued}/cancel`)).status, 409);
    assert.equal((await auditEvents(api, 'deployment.cancel')).filter((e) => e.resourceId === queued).length, 1, 'a refused cancel is not audited');
  });
});

describe('a static site rolls back by switching its pointer', () => {
  test('the edge serves the earlier files at once; nothing runs', async () => {
    const dir = path.join(root, 'local', 'site');
    write(dir, { 'index.html': '<h1>site v1</h1>' });
    const project = await importFolder(api, 'site');
    const s1 = await deployReady(api, project.id);
    const only = await api.post(`/api/projects/${project.id}/rollback`);
    assertError(only, 409, 'CONFLICT');
    assert.match(only.body.error.message, /nothing to roll back to/);

    write(dir, { 'index.html': '<h1>site v2</h1>' });
    const s2 = await deployReady(api, project.id);
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /site v2/);
    const res = await api.post(`/api/projects/${project.id}/rollback`);
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.data.id, s1.id);
    assert.equal(res.body.data.current, true);
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /site v1/);
    assert.equal(getRuntime(server.ctx).supervisor.snapshot(project.id), null, 'a static site runs no process');
    assert.deepEqual(await currentIds(api, project.id), [s1.id]);
    assert.equal((await api.get(`/api/projects/${project.id}/info`)).body.data.runtime.state, 'static');
    assert.ok(s2.id);
  });

  test('a server release rolls back to a static one (its app stops) and forward again (the app starts)', async () => {
    const dir = path.join(root, 'local', 'mixed');
    write(dir, { 'index.html': '<h1>mixed static</h1>' });
    const project = await importFolder(api, 'mixed');
    const site = await deployReady(api, project.id);
    rmSync(path.join(dir, 'index.html'));
    writeTinyApp(dir, { version: 'mixed-app' });
    const patch = await api.patch(`/api/projects/${project.id}`, { startCommand: 'npm start', outputDirectory: null });
    assert.equal(patch.status, 200, patch.text);
    const app = await deployReady(api, project.id);
    const host = `${project.slug}.localhost`;
    assert.match((await edge(server, host)).text, /^hello mixed-app/);
    assert.equal(getRuntime(server.ctx).supervisor.snapshot(project.id)?.state, 'running');

    const back = await api.post(`/api/projects/${project.id}/rollback`);
    assert.equal(back.status, 202, back.text);
    assert.equal(back.body.data.id, site.id);
    assert.match((await edge(server, host)).text, /mixed static/);
    assert.equal(getRuntime(server.ctx).supervisor.snapshot(project.id)?.state, 'stopped', 'the app of the server release stopped');

    const forward = await api.post(`/api/projects/${project.id}/rollback`, { deploymentId: app.id });
    assert.equal(forward.status, 202, forward.text);
    assert.match((await edge(server, host)).text, /^hello mixed-app/);
    assert.equal(getRuntime(server.ctx).supervisor.snapshot(project.id)?.state, 'running');
  });
});

describe('BERTH_RELEASES_KEPT', () => {
  test('a release beyond the number kept is pruned, and rolling back to it is a 409 saying so', async () => {
    const srv = await boot({ BERTH_RELEASES_KEPT: '1' });
    try {
      assert.equal(srv.config.releasesKept, 1);
      const client = srv.api((await createUser(srv)).token);
      const dir = path.join(root, 'local', 'kept');
      write(dir, { 'index.html': '<h1>kept v1</h1>' });
      const project = await importFolder(client, 'kept');
      const k1 = await deployReady(client, project.id);
      write(dir, { 'index.html': '<h1>kept v2</h1>' });
      const k2 = await deployReady(client, project.id);
      const folder = path.join(srv.dataDir, 'builds', project.id, k1.id);
      await waitFor(() => !existsSync(folder), 'the older release to be pruned', 5000);
      assert.ok(existsSync(path.join(srv.dataDir, 'builds', project.id, k2.id)), 'the current release is kept');
      for (const body of [undefined, { deploymentId: k1.id }]) {
        const res = await client.post(`/api/projects/${project.id}/rollback`, body);
        assertError(res, 409, 'CONFLICT');
        assert.match(res.body.error.message, /no longer kept.*BERTH_RELEASES_KEPT/);
      }
      assert.match((await edge(srv, `${project.slug}.localhost`)).text, /kept v2/);
    } finally {
      await srv.close();
    }
  });
});

describe('migration 014 (current releases)', () => {
  test('the newest ready deployment of each environment becomes current', async () => {
    const srv = await startTestServer();
    try {
      const user = await createUser(srv);
      const p = await createProject(srv, user);
      const mk = async (status: string, finishedAt: string, environment = 'production') => {
        const id = await createDeployment(srv, p, { status, environment });
        await srv.ctx.db.updateTable('deployments').set({ finishedAt }).where('id', '=', id).execute();
        return id;
      };
      const old = await mk('ready', '2024-01-01T00:00:00.000Z');
      const newest = await mk('ready', '2024-03-01T00:00:00.000Z');
      await mk('failed', '2024-04-01T00:00:00.000Z');
      const preview = await mk('ready', '2024-02-01T00:00:00.000Z', 'preview-1');
      const db = srv.ctx.db as never;
      await m014.down(db);
      await m014.up(db);
      const rows = await srv.ctx.db.selectFrom('deployments').select(['id', 'current']).where('projectId', '=', p.id).execute();
      const current = rows.filter((r) => Number(r.current) === 1).map((r) => r.id).sort();
      assert.deepEqual(current, [newest, preview].sort());
      assert.ok(!current.includes(old));
      // The unique index allows one current release per environment.
      await assert.rejects(srv.ctx.db.updateTable('deployments').set({ current: 1 }).where('id', '=', old).execute());
    } finally {
      await srv.close();
    }
  });
});

describe('the current pointer under concurrent writes', () => {
  test('deploys finishing at the same time leave one current release; a rollback whose starting point moved changes nothing', async () => {
    const srv = await startTestServer();
    try {
      const user = await createUser(srv);
      const p = await createProject(srv, user);
      const at = { orgId: p.orgId, projectId: p.id, environment: 'production' };
      const first = await createDeployment(srv, p, { status: 'deploying', finished: false });
      assert.equal(await markReady(srv.ctx.db, { ...at, id: first }, ['deploying']), true);
      const racing = await Promise.all(Array.from({ length: 4 }, () => createDeployment(srv, p, { status: 'deploying', finished: false })));
      const moved = await Promise.all(racing.map((id) => markReady(srv.ctx.db, { ...at, id }, ['deploying'])));
      assert.deepEqual(moved, [true, true, true, true]);
      const current = async () => (await srv.ctx.db.selectFrom('deployments').select('id').where('projectId', '=', p.id).where('current', '=', 1).execute()).map((r) => r.id);
      const now = await current();
      assert.equal(now.length, 1);
      assert.ok(racing.includes(now[0]!));
      // A deployment no longer deploying (cancelled meanwhile) does not become ready or current.
      const cancelled = await createDeployment(srv, p, { status: 'cancelled' });
      assert.equal(await markReady(srv.ctx.db, { ...at, id: cancelled }, ['deploying']), false);
      assert.deepEqual(await current(), now);

      const audit = () => Promise.resolve();
      // The rollback started when `first` was current: a deploy became current since, so it loses.
      assert.equal(await switchCurrent(srv.ctx.db, at, first, first, audit), 'moved');
      assert.deepEqual(await current(), now);
      // A target that is not ready is refused, and nothing is half-written.
      assert.equal(await switchCurrent(srv.ctx.db, at, now[0]!, cancelled, audit), 'not_ready');
      assert.deepEqual(await current(), now);
      assert.equal(await switchCurrent(srv.ctx.db, at, now[0]!, first, audit), 'switched');
      assert.deepEqual(await current(), [first]);
    } finally {
      await srv.close();
    }
  });
});
