/**
 * Finding: ReDoS (issue 15, point 3). A glob rule compiled to a backtracking regular expression, so a
 * plain member's rule like `/*a*a*a*…*b` and one long request path held the event loop: the API and
 * every project's edge stopped answering. Globs now match in linear time and a rule holds at most 8
 * wildcards; a rule the matcher cannot take is a 400 naming `path` when created or updated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createUser } from '../support/factories.js';
import { waitFor } from '../support/wait.js';
import { assertError } from '../support/http.js';
import { rawRequest, startEdgeApp, type EdgeApp } from './edge-support.js';

let app: EdgeApp;

before(async () => {
  app = await startEdgeApp();
});

after(async () => {
  await app?.close();
});

test('a glob with more than 8 wildcards is a 400 naming path, on create and on update', async () => {
  const member = await createUser(app.server, { orgId: app.owner.orgId, role: 'member' });
  const api = app.server.api(member.token);
  const url = `/api/projects/${app.projectId}/route-rules`;
  const nine = '/*a*a*a*a*a*a*a*a*b';
  assertError(await api.post(url, { kind: 'allow-deny', action: 'deny', cidrs: ['0.0.0.0/0'], path: nine }), 400, 'VALIDATION_FAILED', 'path');
  assertError(await api.post(url, { kind: 'rate-limit', limit: 5, windowSeconds: 60, path: '/' + '*x'.repeat(20) }), 400, 'VALIDATION_FAILED', 'path');
  const ok = await api.post(url, { kind: 'rate-limit', limit: 1000, windowSeconds: 60, path: '/api/*' });
  assert.equal(ok.status, 201, ok.text);
  assertError(await api.patch(`${url}/${ok.body.data.id}`, { path: nine }), 400, 'VALIDATION_FAILED', 'path');
  assert.equal((await api.get(url)).body.data.find((r: any) => r.id === ok.body.data.id).path, '/api/*', 'the refused update changed nothing');
  await api.delete(`${url}/${ok.body.data.id}`);
});

test('a rule with 8 wildcards against a 10 000-character path is answered, and the API stays responsive', { timeout: 120_000 }, async () => {
  const rule = await app.addRule({ kind: 'allow-deny', action: 'deny', cidrs: ['0.0.0.0/0', '::/0'], path: '/*a*a*a*a*a*a*a*b' });
  assert.equal(rule.path, '/*a*a*a*a*a*a*a*b');
  await waitFor(async () => (await rawRequest(app.edgePort(), 'GET', '/aaaaaaab', app.host)).status === 403, 'the glob rule to apply', 3000, 50);

  const long = '/' + 'a'.repeat(10_000);
  // The worst case for a backtracking matcher: many a's and no final b.
  const miss = await rawRequest(app.edgePort(), 'GET', long, app.host);
  assert.equal(miss.status, 200, miss.body.slice(0, 200));
  assert.equal(JSON.parse(miss.body).url.length, long.length);
  const hit = await rawRequest(app.edgePort(), 'GET', long + 'b', app.host);
  assert.equal(hit.status, 403);

  // Several at once, with the API asked in between: everything answers.
  const all = await Promise.all([
    ...Array.from({ length: 5 }, (_, i) => rawRequest(app.edgePort(), 'GET', long + 'x'.repeat(i), app.host)),
    app.api.get('/api/health').then((r) => ({ status: r.status })),
  ]);
  for (const r of all) assert.ok(r.status === 200, `status ${r.status}`);
});
