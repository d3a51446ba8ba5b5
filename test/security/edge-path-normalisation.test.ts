/**
 * Finding: path normalisation (issue 15, point 2). Rules matched the path as sent, so `/%61dmin`,
 * `//admin`, `/x/../admin`, `/./admin`, `admin%2f…` and an absolute-form target all reached an app
 * behind a deny rule on `/admin` (the app reads each of them as /admin). Now rules match the normalised
 * path, the app is sent that same path, and what cannot be normalised safely is a 400.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/wait.js';
import { assertError } from '../support/http.js';
import { rawRequest, startEdgeApp, type EdgeApp } from './edge-support.js';

let app: EdgeApp;

before(async () => {
  app = await startEdgeApp();
  await app.addRule({ kind: 'allow-deny', action: 'deny', cidrs: ['0.0.0.0/0', '::/0'], path: '/admin' });
  await waitFor(async () => (await rawRequest(app.edgePort(), 'GET', '/admin', app.host)).status === 403, 'the deny rule to apply', 3000, 50);
});

after(async () => {
  await app?.close();
});

const get = (target: string) => rawRequest(app.edgePort(), 'GET', target, app.host);

test('every spelling of /admin is refused by the deny rule (403) or as a bad path (400), and none reaches the app', async () => {
  const seenBefore = (await app.seen()).length;
  const spellings = [
    '/admin',
    '/%61dmin',
    '/%61%64%6D%69%6E',
    '//admin',
    '///admin/',
    '/x/../admin',
    '/x/%2e%2e/admin',
    '/x/.%2E/admin/',
    '/./admin',
    '/admin/.',
    '/admin/./x',
    '/admin//x',
    '/admin;jsessionid=1',
    `http://${'h'}/admin`,
    'http://other.example/x/../admin?y=1',
    '/admin%2f..%2fpublic',
    '/admin%2Fx',
    '/public/..%2fadmin',
    '/public/..%5cadmin',
    '/public/..\\admin',
    '/x/..;/admin',
    '/admin%00',
    '/%zzadmin',
  ];
  for (const t of spellings) {
    const r = await get(t);
    assert.ok(r.status === 403 || r.status === 400, `${t} -> ${r.status} ${r.body.slice(0, 120)}`);
  }
  const seen = (await app.seen()).slice(seenBefore);
  assert.deepEqual(seen.filter((u) => u !== '/__seen'), [], 'the app saw none of them');
});

test('encoded separators, NUL, backslashes and broken escapes are 400 pages; the 400 is logged', async () => {
  for (const t of ['/a%2Fb', '/a%2fb', '/a%5Cb', '/a\\b', '/a%00b', '/a%', '/a%4g', '/..;/x']) {
    const r = await get(t);
    assert.equal(r.status, 400, t);
    assert.match(r.headers['content-type'] ?? '', /text\/html/);
    assert.match(r.body, /Bad request/);
  }
  const log = await app.requestLog();
  assert.ok(log.some((e) => e.status === 400 && e.path === '/a%2Fb'));
});

test('the app is sent the normalised path (and the query as sent): what the rule matched is what the app reads', async () => {
  const cases: Array<[string, string]> = [
    ['/%70ublic/%7Euser', '/public/~user'],
    ['//public///x', '/public/x'],
    ['/a/b/../../public/./x?q=%2F..//', '/public/x?q=%2F..//'],
    ['http://whatever.example/public?z=1', '/public?z=1'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/Admin', '/Admin'],
  ];
  for (const [sent, want] of cases) {
    const r = await get(sent);
    assert.equal(r.status, 200, `${sent}: ${r.body.slice(0, 200)}`);
    assert.equal(JSON.parse(r.body).url, want, sent);
  }
  const log = await app.requestLog();
  assert.ok(log.some((e) => e.path === '/public/x' && e.status === 200), 'the log holds the normalised path (without the query)');
});

test('paths compare case-sensitively: /Admin is another path than /admin', async () => {
  assert.equal((await get('/Admin')).status, 200);
  assert.equal((await get('/admin')).status, 403);
});

test('rule paths are normalised when written; a rule path that cannot be normalised is a 400 naming path', async () => {
  const r = await app.api.post(`/api/projects/${app.projectId}/route-rules`, { kind: 'allow-deny', action: 'deny', cidrs: ['0.0.0.0/0'], path: '/%70rivate//x/../' });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.data.path, '/private/');
  assertError(await app.api.post(`/api/projects/${app.projectId}/route-rules`, { kind: 'ban', ips: ['192.0.2.1'], path: '/a%2Fb' }), 400, 'VALIDATION_FAILED', 'path');
  assertError(await app.api.post(`/api/projects/${app.projectId}/route-rules`, { kind: 'ban', ips: ['192.0.2.1'], path: '/a%zz' }), 400, 'VALIDATION_FAILED', 'path');
  await app.api.delete(`/api/projects/${app.projectId}/route-rules/${r.body.data.id}`);
});
