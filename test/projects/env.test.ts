import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/lib/logger.js';
import { resolveEnvForRuntime } from '../../src/modules/projects/env.service.js';
import { createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';

let server: TestServer;
let team: TestOrg;
let stranger: TestUser;

/** Everything the server logs, at the most verbose level (request logging on): secrets must never show up in it. */
let logged = '';
const sink = new Writable({
  write(chunk, _enc, cb) {
    logged += chunk.toString();
    cb();
  },
});

before(async () => {
  server = await startTestServer({ logLevel: 'trace', build: { logger: createLogger('trace', sink) } });
  team = await createTeam(server);
  stranger = await createUser(server);
});
after(async () => {
  await server?.close();
});

const api = (u: TestUser) => server.api(u.token);
const SECRET = 'sk_live_VERY_SECRET_value_9f8e7d';

async function envOf(projectId: string, environment = 'production') {
  const r = await api(team.member).get(`/api/projects/${projectId}/env?environment=${environment}`);
  assert.equal(r.status, 200, r.text);
  return r;
}
const asMap = (vars: any[]) => Object.fromEntries(vars.map((v) => [v.key, v.value]));

describe('PATCH /api/projects/:id/env merges; GET masks secrets', () => {
  it('inserts, updates and deletes only the named keys; every other variable, masked secrets included, stays', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    const seen: string[] = [];
    let r = await api(team.member).patch(url, {
      environment: 'production',
      upserts: [
        { key: 'A', value: '1', isSecret: false },
        { key: 'B', value: '2', isSecret: false },
        { key: 'S', value: SECRET, isSecret: true },
      ],
      deletes: [],
    });
    seen.push(r.text);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(asMap(r.body.data), { A: '1', B: '2', S: '********' });
    const s = r.body.data.find((v: any) => v.key === 'S');
    assert.deepEqual(Object.keys(s).sort(), ['environment', 'isSecret', 'key', 'updatedAt', 'value']);
    assert.equal(s.isSecret, true);
    assert.equal(s.environment, 'production');

    // update A, delete B, leave S alone
    r = await api(team.member).patch(url, { environment: 'production', upserts: [{ key: 'A', value: 'one', isSecret: false }], deletes: ['B', 'NEVER_EXISTED'] });
    seen.push(r.text);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(asMap(r.body.data), { A: 'one', S: '********' });

    // the masked value sent back as read leaves the secret intact
    r = await api(team.member).patch(url, { upserts: [{ key: 'S', value: '********', isSecret: true }, { key: 'C', value: '3', isSecret: false }] });
    seen.push(r.text);
    assert.equal(r.status, 200, r.text);
    const g = await envOf(p.id);
    seen.push(g.text);
    assert.deepEqual(asMap(g.body.data), { A: 'one', C: '3', S: '********' });
    const rt = await resolveEnvForRuntime(server.ctx, p.id, 'production');
    assert.deepEqual(rt.env, { A: 'one', C: '3', S: SECRET });
    assert.deepEqual(rt.secrets, [SECRET]);

    // the secret never appears in an answer, the database (env rows, audit events) or its details
    for (const t of seen) assert.ok(!t.includes(SECRET));
    const rows = await server.ctx.db.selectFrom('envVars').selectAll().where('projectId', '=', p.id).execute();
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.ok(!row.value.includes(SECRET));
      assert.match(row.value, /^v1\./, 'every value is sealed');
    }
    const audit = await server.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', p.id).where('action', '=', 'project.env.update').execute();
    assert.equal(audit.length, 3);
    for (const a of audit) assert.ok(!a.details.includes(SECRET) && !a.details.includes('"one"'), a.details);
    const details = audit.map((a) => JSON.parse(a.details));
    assert.ok(details.some((d) => d.environment === 'production' && d.deleted.length === 1 && d.deleted[0] === 'B'));
    assert.ok(details.some((d) => d.upserted.includes('S')), 'audit names the keys');
  });

  it('updating a secret replaces it and keeps it secret when isSecret is omitted', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    await api(team.member).patch(url, { upserts: [{ key: 'TOKEN', value: 'old-secret-1', isSecret: true }] });
    const r = await api(team.member).patch(url, { upserts: [{ key: 'TOKEN', value: 'new-secret-2' }] });
    assert.equal(r.status, 200);
    assert.ok(!r.text.includes('new-secret-2'));
    assert.equal(r.body.data[0].isSecret, true);
    assert.equal((await resolveEnvForRuntime(server.ctx, p.id)).env.TOKEN, 'new-secret-2');
  });

  it('keeps environments apart (production and previews)', async () => {
    const p = await createProject(server, team.owner);
    await api(team.member).post(`/api/projects/${p.id}/environments`, { name: 'pr-7' });
    await api(team.member).patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts: [{ key: 'X', value: 'prod', isSecret: false }] });
    await api(team.member).patch(`/api/projects/${p.id}/env`, { environment: 'pr-7', upserts: [{ key: 'X', value: 'preview', isSecret: false }] });
    assert.deepEqual(asMap((await envOf(p.id)).body.data), { X: 'prod' });
    const pr = await envOf(p.id, 'pr-7');
    assert.deepEqual(asMap(pr.body.data), { X: 'preview' });
    assert.equal(pr.body.data[0].environment, 'pr-7');
    assertError(await api(team.member).get(`/api/projects/${p.id}/env?environment=nope`), 400, 'VALIDATION_FAILED', 'environment');
    assertError(await api(team.member).patch(`/api/projects/${p.id}/env`, { environment: 'nope', upserts: [] }), 400, 'VALIDATION_FAILED', 'environment');
  });

  it('holds at most 1000 keys per environment: 1000 upserts in one PATCH pass, the 1001st key is 400', async () => {
    const p = await createProject(server, team.owner);
    const upserts = Array.from({ length: 1000 }, (_, i) => ({ key: `K_${i}`, value: `v${i}`, isSecret: i % 10 === 0 }));
    const r = await api(team.member).patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts, deletes: [] });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.body.data.length, 1000);
    assertError(await api(team.member).patch(`/api/projects/${p.id}/env`, { upserts: [{ key: 'ONE_MORE', value: 'x', isSecret: false }] }), 400, 'VALIDATION_FAILED', 'upserts');
    // replacing one key by another in the same PATCH stays within the limit
    const swap = await api(team.member).patch(`/api/projects/${p.id}/env`, { upserts: [{ key: 'ONE_MORE', value: 'x', isSecret: false }], deletes: ['K_5'] });
    assert.equal(swap.status, 200, swap.text.slice(0, 300));
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ key: `Z_${i}`, value: 'v', isSecret: false }));
    assertError(await api(team.member).patch(`/api/projects/${p.id}/env`, { upserts: tooMany }), 400, 'VALIDATION_FAILED', 'upserts');
    assert.equal((await envOf(p.id)).body.data.length, 1000, 'nothing half-written');
  });

  it('answers 400 naming the field for a bad key, an oversize value, a key both upserted and deleted, a non-string value', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'OK', value: '1' }, { key: '1BAD', value: 'x' }] }), 400, 'VALIDATION_FAILED', 'upserts.1.key');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'A-B', value: 'x' }] }), 400, 'VALIDATION_FAILED', 'upserts.0.key');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'BIG', value: 'é'.repeat(33 * 1024) }] }), 400, 'VALIDATION_FAILED', 'upserts.0.value');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'BIG', value: 'x'.repeat(65537) }] }), 400, 'VALIDATION_FAILED', 'upserts.0.value');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'A', value: 'x' }], deletes: ['A'] }), 400, 'VALIDATION_FAILED', 'deletes.0');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'A', value: 'x' }, { key: 'A', value: 'y' }] }), 400, 'VALIDATION_FAILED', 'upserts.1.key');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'A', value: 42 }] }), 400, 'VALIDATION_FAILED', 'upserts.0.value');
    assertError(await api(team.member).patch(url, { upserts: [{ key: 'A', value: 'x', isSecret: 'yes' }] }), 400, 'VALIDATION_FAILED', 'upserts.0.isSecret');
    assertError(await api(team.member).patch(url, { deletes: ['bad key'] }), 400, 'VALIDATION_FAILED', 'deletes.0');
    // a value of exactly 64 KiB is fine
    assert.equal((await api(team.member).patch(url, { upserts: [{ key: 'MAX', value: 'x'.repeat(65536) }] })).status, 200);
    assert.deepEqual((await envOf(p.id)).body.data.map((v: any) => v.key), ['MAX']);
  });
});

describe('optimistic concurrency on env', () => {
  it('GET sends an ETag; PATCH with the current one passes; a stale If-Match is 409 and writes nothing', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    const first = await envOf(p.id);
    const etag = first.headers.get('etag');
    assert.ok(etag);
    // Alice and Bob both read, Alice writes first
    const alice = await api(team.member).patch(url, { upserts: [{ key: 'A', value: 'alice' }] }, { 'if-match': etag! });
    assert.equal(alice.status, 200, alice.text);
    const newTag = alice.headers.get('etag');
    assert.ok(newTag && newTag !== etag);
    const bob = await api(team.owner).patch(url, { upserts: [{ key: 'A', value: 'bob' }] }, { 'if-match': etag! });
    assertError(bob, 409, 'CONFLICT');
    assert.deepEqual(asMap((await envOf(p.id)).body.data), { A: 'alice' });
    assert.equal((await envOf(p.id)).headers.get('etag'), newTag);
    // without If-Match the PATCH merges as usual
    assert.equal((await api(team.owner).patch(url, { upserts: [{ key: 'B', value: 'b' }] })).status, 200);
    assert.equal((await api(team.owner).patch(url, { deletes: ['B'] }, { 'if-match': '*' })).status, 200);
  });

  it('two concurrent PATCHes with the same If-Match: exactly one wins', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    const etag = (await envOf(p.id)).headers.get('etag')!;
    const [a, b] = await Promise.all([
      api(team.member).patch(url, { upserts: [{ key: 'K', value: 'a' }] }, { 'if-match': etag }),
      api(team.owner).patch(url, { upserts: [{ key: 'K', value: 'b' }] }, { 'if-match': etag }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 409]);
  });
});

describe('what an env PATCH leaves in memory', () => {
  it('an env PATCH writes no table a read cache holds (the revision bump is no cache\'s), so the project reads are kept', async () => {
    const p = await createProject(server, team.owner, { name: 'env-quiet' });
    const told: string[] = [];
    const stop = server.ctx.writes.on(['projects', 'domains', 'environments'], (t) => told.push(t));
    try {
      const r = await api(team.owner).patch(`/api/projects/${p.id}/env`, { upserts: [{ key: 'A', value: '1' }, { key: 'S', value: 's', isSecret: true }], deletes: ['B'] });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(told, []);
    } finally {
      stop();
    }
  });
});

describe('env authorization', () => {
  it('404 for another org, 403 for a restricted member without a grant; a read grant reads but cannot PATCH', async () => {
    const p = await createProject(server, team.owner);
    assertError(await api(stranger).get(`/api/projects/${p.id}/env`), 404, 'NOT_FOUND');
    assertError(await api(stranger).patch(`/api/projects/${p.id}/env`, { upserts: [] }), 404, 'NOT_FOUND');
    const org = await createTeam(server);
    const q = await createProject(server, org.owner);
    assertError(await api(org.restricted).get(`/api/projects/${q.id}/env`), 403, 'FORBIDDEN');
    await createGrant(server, org.restricted, 'project', q.id, ['read']);
    assert.equal((await api(org.restricted).get(`/api/projects/${q.id}/env`)).status, 200);
    assertError(await api(org.restricted).patch(`/api/projects/${q.id}/env`, { upserts: [] }), 403, 'FORBIDDEN');
  });
});

describe('logs', () => {
  it('the server log (trace level) never holds a secret value, not even from failed requests', async () => {
    const p = await createProject(server, team.owner);
    const url = `/api/projects/${p.id}/env`;
    await api(team.member).patch(url, { upserts: [{ key: 'LOGGED', value: SECRET, isSecret: true }] });
    await api(team.member).patch(url, { upserts: [{ key: 'bad key', value: SECRET, isSecret: true }] });
    await api(team.member).patch(url, { upserts: [{ key: 'X', value: SECRET + 'x'.repeat(70000), isSecret: true }] });
    await api(team.member).patch(url, { upserts: [{ key: 'LOGGED', value: SECRET }] }, { 'if-match': '"stale.0"' });
    await api(team.member).get(url);
    assert.ok(logged.length > 0, 'the server logged something');
    assert.ok(!logged.includes(SECRET));
  });
});
