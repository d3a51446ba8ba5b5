/**
 * End to end, what happens to a running app (start shared through test/support/tiny-deployment.ts):
 * route rules at the edge, disable and enable, a crash restarted, auto_sleep sleeping and waking,
 * and the project's deletion stopping it and removing its domains and logs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { useTinyDeployment } from '../support/tiny-deployment.js';
import { waitFor } from '../support/wait.js';

// A custom domain next to the free one: the app's URL, and what its deletion removes.
const tiny = useTinyDeployment({ customDomain: 'tiny.example.test' });

test('route rules: a ban answers 403, an allow list refuses other addresses, a rate limit answers 429 with Retry-After', async () => {
  const { api, projectId, slug, edge } = tiny;
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
  const { api, projectId, slug, edge, edgePort } = tiny;
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
  const { slug, edge } = tiny;
  const host = `${slug}.localhost`;
  const before = (await edge(host)).text;
  await edge(host, '/crash');
  const res = await waitFor(async () => {
    const r = await edge(host);
    return r.status === 200 && r.text !== before ? r : null;
  }, 'the restarted app', 15000, 100);
  assert.match(res.text, /^hello v1 pid \d+/);
});

test('an auto_sleep app sleeps when idle and the next request wakes it', async () => {
  const { api, projectId, slug, edge, edgePort } = tiny;
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
  assert.match(res.text, /^hello v1/);
  assert.ok(wake < 5000, `woke in ${wake} ms`);
  assert.equal((await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state, 'running');
  // always_on never sleeps
  await api.post(`/api/projects/${projectId}/sleep-mode`, { sleepMode: 'always_on' });
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal((await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.state, 'running');
});

test('deleting the project stops its app, and its domains and logs go with it', async () => {
  const { api, projectId, slug, edge, dataDir } = tiny;
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
