/**
 * End to end, logs and their tokens (start shared through test/support/tiny-deployment.ts): the
 * app's runtime log with secrets redacted and its live stream, the edge's request log and its
 * token stream, and the read-only tokens for one deployment's build log.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTinyDeployment } from '../support/tiny-deployment.js';
import { waitFor } from '../support/wait.js';

const tiny = useTinyDeployment();

test('runtime logs show the app output with secret values redacted', async () => {
  const { api, projectId, slug, edge, secret: SECRET } = tiny;
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
  const { api, projectId, slug, edge, server } = tiny;
  await edge(`${slug}.localhost`, '/env/GREETING');
  // Recorded once the response is done, which may be just after the client has it.
  const recent = await waitFor(async () => {
    const r = await api.get(`/api/projects/${projectId}/server-logs/recent`);
    return r.status !== 200 || r.body.data.some((e: any) => e.path === '/env/GREETING') ? r : null;
  }, 'the request in the recent log', 5000);
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

test('the runtime log stream sends the backlog, then live lines as the app prints them', async () => {
  const { api, projectId, slug, edge, server, owner } = tiny;
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
  const { api, projectId, server, deploy, settle } = tiny;
  // A second deployment: the session is for the latest, and the first is another one.
  await settle((await deploy()).id);
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

test('the kept logs are searched by text, time and stream, paged, downloadable; a printed secret is not found', async () => {
  const { api, projectId, slug, edge, secret: SECRET } = tiny;
  await edge(`${slug}.localhost`, '/log');
  await edge(`${slug}.localhost`, '/env/SEARCHME');
  const found = await waitFor(async () => {
    const r = await api.get(`/api/projects/${projectId}/logs?q=${encodeURIComponent('hello from the app')}`);
    return r.body.data?.length ? r : null;
  }, 'a search hit');
  assert.equal(found.status, 200);
  assert.ok(found.body.data.every((l: any) => l.source === 'runtime' && l.line.includes('hello from the app')));
  assert.ok('nextCursor' in found.body);
  // The secret the app printed was redacted as it was written: searching for it finds nothing.
  const secret = await api.get(`/api/projects/${projectId}/logs?q=${encodeURIComponent(SECRET)}&stream=runtime,build,request`);
  assert.equal(secret.status, 200);
  assert.deepEqual(secret.body.data, []);
  const redacted = await api.get(`/api/projects/${projectId}/logs?q=${encodeURIComponent('API_KEY=********')}`);
  assert.ok(redacted.body.data.length >= 1);
  // The edge's requests are kept too.
  const requests = await waitFor(async () => {
    const r = await api.get(`/api/projects/${projectId}/logs?stream=request&q=SEARCHME`);
    return r.body.data?.length ? r : null;
  }, 'the request line');
  assert.match(requests.body.data[0].line, /^GET \/env\/SEARCHME 200 /);
  // Paged: one line a page, older each time, no line twice.
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 3; i++) {
    const r: any = await api.get(`/api/projects/${projectId}/logs?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(r.body.data.length, 1);
    seen.push(JSON.stringify(r.body.data[0]));
    cursor = r.body.nextCursor;
    assert.ok(cursor);
  }
  assert.equal(new Set(seen).size, 3);
  // A time range in the future holds nothing; bad times and streams name their field.
  const future = new Date(Date.now() + 3_600_000).toISOString();
  assert.deepEqual((await api.get(`/api/projects/${projectId}/logs?since=${future}`)).body.data, []);
  for (const [qs, field] of [['until=tomorrow', 'query.until'], ['since=x', 'query.since'], ['stream=stdin', 'query.stream'], ['cursor=nope', 'query.cursor']]) {
    const bad = await api.get(`/api/projects/${projectId}/logs?${qs}`);
    assert.equal(bad.status, 400, qs);
    assert.equal(bad.body.error.field, field);
  }
  // The download holds the same lines as JSON lines.
  const dl = await api.get(`/api/projects/${projectId}/logs/download?q=${encodeURIComponent('hello from the app')}`);
  assert.equal(dl.status, 200);
  assert.match(String(dl.headers.get('content-disposition')), /attachment; filename="[^"]+-logs\.jsonl"/);
  const text = dl.text;
  const lines = text.trim().split('\n').map((l: string) => JSON.parse(l));
  assert.ok(lines.length >= found.body.data.length);
  assert.ok(!text.includes(SECRET));
});
