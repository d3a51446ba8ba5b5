/**
 * Health after go-live (contract section 20), against a real server with the real runtime and real
 * apps: a running app keeps being checked (its health path); one whose checks fail for the window
 * is `degraded` in info with the reason and recovers when they pass again; a crash-looping app is
 * degraded after 5 restarts; with `config.autoRollback` the previous ready release serves again;
 * a sleeping app is not checked and never degraded. Every change is in the audit log and told to
 * `appHealthChanged` listeners. The check interval and the 2-minute window are shortened by env.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';
process.env.BERTH_HEALTH_CHECK_SECONDS = '0.2';
process.env.BERTH_HEALTH_DEGRADED_SECONDS = '1';
process.env.BERTH_SLEEP_IDLE_SECONDS = '1';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { type HttpClient, edgeRequest, type EdgeAnswer } from '../support/http.js';
import { getRuntime, type AppHealthChange } from '../../src/modules/hosting/index.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

let root: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;
const told: AppHealthChange[] = [];

/**
 * An app answering `/health` 200 until `/break` (then 500 until `/fix`); `broken` starts it broken;
 * `crashAfterMs`: it exits that long after its first request (the start's health check), so every start is ready, then crashes.
 */
function writeApp(dir: string, opts: { version: string; broken?: boolean; crashAfterMs?: number }): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'server.js'),
    `
const http = require('node:http');
let broken = ${opts.broken ? 'true' : 'false'};
let seen = false;
const server = http.createServer((req, res) => {
  ${opts.crashAfterMs ? `if (!seen) setTimeout(() => process.exit(1), ${opts.crashAfterMs});` : ''}
  seen = true;
  if (req.url === '/break') { broken = true; res.end('broken'); return; }
  if (req.url === '/fix') { broken = false; res.end('fixed'); return; }
  if (req.url === '/health') { res.statusCode = broken ? 500 : 200; res.end(broken ? 'sick' : 'ok'); return; }
  res.end('hello ${opts.version}');
});
server.listen(Number(process.env.PORT), () => {
  console.log('listening ${opts.version}');
});
process.on('SIGTERM', () => process.exit(0));
`,
  );
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'health-app', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }));
}

function edge(host: string, pathName = '/'): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(server.ctx).edgePort(), host, pathName);
}

/** Imports a folder of the local root as a project and sets its config; answers its id and free domain. */
async function importApp(name: string, config: Record<string, unknown>): Promise<{ id: string; host: string }> {
  const res = await api.post('/api/projects/import', { path: path.join(root, 'local', name), name });
  assert.equal(res.status, 201, res.text);
  const patched = await api.patch(`/api/projects/${res.body.data.id}`, config);
  assert.equal(patched.status, 200, patched.text);
  return { id: res.body.data.id, host: res.body.data.routes.freeDomain };
}

async function deployReady(projectId: string): Promise<any> {
  const res = await api.post('/api/deployments', { projectId });
  assert.equal(res.status, 202, res.text);
  const done = await waitForDeployment(api, res.body.data.id, 120_000);
  assert.equal(done.status, 'ready', done.error);
  return done;
}

async function runtimeOf(projectId: string): Promise<any> {
  const res = await api.get(`/api/projects/${projectId}/info`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.runtime;
}

async function auditOf(projectId: string, action: string): Promise<any[]> {
  const res = await api.get('/api/audit?limit=200');
  assert.equal(res.status, 200, res.text);
  return res.body.data.filter((e: any) => e.action === action && (e.resourceId === projectId || e.details?.projectId === projectId));
}

before(async () => {
  root = tempDir('berth-health-');
  mkdirSync(path.join(root, 'local'), { recursive: true });
  server = await startTestServer({
    background: true,
    env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') },
    ports: { appHealthChanged: [async (_ctx, change) => void told.push(change)] },
  });
  await getRuntime(server.ctx).restored;
  owner = await createUser(server);
  api = server.api(owner.token);
});

after(async () => {
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

test('an app whose health path answers 500 for the window is degraded with the reason, and recovers when it answers again', async () => {
  writeApp(path.join(root, 'local', 'breakable'), { version: 'v1' });
  const p = await importApp('breakable', { healthPath: '/health' });
  const d = await deployReady(p.id);
  assert.equal((await runtimeOf(p.id)).state, 'running');

  assert.equal((await edge(p.host, '/break')).status, 200);
  const degraded = await waitFor(async () => {
    const rt = await runtimeOf(p.id);
    return rt.state === 'degraded' ? rt : null;
  }, 'the app to be degraded', 30_000, 100);
  assert.match(degraded.reason, /health check failing for \d+ s: GET \/health answered 500/);
  assert.ok(degraded.degradedSince);
  // The state shows at once; the audit entry and the listeners follow it.
  const events = await waitFor(async () => {
    const found = await auditOf(p.id, 'app.degraded');
    return found.length ? found : null;
  }, 'app.degraded in the audit log');
  assert.equal(events.length, 1);
  assert.equal(events[0].actorId, null);
  assert.equal(events[0].details.environment, 'production');
  assert.equal(events[0].details.deploymentId, d.id);
  const change = await waitFor(() => told.find((c) => c.projectId === p.id && c.state === 'degraded'), 'the listeners to be told');
  assert.equal(change.orgId, owner.orgId);
  assert.equal(change.environment, 'production');
  assert.match(change.reason, /GET \/health answered 500/);
  // Degraded is not down: the edge still serves it.
  assert.equal((await edge(p.host, '/')).text, 'hello v1');

  assert.equal((await edge(p.host, '/fix')).status, 200);
  await waitFor(async () => (await runtimeOf(p.id)).state === 'running', 'the app to recover', 30_000, 100);
  assert.equal((await runtimeOf(p.id)).reason, undefined);
  await waitFor(async () => (await auditOf(p.id, 'app.recovered')).length === 1, 'app.recovered in the audit log');
  await waitFor(() => told.some((c) => c.projectId === p.id && c.state === 'recovered'), 'the listeners to be told of the recovery');
  const logs = await api.get(`/api/projects/${p.id}/logs?limit=200`);
  const lines = JSON.stringify(logs.body);
  assert.match(lines, /\[berth\] degraded: health check failing/);
  assert.match(lines, /\[berth\] recovered/);
});

test('an app that crashes after it starts is degraded after 5 restarts', async () => {
  writeApp(path.join(root, 'local', 'crashy'), { version: 'v1', crashAfterMs: 200 });
  // Started directly (not through npm, which lingers for seconds after its child exits while the port is closed).
  const p = await importApp('crashy', { startCommand: 'node server.js' });
  await deployReady(p.id);
  const degraded = await waitFor(async () => {
    const rt = await runtimeOf(p.id);
    return rt.state === 'degraded' ? rt : null;
  }, 'the crash-looping app to be degraded', 60_000, 100);
  assert.match(degraded.reason, /restarted 5 times in 10 minutes after crashes/);
  await waitFor(async () => (await auditOf(p.id, 'app.degraded')).length === 1, 'app.degraded in the audit log');
  await api.post(`/api/projects/${p.id}/disable`, {});
});

test('with config.autoRollback a degraded release gives way to the previous ready one, said in the build log and the audit log', async () => {
  const dir = path.join(root, 'local', 'rolling');
  writeApp(dir, { version: 'v1' });
  const p = await importApp('rolling', { healthPath: '/health', autoRollback: true });
  const v1 = await deployReady(p.id);
  assert.equal((await edge(p.host)).text, 'hello v1');
  writeApp(dir, { version: 'v2', broken: true });
  const v2 = await deployReady(p.id);
  assert.equal((await edge(p.host)).text, 'hello v2');

  await waitFor(async () => (await edge(p.host)).text === 'hello v1', 'v1 to serve again', 60_000, 100);
  const rolled = await waitFor(async () => (await auditOf(p.id, 'deployment.auto_rollback'))[0], 'the automatic rollback in the audit log', 10_000, 100);
  assert.equal(rolled.actorId, null);
  assert.equal(rolled.resourceId, v1.id);
  assert.equal(rolled.details.from, v2.id);
  assert.match(rolled.details.reason, /GET \/health answered 500/);
  const current = (await api.get(`/api/projects/${p.id}/deployments`)).body.data.filter((d: any) => d.current).map((d: any) => d.id);
  assert.deepEqual(current, [v1.id]);
  const buildLog = (await api.get(`/api/deployments/${v2.id}/logs`)).body.data.map((l: any) => l.line).join('\n');
  assert.match(buildLog, new RegExp(`automatic rollback to ${v1.id}`));
  const change = await waitFor(() => told.find((c) => c.projectId === p.id && c.state === 'degraded'), 'the listeners to be told');
  assert.equal(change.rolledBackTo, v1.id);
  // v1 answers its checks: the app recovers.
  await waitFor(async () => (await runtimeOf(p.id)).state === 'running', 'the app to recover on v1', 30_000, 100);
});

test('a sleeping app is not checked and never degraded for sleeping', async () => {
  writeApp(path.join(root, 'local', 'sleepy'), { version: 'v1' });
  const p = await importApp('sleepy', { healthPath: '/health' });
  assert.equal((await api.post(`/api/projects/${p.id}/sleep-mode`, { sleepMode: 'auto_sleep' })).status, 200);
  await deployReady(p.id);
  await waitFor(async () => (await runtimeOf(p.id)).state === 'sleeping', 'the app to go to sleep', 30_000, 100);
  const watch = getRuntime(server.ctx).health;
  // Rounds over several degraded windows (1 s at 0.2 s a round) pass while it sleeps.
  const start = watch.rounds;
  await waitFor(() => watch.rounds >= start + 15, 'fifteen health rounds', 30_000, 100);
  assert.equal((await runtimeOf(p.id)).state, 'sleeping');
  assert.deepEqual(await auditOf(p.id, 'app.degraded'), []);
  // Woken by a request, it serves and is checked again (and passes).
  assert.equal((await edge(p.host)).text, 'hello v1');
  assert.equal(told.filter((c) => c.projectId === p.id).length, 0);
});
