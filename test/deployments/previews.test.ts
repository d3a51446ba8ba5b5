/**
 * Preview environments (contract section 16, issue 22 points 1 and 3), against a real server with the
 * real runtime and the edge: a preview is served at `<branch-slug>--<project-slug>.<apps domain>` as an
 * app of its own (its own variables, copied from production when it is made; its own volume, never
 * production's; asleep until its first request), its removal takes its app, releases and host with it,
 * and a ready preview deployment's build is promoted to production without a rebuild through the
 * zero-downtime swap. The deployment-settled listeners are told once per settled deployment.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';
process.env.BERTH_SLEEP_IDLE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import type { SettledDeployment } from '../../src/modules/deployments/index.js';
import { environmentUrl, ensurePreviewEnvironment, removePreviewEnvironment } from '../../src/modules/deployments/index.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { appKeyOf } from '../../src/runtime/app-key.js';
import { resolveEnvForRuntime } from '../../src/modules/projects/index.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { actorOf, createDeployment, createUser, type TestUser } from '../support/factories.js';
import { assertError, edgeRequest, type EdgeAnswer, type HttpClient } from '../support/http.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

let root: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;
const settled: SettledDeployment[] = [];

function edge(host: string, pathName = '/'): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(server.ctx).edgePort(), host, pathName);
}

/** Packs `dir` and uploads it through a folder session; answers the session id. */
async function upload(dir: string): Promise<string> {
  const file = `${dir}.tgz`;
  tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['.']);
  const s = await api.post('/api/projects/folder/session', { name: path.basename(dir) });
  assert.equal(s.status, 201, s.text);
  const { url, method, headers, sessionId } = s.body.data;
  const res = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
  assert.ok(res.status < 300, await res.text());
  return sessionId;
}

/** The tiny app of `version`, with `/probe/<host>/<port>` (whether a TCP connection from inside its box succeeds), uploaded: a session id. */
function uploadApp(version: string): Promise<string> {
  const dir = writeTinyApp(path.join(root, version), { version });
  const file = path.join(dir, 'server.js');
  const probe = `
function probe(req, res) {
  const parts = req.url.split('/').filter(Boolean);
  const sock = require('node:net').connect({ host: parts[1], port: Number(parts[2]) });
  const done = (what) => { sock.destroy(); if (!res.headersSent) res.end(what); };
  sock.once('connect', () => done('reachable'));
  sock.once('error', () => done('unreachable'));
  sock.setTimeout(1500, () => done('unreachable'));
}
`;
  writeFileSync(file, readFileSync(file, 'utf8').replace('const server = http.createServer((req, res) => {', `${probe}const server = http.createServer((req, res) => {\n  if (req.url.startsWith('/probe/')) return probe(req, res);`));
  return upload(dir);
}

/** Deploys (an upload when given) and waits until the deployment is done; answers its record. */
async function deploy(projectId: string, environment: string, sessionId?: string): Promise<any> {
  const res = await api.post('/api/deployments', { projectId, environment, ...(sessionId ? { sessionId } : {}) });
  assert.equal(res.status, 202, res.text);
  return waitForDeployment(api, res.body.data.id, 120_000);
}

async function buildLog(id: string): Promise<string[]> {
  const res = await api.get(`/api/deployments/${id}/logs`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.map((l: any) => l.line);
}

async function envVars(projectId: string, environment: string): Promise<Record<string, { value: string; isSecret: boolean }>> {
  const res = await api.get(`/api/projects/${projectId}/env?environment=${environment}`);
  assert.equal(res.status, 200, res.text);
  return Object.fromEntries(res.body.data.map((v: any) => [v.key, { value: v.value, isSecret: v.isSecret }]));
}

const edgePort = () => getRuntime(server.ctx).edgePort();

before(async () => {
  root = tempDir('berth-previews-');
  server = await startTestServer({
    background: true,
    // Git builds of this file fail at once (nothing listens there): only their deployment records matter.
    env: { BERTH_GITHUB_WEB_URL: 'http://127.0.0.1:9' },
    ports: { deploymentSettled: [async (_ctx, d) => void settled.push(d)] },
  });
  await getRuntime(server.ctx).restored;
  owner = await createUser(server);
  api = server.api(owner.token);
});

after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('a preview environment next to production', () => {
  let project: { id: string; slug: string; orgId: string };
  let prod: any;
  let preview: any;
  let previewHost: string;
  const app = () => appKeyOf(project.id, 'feat');
  const prodHost = () => `${project.slug}.localhost`;

  before(async () => {
    const p = await api.post('/api/projects', { name: 'Preview Shop' });
    assert.equal(p.status, 201, p.text);
    project = p.body.data;
    const vars = await api.patch(`/api/projects/${project.id}/env`, {
      upserts: [
        { key: 'GREETING', value: 'from-production' },
        { key: 'API_TOKEN', value: 'prod-secret-4411', isSecret: true },
      ],
    });
    assert.equal(vars.status, 200, vars.text);
    prod = await deploy(project.id, 'production', await uploadApp('prod-v1'));
    assert.equal(prod.status, 'ready', prod.error);
  });

  test('a preview environment gets its own host, `<branch-slug>--<project-slug>.<apps domain>`, named on it and on the project', async () => {
    const res = await api.post(`/api/projects/${project.id}/environments`, { name: 'feat', branch: 'Feature/Login_Page' });
    assert.equal(res.status, 201, res.text);
    preview = res.body.data;
    previewHost = `feature-login-page--${project.slug}.localhost`;
    assert.equal(preview.type, 'preview');
    assert.equal(preview.domain, previewHost);
    assert.equal(preview.url, `http://${previewHost}:${edgePort()}`);
    assert.equal(environmentUrl(server.ctx, project, preview), preview.url);
    const list = await api.get(`/api/projects/${project.id}/environments`);
    const production = list.body.data.find((e: any) => e.name === 'production');
    assert.equal(production.domain, null);
    assert.equal(production.url, `http://${prodHost()}:${edgePort()}`);
    assert.deepEqual((await api.get(`/api/projects/${project.id}`)).body.data.routes.previewDomains, [previewHost]);
  });

  test("production's variables are copied on creation, secrets too, and are then edited independently", async () => {
    const copied = await envVars(project.id, 'feat');
    assert.deepEqual(copied, { API_TOKEN: { value: '********', isSecret: true }, GREETING: { value: 'from-production', isSecret: false } });
    // The secret is sealed again for the preview (its AAD names the environment) and decrypts to the same value.
    assert.equal((await resolveEnvForRuntime(server.ctx, project.id, 'feat')).env.API_TOKEN, 'prod-secret-4411');
    const edit = await api.patch(`/api/projects/${project.id}/env`, { environment: 'feat', upserts: [{ key: 'GREETING', value: 'from-preview' }] });
    assert.equal(edit.status, 200, edit.text);
    assert.equal((await envVars(project.id, 'production')).GREETING!.value, 'from-production');
    await api.patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'ONLY_PROD', value: '1' }] });
    assert.equal((await envVars(project.id, 'feat')).ONLY_PROD, undefined);
  });

  test('a preview built from an uploaded folder is not started when it becomes ready; its first request through the edge starts it, and it answers with its own release and variables while production answers its own', async () => {
    const done = await deploy(project.id, 'feat', await uploadApp('preview-v2'));
    assert.equal(done.status, 'ready', done.error);
    assert.equal(done.environment, 'feat');
    assert.equal(done.current, true);
    assert.ok((await buildLog(done.id)).some((l) => l.includes(`feat is served at ${preview.url}; its app starts on its first request`)));
    const rt = getRuntime(server.ctx);
    assert.ok(!['running', 'starting'].includes(rt.supervisor.stateOf(app()) ?? 'none'), 'the preview app is not started by its deployment');
    assert.equal(rt.supervisor.snapshot(app())?.pid, undefined);

    const first = await edge(previewHost);
    assert.equal(first.status, 200, first.text);
    assert.match(first.text, /^hello preview-v2/);
    assert.equal(rt.supervisor.stateOf(app()), 'running', 'the first request started it');
    assert.equal((await edge(previewHost, '/env/GREETING')).text, 'from-preview');
    assert.equal((await edge(previewHost, '/env/API_TOKEN')).text, 'prod-secret-4411');
    assert.match((await edge(prodHost())).text, /^hello prod-v1/);
    assert.equal((await edge(prodHost(), '/env/GREETING')).text, 'from-production');
    // Two apps: production's process is not the preview's.
    assert.notEqual(rt.supervisor.snapshot(app())!.pid, rt.supervisor.snapshot(project.id)!.pid);
    assert.equal(rt.supervisor.snapshot(project.id)!.deploymentId, prod.id);
  });

  test("the preview does not see production's /data volume: it gets an empty one of its own", async () => {
    const prodVolume = path.join(server.dataDir, 'volumes', project.id, 'data');
    const previewVolume = path.join(server.dataDir, 'volumes', project.id, '.previews', 'feat');
    mkdirSync(prodVolume, { recursive: true });
    writeFileSync(path.join(prodVolume, 'production-only.txt'), 'secret data');
    rmSync(path.join(prodVolume, 'touched'), { force: true });
    const res = await edge(previewHost, '/data');
    assert.equal(res.status, 200, res.text);
    assert.equal(existsSync(path.join(prodVolume, 'touched')), false, "the preview wrote nothing into production's volume");
    assert.equal(readFileSync(path.join(previewVolume, 'touched'), 'utf8'), 'yes', 'it wrote into its own');
    assert.equal(existsSync(path.join(previewVolume, 'production-only.txt')), false);
  });

  test("the preview's app is as isolated as production's: its sandbox cannot reach production's app (root: a network namespace each); the edge reaches both", async (t) => {
    const rt = getRuntime(server.ctx);
    if (rt.driver.isolation !== 'sandbox' || process.getuid?.() !== 0) return t.skip('needs the sandbox runtime as root (a network namespace per app)');
    assert.equal((await edge(previewHost)).status, 200);
    const prodUp = rt.supervisor.upstreamNow(project.id)!;
    const self = rt.supervisor.upstreamNow(app())!;
    assert.notEqual(prodUp.host, self.host);
    assert.equal((await edge(previewHost, `/probe/${prodUp.host}/${prodUp.port}`)).text, 'unreachable');
    assert.equal((await edge(prodHost(), `/probe/${self.host}/${self.port}`)).text, 'unreachable');
    assert.equal((await edge(prodHost())).status, 200);
  });

  test("the preview's app has its own runtime and request logs (`?environment=`); production's hold none of its lines", async () => {
    const preview = await api.get(`/api/projects/${project.id}/logs?environment=feat&limit=1000`);
    assert.equal(preview.status, 200, preview.text);
    assert.ok(preview.body.data.some((l: any) => l.line.includes('listening on') && l.line.includes('preview-v2')), preview.text);
    const production = await api.get(`/api/projects/${project.id}/logs?limit=1000`);
    assert.ok(!production.body.data.some((l: any) => l.line.includes('preview-v2')), 'no preview line in production\'s log');
    assert.ok(production.body.data.some((l: any) => l.line.includes('prod-v1')));
    const requests = await api.get(`/api/projects/${project.id}/server-logs/recent?environment=feat`);
    assert.equal(requests.status, 200, requests.text);
    assert.ok(requests.body.data.some((r: any) => r.path === '/env/GREETING'));
    assert.ok(!(await api.get(`/api/projects/${project.id}/server-logs/recent`)).body.data.some((r: any) => r.path === '/data'), "the preview's requests are not production's");
    assertError(await api.get(`/api/projects/${project.id}/logs?environment=nope`), 400, 'VALIDATION_FAILED', 'environment');
  });

  test('an idle preview goes back to sleep, and the next request wakes it again', async () => {
    const rt = getRuntime(server.ctx);
    await waitFor(() => rt.supervisor.stateOf(app()) === 'sleeping', 'the preview to sleep', 20_000, 100);
    assert.equal(rt.supervisor.stateOf(project.id), 'running', 'production (always_on) stays up');
    assert.match((await edge(previewHost)).text, /^hello preview-v2/);
    assert.equal(rt.supervisor.stateOf(app()), 'running');
  });

  test('deleting the environment stops its app, removes its releases, variables and volume, and its host then answers 404; production keeps serving', async () => {
    const rt = getRuntime(server.ctx);
    assert.match((await edge(previewHost)).text, /^hello preview-v2/);
    const pid = rt.supervisor.snapshot(app())!.pid!;
    const ids = (await api.get(`/api/projects/${project.id}/deployments?environment=feat`)).body.data.map((d: any) => d.id);
    assert.ok(ids.length >= 1);
    const builds = ids.map((id: string) => path.join(server.dataDir, 'builds', project.id, id));
    assert.ok(builds.every((b: string) => existsSync(b)));

    const del = await api.delete(`/api/projects/${project.id}/environments/feat`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.data, { name: 'feat', deleted: true });
    assert.equal(rt.supervisor.stateOf(app()), undefined, 'its app is gone');
    await waitFor(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 'the preview process to exit', 10_000);
    for (const id of ids) assert.equal((await api.get(`/api/deployments/${id}`)).status, 404);
    assert.ok(builds.every((b: string) => !existsSync(b)), 'its build outputs are gone');
    assert.equal(existsSync(path.join(server.dataDir, 'volumes', project.id, '.previews', 'feat')), false, 'its volume is gone');
    assert.equal(existsSync(path.join(server.dataDir, 'volumes', project.id, 'data', 'production-only.txt')), true, "production's volume stays");
    assertError(await api.get(`/api/projects/${project.id}/env?environment=feat`), 400, 'VALIDATION_FAILED', 'environment');
    assert.deepEqual((await api.get(`/api/projects/${project.id}`)).body.data.routes.previewDomains, []);
    assert.equal((await edge(previewHost)).status, 404);
    assert.match((await edge(prodHost())).text, /^hello prod-v1/);
    // Idempotent; production is not an environment to remove.
    assert.equal((await api.delete(`/api/projects/${project.id}/environments/feat`)).status, 200);
    assertError(await api.delete(`/api/projects/${project.id}/environments/production`), 400, 'VALIDATION_FAILED', 'env');
  });
});

test("a static-site release of a preview is served by the edge at its host, like production's, with no process", async () => {
  const site = (name: string, text: string) => {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'index.html'), `<!doctype html><title>${name}</title><p>${text}</p>\n`);
    return upload(dir);
  };
  const p = await api.post('/api/projects', { name: 'Static Previews' });
  assert.equal(p.status, 201, p.text);
  const project = p.body.data;
  const prod = await deploy(project.id, 'production', await site('static-prod', 'the production site'));
  assert.equal(prod.status, 'ready', prod.error);
  const env = await api.post(`/api/projects/${project.id}/environments`, { name: 'docs', branch: 'docs/new-look' });
  assert.equal(env.status, 201, env.text);
  const done = await deploy(project.id, 'docs', await site('static-preview', 'the preview site'));
  assert.equal(done.status, 'ready', done.error);
  const res = await edge(env.body.data.domain);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /the preview site/);
  assert.match((await edge(`${project.slug}.localhost`)).text, /the production site/);
  assert.equal(getRuntime(server.ctx).supervisor.stateOf(appKeyOf(project.id, 'docs')), undefined, 'no process runs for it');
});

describe('promote', () => {
  let project: { id: string; slug: string; orgId: string };
  let prod: any;
  let candidate: any;
  const prodHost = () => `${project.slug}.localhost`;

  before(async () => {
    const p = await api.post('/api/projects', { name: 'Promote Me' });
    assert.equal(p.status, 201, p.text);
    project = p.body.data;
    await api.patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'GREETING', value: 'production-value' }] });
    prod = await deploy(project.id, 'production', await uploadApp('promote-v1'));
    assert.equal(prod.status, 'ready', prod.error);
    const env = await api.post(`/api/projects/${project.id}/environments`, { name: 'next', branch: 'next' });
    assert.equal(env.status, 201, env.text);
    await api.patch(`/api/projects/${project.id}/env`, { environment: 'next', upserts: [{ key: 'GREETING', value: 'preview-value' }] });
    candidate = await deploy(project.id, 'next', await uploadApp('promote-v2'));
    assert.equal(candidate.status, 'ready', candidate.error);
    assert.match((await edge(`next--${project.slug}.localhost`)).text, /^hello promote-v2/);
  });

  test("promote puts the preview's build into production with no failed request during the swap and no build; production's variables apply", async () => {
    const before = (await api.get(`/api/projects/${project.id}/deployments`)).body.data.length;
    const candidateLog = await buildLog(candidate.id);
    let swapping = true;
    const seen: number[] = [];
    const traffic = (async () => {
      while (swapping) seen.push((await edge(prodHost())).status);
    })();
    const res = await api.post(`/api/projects/${project.id}/environments/next/promote`);
    swapping = false;
    await traffic;
    assert.equal(res.status, 202, res.text);
    const promoted = res.body.data;
    assert.equal(promoted.environment, 'production');
    assert.equal(promoted.status, 'ready');
    assert.equal(promoted.trigger, 'promote');
    assert.equal(promoted.promotedFrom, candidate.id);
    assert.equal(promoted.current, true);
    assert.notEqual(promoted.id, candidate.id);
    assert.ok(seen.length > 0 && seen.every((s) => s === 200), `statuses during the swap: ${seen.join(',')}`);

    assert.match((await edge(prodHost())).text, /^hello promote-v2/);
    assert.equal((await edge(prodHost(), '/env/GREETING')).text, 'production-value', "the app runs with production's variables");
    assert.match((await edge(`next--${project.slug}.localhost`)).text, /^hello promote-v2/, 'the preview keeps serving');
    assert.equal((await api.get(`/api/projects/${project.id}/deployments`)).body.data.length, before + 1, 'one production deployment record, no build');
    assert.equal((await api.get(`/api/deployments/${prod.id}`)).body.data.current, false);
    // No build: the same build output, no build log lines but the promotion's.
    const rows = await server.ctx.db.selectFrom('deploymentBuilds').select(['deploymentId', 'releaseDir']).where('deploymentId', 'in', [promoted.id, candidate.id]).execute();
    assert.equal(rows.length, 2);
    assert.equal(rows[0]!.releaseDir, rows[1]!.releaseDir);
    const log = await buildLog(promoted.id);
    assert.deepEqual(log, [`[berth] promoted ${candidate.id} of next to production as ${promoted.id} (no build: its build output runs with production's variables)`]);
    assert.deepEqual(await buildLog(candidate.id), candidateLog);
    const audit = (await api.get('/api/audit?limit=50')).body.data.filter((e: any) => e.action === 'deployment.promote');
    assert.equal(audit.length, 1);
    assert.equal(audit[0].resourceId, promoted.id);
    // It is a production release like any other: rollback goes back to the one before it.
    const rb = await api.post(`/api/projects/${project.id}/rollback`);
    assert.equal(rb.status, 202, rb.text);
    assert.equal(rb.body.data.id, prod.id);
    assert.match((await edge(prodHost())).text, /^hello promote-v1/);
  });

  test('promote refuses what it cannot promote: 400 naming the field, 404 for an unknown environment', async () => {
    const url = (env: string) => `/api/projects/${project.id}/environments/${env}/promote`;
    assertError(await api.post(url('production')), 400, 'VALIDATION_FAILED', 'env');
    assertError(await api.post(url('nope')), 404, 'NOT_FOUND', 'env');
    assertError(await api.post(url('next'), { deploymentId: prod.id }), 400, 'VALIDATION_FAILED', 'deploymentId');
    assertError(await api.post(url('next'), { deploymentId: 'dpl_unknown000000000000' }), 400, 'VALIDATION_FAILED', 'deploymentId');
    const failed = await createDeployment(server, project, { environment: 'next', status: 'failed' });
    assertError(await api.post(url('next'), { deploymentId: failed }), 400, 'VALIDATION_FAILED', 'deploymentId');
    // A ready deployment whose build output is gone (pruned).
    const pruned = await createDeployment(server, project, { environment: 'next', status: 'ready', current: false });
    const r = await api.post(url('next'), { deploymentId: pruned });
    assertError(r, 400, 'VALIDATION_FAILED', 'deploymentId');
    assert.match(r.body.error.message, /was pruned/);
    const empty = await api.post(`/api/projects/${project.id}/environments`, { name: 'empty' });
    assert.equal(empty.status, 201, empty.text);
    assertError(await api.post(url('empty')), 400, 'VALIDATION_FAILED', 'deploymentId');
    // Another org's project is not found.
    const other = await createUser(server);
    assertError(await server.api(other.token).post(url('next')), 404, 'NOT_FOUND');
  });
});

describe('the preview functions other areas call', () => {
  test('ensurePreviewEnvironment creates, then moves to a new branch (and host); branches that slug alike get a hash suffix; production is refused', async () => {
    const p = await api.post('/api/projects', { name: 'Pulls' });
    const project = p.body.data;
    const actor = actorOf(owner);
    const a = await ensurePreviewEnvironment(server.ctx, actor, project, { name: 'pr-1', branch: 'main' });
    assert.equal(a.domain, `main--${project.slug}.localhost`);
    const again = await ensurePreviewEnvironment(server.ctx, actor, project, { name: 'pr-1', branch: 'main' });
    assert.equal(again.id, a.id);
    // A fork's `main` (another pull request) slugs alike: it gets a suffix of its own.
    const b = await ensurePreviewEnvironment(server.ctx, actor, project, { name: 'pr-2', branch: 'main' });
    assert.match(b.domain!, new RegExp(`^main-[0-9a-f]{6}--${project.slug}\\.localhost$`));
    assert.equal(environmentUrl(server.ctx, project, b), b.url);
    const moved = await ensurePreviewEnvironment(server.ctx, actor, project, { name: 'pr-1', branch: 'feature/x' });
    assert.equal(moved.id, a.id);
    assert.equal(moved.branch, 'feature/x');
    assert.equal(moved.domain, `feature-x--${project.slug}.localhost`);
    // A long branch is cut so the label stays within 63 characters.
    const long = await ensurePreviewEnvironment(server.ctx, actor, project, { name: 'pr-3', branch: `feature/${'very-long-name-'.repeat(10)}` });
    assert.ok(long.domain!.split('.')[0]!.length <= 63, long.domain!);
    await assert.rejects(ensurePreviewEnvironment(server.ctx, actor, project, { name: 'production', branch: 'main' }), (e: any) => e.code === 'VALIDATION_FAILED' && e.field === 'name');
    await removePreviewEnvironment(server.ctx, actor, project, 'pr-2');
    await removePreviewEnvironment(server.ctx, actor, project, 'pr-2');
    assert.deepEqual((await api.get(`/api/projects/${project.id}/environments`)).body.data.map((e: any) => e.name), ['production', 'pr-1', 'pr-3']);
  });

  test("a deployment of a preview builds the preview's branch unless a ref is given; production builds the deploy branch", async () => {
    const p = await api.post('/api/projects', { name: 'Git Previews', gitOwner: 'acme', gitRepo: 'web', gitBranch: 'main' });
    assert.equal(p.status, 201, p.text);
    const project = p.body.data;
    await server.ctx.db.updateTable('projects').set({ sourceType: 'git' }).where('id', '=', project.id).execute();
    await ensurePreviewEnvironment(server.ctx, actorOf(owner), project, { name: 'pr-5', branch: 'feature/y' });
    const refOf = async (body: Record<string, unknown>) => {
      const res = await api.post('/api/deployments', { projectId: project.id, ...body });
      assert.equal(res.status, 202, res.text);
      await waitForDeployment(api, res.body.data.id);
      return res.body.data.ref;
    };
    assert.equal(await refOf({ environment: 'pr-5' }), 'feature/y');
    assert.equal(await refOf({ environment: 'pr-5', ref: 'other' }), 'other');
    assert.equal(await refOf({}), 'main');
  });

  test('the deployment-settled listeners are told once, after the status is committed: ready with the URL, failed with the error', async () => {
    const p = await api.post('/api/projects', { name: 'Settle' });
    const project = p.body.data;
    const ok = await deploy(project.id, 'production', await uploadApp('settle-v1'));
    assert.equal(ok.status, 'ready', ok.error);
    const calls = await waitFor(() => {
      const c = settled.filter((d) => d.id === ok.id);
      return c.length ? c : null;
    }, 'the ready deployment to be told');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled.filter((d) => d.id === ok.id).length, 1, 'told once');
    assert.deepEqual(calls[0], {
      id: ok.id,
      orgId: owner.orgId,
      projectId: project.id,
      environment: 'production',
      status: 'ready',
      commit: ok.commit,
      ref: ok.ref,
      error: null,
      url: `http://${project.slug}.localhost:${edgePort()}`,
    });

    const b = await api.post('/api/projects', { name: 'Settle Broken', buildCommand: 'node -e "process.exit(3)"' });
    assert.equal(b.status, 201, b.text);
    const bad = await deploy(b.body.data.id, 'production', await uploadApp('settle-broken'));
    assert.equal(bad.status, 'failed');
    const told = await waitFor(() => settled.find((d) => d.id === bad.id), 'the failed deployment to be told');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled.filter((d) => d.id === bad.id).length, 1, 'told once');
    assert.equal(told.status, 'failed');
    assert.equal(told.environment, 'production');
    assert.equal(told.projectId, b.body.data.id);
    assert.equal(told.error, bad.error);
    assert.match(told.error ?? '', /exit|code 3/);
    assert.equal(told.url, null, 'not served: it never had a release');
  });
});
