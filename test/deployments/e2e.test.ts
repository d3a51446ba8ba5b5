/**
 * End to end: a real tiny Node app (no dependencies) written into a temp folder goes
 * local source -> deploy -> ready -> served by the edge (free and custom domain) -> logs -> env ->
 * route rules -> disable/enable -> crash restart -> failing build keeps the old release -> server
 * restart brings it back -> auto_sleep sleeps and wakes.
 */
process.env.BERTH_SLEEP_IDLE_SECONDS = '1';
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { type HttpClient, edgeRequest, type EdgeAnswer } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { processesWith, writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const SECRET = 'sk-live-' + randomBytes(12).toString('hex');
let root: string;
let dataDir: string;
let appDir: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let secretKey: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;
let projectId: string;
let slug: string;

async function boot(): Promise<TestServer> {
  const s = await startTestServer({
    background: true,
    dataDir,
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: secretKey, BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_EDGE_PORT: '0' },
  });
  await getRuntime(s.ctx).restored;
  return s;
}

function edgePort(): number {
  return getRuntime(server.ctx).edgePort();
}

/** A request to the edge with a given Host header (fetch cannot set Host). */
function edge(host: string, pathName = '/', opts: { method?: string; body?: string } = {}): Promise<EdgeAnswer> {
  return edgeRequest(edgePort(), host, pathName, opts);
}

async function deploy(): Promise<any> {
  const res = await api.post('/api/deployments', { projectId });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.data.status, 'queued');
  return res.body.data;
}

async function settle(id: string, timeoutMs = 30000): Promise<any> {
  return waitForDeployment(api, id, timeoutMs);
}

before(async () => {
  root = tempDir('berth-e2e-');
  dataDir = path.join(root, 'data');
  appDir = path.join(root, 'local', 'tiny');
  mkdirSync(dataDir, { recursive: true });
  secretKey = randomBytes(32).toString('base64');
  if (usingPostgres()) pg = await freshPostgresDatabase();
  writeTinyApp(appDir, { version: 'v1', printEnv: 'API_KEY' });
  // The build prints the secret (it must come out redacted) and writes an artifact.
  writeFileSync(path.join(appDir, 'build.js'), "console.log('building with key ' + process.env.API_KEY); require('fs').writeFileSync('built.txt', 'ok');\n");
  server = await boot();
  owner = await createUser(server);
  api = server.api(owner.token);
  const created = await api.post('/api/projects', { name: 'Tiny App', buildCommand: 'node build.js', startCommand: 'npm start' });
  assert.equal(created.status, 201, created.text);
  projectId = created.body.data.id;
  slug = created.body.data.slug;
  // The local-folder source (what `POST /api/projects/import` records).
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', projectId).execute();
  const env = await api.patch(`/api/projects/${projectId}/env`, {
    environment: 'production',
    upserts: [
      { key: 'GREETING', value: 'hi there', isSecret: false },
      { key: 'API_KEY', value: SECRET, isSecret: true },
    ],
    deletes: [],
  });
  assert.equal(env.status, 200, env.text);
});

after(async () => {
  await server?.close();
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

test('a deployment goes queued -> building -> deploying -> ready and the edge serves the app on its free domain', async () => {
  const d = await deploy();
  const done = await settle(d.id);
  assert.equal(done.status, 'ready', done.error);
  assert.ok(done.startedAt && done.finishedAt);
  const res = await edge(`${slug}.localhost`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^hello v1/);
  const list = await api.get(`/api/projects/${projectId}/deployments`);
  assert.equal(list.status, 200);
  assert.equal(list.body.data[0].id, d.id);
});

test('build logs are readable and never contain a secret value', async () => {
  const list = await api.get(`/api/projects/${projectId}/deployments`);
  const id = list.body.data[0].id;
  const logs = await api.get(`/api/deployments/${id}/logs`);
  assert.equal(logs.status, 200);
  const text = logs.body.data.map((l: any) => l.line).join('\n');
  assert.match(text, /building with key \*\*\*\*\*\*\*\*/);
  assert.ok(!text.includes(SECRET));
  for (const l of logs.body.data) {
    assert.ok(l.ts && (l.stream === 'stdout' || l.stream === 'stderr') && typeof l.line === 'string');
  }
  // the same through the SSE stream, which closes since the deployment is done
  const sse = await fetch(`${server.url}/api/deployments/${id}/logs/stream`, { headers: { authorization: `Bearer ${owner.token}` }, signal: AbortSignal.timeout(10000) });
  assert.equal(sse.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const body = await sse.text();
  assert.match(body, /event: log/);
  assert.ok(!body.includes(SECRET));
});

test('the app is reachable by a custom domain, unknown hosts get a clear 404 page', async () => {
  const c = await api.post(`/api/projects/${projectId}/connect`, { domain: 'tiny.example.test' });
  assert.ok(c.status === 200 || c.status === 201, c.text);
  const res = await waitFor(async () => {
    const r = await edge('tiny.example.test');
    return r.status === 200 ? r : null;
  }, 'the custom domain', 3000);
  assert.match(res.text, /^hello v1/);
  const unknown = await edge('nothing-here.localhost');
  assert.equal(unknown.status, 404);
  assert.match(unknown.headers['content-type'] ?? '', /text\/html/);
  assert.match(unknown.text, /No project is served at nothing-here\.localhost/);
});

test('the app sees its env, PORT, DATA_DIR and X-Forwarded-* headers; bodies stream both ways', async () => {
  assert.equal((await edge(`${slug}.localhost`, '/env/GREETING')).text, 'hi there');
  assert.equal((await edge(`${slug}.localhost`, '/env/API_KEY')).text, SECRET);
  // The volume is <data-dir>/volumes/<id>/data on the host and /data inside the sandbox.
  assert.equal((await edge(`${slug}.localhost`, '/data')).text, '/data');
  assert.equal(readFileSync(path.join(dataDir, 'volumes', projectId, 'data', 'touched'), 'utf8'), 'yes');
  const headers = JSON.parse((await edge(`${slug}.localhost`, '/headers')).text);
  assert.equal(headers['x-forwarded-for'], '127.0.0.1');
  assert.equal(headers['x-forwarded-proto'], 'http');
  assert.equal(headers['x-forwarded-host'], `${slug}.localhost`);
  const big = 'x'.repeat(3 * 1024 * 1024);
  const echo = await edge(`${slug}.localhost`, '/echo', { method: 'POST', body: big });
  assert.equal(echo.status, 200);
  assert.equal(echo.text.length, big.length);
});

test('WebSocket upgrades reach the app through the edge', async () => {
  const net = await import('node:net');
  const sock = net.connect(edgePort(), '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write(`GET /ws HTTP/1.1\r\nHost: ${slug}.localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  let buf = '';
  sock.on('data', (d) => (buf += d.toString()));
  await waitFor(async () => buf.includes('\r\n\r\n'), 'the 101 answer', 5000, 20);
  assert.match(buf, /^HTTP\/1.1 101/);
  assert.match(buf, /Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
  buf = '';
  sock.write('echo-me');
  await waitFor(async () => buf.includes('echo-me'), 'the echo', 5000, 20);
  sock.destroy();
});

test('runtime logs show the app output with secret values redacted', async () => {
  await edge(`${slug}.localhost`, '/log');
  const logs = await waitFor(async () => {
    const r = await api.get(`/api/projects/${projectId}/logs?limit=500`);
    return r.body.data?.some((l: any) => l.line.includes('hello from the app v1')) ? r.body.data : null;
  }, 'the app log line');
  const lines = logs.map((l: any) => l.line);
  assert.ok(lines.some((l: string) => /^listening on \d+ v1$/.test(l)));
  assert.ok(lines.includes('env API_KEY=********'));
  assert.ok(!JSON.stringify(logs).includes(SECRET));
  const since = logs[logs.length - 1].ts;
  const later = await api.get(`/api/projects/${projectId}/logs?since=${encodeURIComponent(since)}`);
  assert.equal(later.status, 200);
  assert.ok(later.body.data.every((l: any) => l.ts > since));
  const bad = await api.get(`/api/projects/${projectId}/logs?since=yesterday`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.field, 'query.since');
});

test('every edge request is recorded for server-logs/recent and the token stream', async () => {
  const recent = await api.get(`/api/projects/${projectId}/server-logs/recent`);
  assert.equal(recent.status, 200);
  const e = recent.body.data.find((r: any) => r.path === '/env/GREETING');
  assert.ok(e);
  assert.deepEqual(Object.keys(e).sort(), ['bytes', 'durationMs', 'ip', 'method', 'path', 'status', 'ts']);
  assert.equal(e.status, 200);
  assert.equal(e.method, 'GET');
  assert.equal(e.ip, '127.0.0.1');

  const tok = await api.get(`/api/projects/${projectId}/server-logs/stream-token`);
  assert.equal(tok.status, 200);
  assert.match(tok.body.data.token, /^berth_slt_/);
  assert.ok(Date.parse(tok.body.data.expiresAt) - Date.now() <= 61000);
  // no credential, wrong token: 401
  assert.equal((await fetch(`${server.url}/api/projects/${projectId}/server-logs/stream`)).status, 401);
  assert.equal((await fetch(`${server.url}/api/projects/${projectId}/server-logs/stream?token=berth_slt_nope`)).status, 401);
  const ac = new AbortController();
  const res = await fetch(`${server.url}/api/projects/${projectId}/server-logs/stream?token=${tok.body.data.token}`, { signal: ac.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let text = '';
  await edge(`${slug}.localhost`, '/streamed-path');
  const deadline = Date.now() + 5000;
  while (!text.includes('/streamed-path') && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
  }
  ac.abort();
  assert.match(text, /event: request/);
  assert.match(text, /"path":"\/streamed-path"/);
  // the token is for this project only
  const other = await api.post('/api/projects', { name: 'Other' });
  assert.equal((await fetch(`${server.url}/api/projects/${other.body.data.id}/server-logs/stream?token=${tok.body.data.token}`)).status, 401);
});

test('route rules: a ban answers 403, an allow list refuses other addresses, a rate limit answers 429 with Retry-After', async () => {
  const host = `${slug}.localhost`;
  const ban = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'ban', ips: ['127.0.0.0/8', '::1'] });
  assert.equal(ban.status, 201, ban.text);
  const t0 = Date.now();
  await waitFor(async () => (await edge(host)).status === 403, 'the ban to apply', 1500, 50);
  assert.ok(Date.now() - t0 <= 1100, 'a rule change is enforced within 1 s');
  await api.delete(`/api/projects/${projectId}/route-rules/${ban.body.data.id}`);
  await waitFor(async () => (await edge(host)).status === 200, 'the ban to lift', 1500, 50);

  const allow = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'allow-deny', action: 'allow', cidrs: ['10.0.0.0/8', '2001:db8::/32'], path: '/private' });
  assert.equal(allow.status, 201, allow.text);
  await waitFor(async () => (await edge(host, '/private/x')).status === 403, 'the allow list', 1500, 50);
  assert.equal((await edge(host, '/')).status, 200, 'paths the rule does not cover pass');
  await api.delete(`/api/projects/${projectId}/route-rules/${allow.body.data.id}`);

  const rl = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'rate-limit', limit: 3, windowSeconds: 60, path: '/limited/*' });
  assert.equal(rl.status, 201, rl.text);
  await new Promise((r) => setTimeout(r, 1000)); // the contract's bound for a rule change
  const statuses: number[] = [];
  let retryAfter: string | undefined;
  for (let i = 0; i < 4; i++) {
    const r = await edge(host, `/limited/${i}`);
    statuses.push(r.status);
    if (r.status === 429) retryAfter = r.headers['retry-after'] as string;
  }
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60);
  assert.equal((await edge(host, '/other')).status, 200);
  await api.delete(`/api/projects/${projectId}/route-rules/${rl.body.data.id}`);
});

test('disable answers 503 at the edge, enable brings it back', async () => {
  const host = `${slug}.localhost`;
  const dis = await api.post(`/api/projects/${projectId}/disable`);
  assert.equal(dis.status, 200, dis.text);
  await waitFor(async () => (await edge(host)).status === 503, 'the 503', 2000, 50);
  const info = await api.get(`/api/projects/${projectId}/info`);
  assert.equal(info.body.data.runtime.state, 'stopped');
  const refused = await api.post('/api/deployments', { projectId });
  assert.equal(refused.status, 409);
  const en = await api.post(`/api/projects/${projectId}/enable`);
  assert.equal(en.status, 200, en.text);
  const res = await waitFor(async () => {
    const r = await edge(host);
    return r.status === 200 ? r : null;
  }, 'the app to come back', 10000);
  assert.match(res.text, /^hello v1/);
  const info2 = await api.get(`/api/projects/${projectId}/info`);
  assert.equal(info2.body.data.runtime.state, 'running');
  assert.ok(info2.body.data.runtime.pid > 0);
  assert.ok(info2.body.data.runtime.startedAt);
  assert.equal(info2.body.data.runtime.url, `http://tiny.example.test:${edgePort()}`);
  // The volume's limit and what it holds (contract 18); the app wrote nothing yet. Not enforced yet, and it says so.
  assert.deepEqual({ ...info2.body.data.runtime.disk, note: undefined }, { limitMb: 1024, usedMb: 0, enforced: false, note: undefined });
  assert.match(info2.body.data.runtime.disk.note, /not enforced/);
});

test('a crashed app is restarted', async () => {
  const host = `${slug}.localhost`;
  const before = (await edge(host)).text;
  await edge(host, '/crash');
  const res = await waitFor(async () => {
    const r = await edge(host);
    return r.status === 200 && r.text !== before ? r : null;
  }, 'the restarted app', 15000, 100);
  assert.match(res.text, /^hello v1 pid \d+/);
});

test('a build that fails keeps the previous release serving', async () => {
  const patch = await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "console.error(process.env.API_KEY); process.exit(7)"' });
  assert.equal(patch.status, 200, patch.text);
  const d = await deploy();
  const done = await settle(d.id);
  assert.equal(done.status, 'failed');
  assert.match(done.error, /exit code 7/);
  const logs = await api.get(`/api/deployments/${d.id}/logs`);
  assert.ok(!JSON.stringify(logs.body).includes(SECRET));
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
});

test('cancel kills a running build; a newer deployment supersedes an older one in flight', async () => {
  // The build prints a marker of its own; pids inside the sandbox are its PID namespace's, so the
  // host's process table is searched for the marker instead.
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "console.log(\'slow build pid \' + process.pid); setTimeout(() => {}, 60000)" slow-build-marker' });
  const a = await deploy();
  const printed = (id: string) => async () => (await api.get(`/api/deployments/${id}/logs`)).body.data.some((l: any) => /^slow build pid \d+/.test(l.line));
  await waitFor(printed(a.id), 'the build to start', 10000);
  const b = await deploy();
  assert.equal((await api.get(`/api/deployments/${a.id}`)).body.data.status, 'superseded');
  await waitFor(printed(b.id), 'the second build', 10000);
  assert.ok(processesWith('slow-build-marker').length > 0, 'the marker finds the running build');
  const c = await api.post(`/api/deployments/${b.id}/cancel`);
  assert.equal(c.status, 200);
  assert.equal(c.body.data.status, 'cancelled');
  assert.equal((await api.post(`/api/deployments/${b.id}/cancel`)).status, 409);
  // no process of either build survives (the superseded one was killed too)
  for (const id of [a.id, b.id]) {
    const lines = (await api.get(`/api/deployments/${id}/logs`)).body.data.map((l: any) => l.line);
    assert.match(lines.join('\n'), /slow build pid \d+/, `build ${id} printed its pid`);
  }
  await waitFor(async () => processesWith('slow-build-marker').length === 0, 'both builds to be killed', 5000);
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
});

test('a build that runs past the build timeout is killed and fails', async () => {
  process.env.BERTH_BUILD_TIMEOUT_SECONDS = '2';
  try {
    await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "setTimeout(() => {}, 60000)"' });
    const d = await deploy();
    const done = await settle(d.id, 15000);
    assert.equal(done.status, 'failed');
    assert.match(done.error, /timed out after 2 s/);
  } finally {
    delete process.env.BERTH_BUILD_TIMEOUT_SECONDS;
    await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
  }
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
});

test('the runtime log stream sends the backlog, then live lines as the app prints them', async () => {
  const ac = new AbortController();
  const since = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 5));
  const res = await fetch(`${server.url}/api/projects/${projectId}/logs/stream?since=${encodeURIComponent(since)}`, { headers: { authorization: `Bearer ${owner.token}` }, signal: ac.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let text = '';
  const { value } = await reader.read();
  text += Buffer.from(value!).toString();
  assert.ok(!text.includes('hello from the app'), 'nothing since the given time yet');
  await edge(`${slug}.localhost`, '/log');
  const deadline = Date.now() + 5000;
  while (!text.includes('hello from the app') && Date.now() < deadline) {
    const r = await reader.read();
    if (r.done) break;
    text += Buffer.from(r.value).toString();
  }
  ac.abort();
  assert.match(text, /event: log\ndata: \{"ts":"[^"]+","stream":"stdout","line":"hello from the app v1"\}/);
});

test('deployment-session and build/access mint read-only tokens for one deployment\'s build logs', async () => {
  const s = await api.post(`/api/projects/${projectId}/deployment-session`);
  assert.equal(s.status, 200, s.text);
  const { token, expiresAt, deploymentId } = s.body.data;
  assert.match(token, /^berth_dpl_/);
  assert.ok(Date.parse(expiresAt) > Date.now());
  const anon = server.api();
  assert.equal((await anon.get(`/api/deployments/${deploymentId}/logs?token=${token}`)).status, 200);
  assert.equal((await anon.get(`/api/deployments/${deploymentId}/logs`, { authorization: `Bearer ${token}` })).status, 200);
  assert.equal((await anon.get(`/api/deployments/${deploymentId}/logs`)).status, 401);
  // not a credential for anything else
  assert.equal((await anon.get(`/api/deployments/${deploymentId}`, { authorization: `Bearer ${token}` })).status, 401);
  const list = await api.get(`/api/projects/${projectId}/deployments`);
  const other = list.body.data.find((d: any) => d.id !== deploymentId).id;
  assert.equal((await anon.get(`/api/deployments/${other}/logs?token=${token}`)).status, 401);
  const acc = await api.post('/api/deployments/build/access', { deploymentId: other });
  assert.equal(acc.status, 200);
  assert.equal((await anon.get(`/api/deployments/${other}/logs?token=${acc.body.data.token}`)).status, 200);
  assert.equal((await api.post('/api/deployments/build/access', { deploymentId: 'dpl_missing' })).status, 404);
});

test('a new release replaces the old one; a server restart brings the app back', async () => {
  writeTinyApp(appDir, { version: 'v2', printEnv: 'API_KEY' });
  const d = await deploy();
  assert.equal((await settle(d.id)).status, 'ready');
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v2/);
  const pidBefore = (await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.pid;
  await server.app.close();
  // the app went down with the server (graceful stop)
  await waitFor(async () => {
    try {
      process.kill(pidBefore, 0);
      return false;
    } catch {
      return true;
    }
  }, 'the app to stop with the server', 5000);
  server = await boot();
  api = server.api(owner.token);
  const res = await edge(`${slug}.localhost`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^hello v2/);
  const info = await api.get(`/api/projects/${projectId}/info`);
  assert.equal(info.body.data.runtime.state, 'running');
  assert.equal(info.body.data.build.lastDeploymentId, d.id);
});

test('an auto_sleep app sleeps when idle and the next request wakes it', async () => {
  const host = `${slug}.localhost`;
  // An open WebSocket connection keeps the app awake.
  const net = await import('node:net');
  const sock = net.connect(edgePort(), '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  await new Promise((r) => sock.once('data', r));
  const sm = await api.post(`/api/projects/${projectId}/sleep-mode`, { sleepMode: 'auto_sleep' });
  assert.equal(sm.status, 200, sm.text);
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state, 'running', 'not idle while a connection is open');
  sock.destroy();

  await waitFor(async () => (await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state === 'sleeping', 'the app to sleep', 10000, 200);
  const t0 = Date.now();
  const res = await edge(host);
  const wake = Date.now() - t0;
  assert.equal(res.status, 200);
  assert.match(res.text, /^hello v2/);
  assert.ok(wake < 5000, `woke in ${wake} ms`);
  assert.equal((await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state, 'running');
  // always_on never sleeps
  await api.post(`/api/projects/${projectId}/sleep-mode`, { sleepMode: 'always_on' });
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal((await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state, 'running');
});

test('deleting the project stops its app, and its domains and logs go with it', async () => {
  const pid = (await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.pid;
  assert.ok(pid > 0);
  const del = await api.delete(`/api/projects/${projectId}`);
  assert.equal(del.status, 200, del.text);
  await waitFor(async () => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }, 'the app to stop', 10000);
  await waitFor(async () => (await edge(`${slug}.localhost`)).status === 404, 'the free domain to be gone', 2000);
  assert.equal((await edge('tiny.example.test')).status, 404);
  const { existsSync } = await import('node:fs');
  assert.ok(!existsSync(path.join(dataDir, 'logs', 'projects', projectId)));
});
