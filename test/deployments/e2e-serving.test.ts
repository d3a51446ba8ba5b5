/**
 * End to end, serving (the suites e2e-*.test.ts share their start through test/support/tiny-deployment.ts):
 * a real tiny Node app in a local folder is deployed, goes ready, and the edge serves it on its free
 * and a custom domain, with its variables, its volume, forwarded headers, streamed bodies and
 * WebSocket upgrades; its build log keeps the secret out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useTinyDeployment } from '../support/tiny-deployment.js';
import { waitFor } from '../support/wait.js';

const tiny = useTinyDeployment();

test('a deployment goes queued -> building -> deploying -> ready and the edge serves the app on its free domain', async () => {
  const { api, projectId, slug, edge } = tiny;
  // useTinyDeployment's before hook deployed it (and saw it answered `queued`).
  const d = tiny.first.queued;
  const done = tiny.first.settled;
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
  const { api, projectId, server, owner, secret: SECRET } = tiny;
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
  const { api, projectId, edge } = tiny;
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
  const { projectId, slug, edge, dataDir, secret: SECRET } = tiny;
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
  const { slug, edgePort } = tiny;
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
