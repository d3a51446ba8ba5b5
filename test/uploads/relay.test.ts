import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sweepUploads } from '../../src/modules/uploads/index.js';
import { testClock } from '../support/clock.js';
import { createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { tgz } from './targen.js';
import { endlessTgz, packDir, rawPost } from './upload-client.js';

const FIX = path.resolve(import.meta.dirname, '../fixtures/detect');

let server: TestServer;
let team: TestOrg;
let other: TestUser;

async function openSession(token: string, body: Record<string, unknown> = {}) {
  const res = await server.api(token).post('/api/projects/folder/session', body);
  assert.equal(res.status, 201, res.text);
  return res.body.data as { sessionId: string; url: string; method: string; headers: Record<string, string>; expiresAt: string };
}

function upload(s: { url: string; headers: Record<string, string> }, body: Buffer | AsyncIterable<Buffer>, extra: Record<string, string> = {}) {
  return rawPost(s.url, { ...s.headers, ...extra }, body);
}

/** Everything under <dataDir>/uploads that belongs to uploads in flight or staged sessions. */
function leftovers(sessionId?: string): string[] {
  const root = path.join(server.dataDir, 'uploads');
  const out: string[] = [];
  for (const sub of ['.tmp', '.sessions']) {
    const d = path.join(root, sub);
    if (!existsSync(d)) continue;
    for (const n of readdirSync(d)) if (!sessionId || n.startsWith(sessionId)) out.push(`${sub}/${n}`);
  }
  return out;
}

async function healthy() {
  const h = await server.api().get('/api/health');
  assert.equal(h.status, 200);
}

const clock = testClock();

before(async () => {
  server = await startTestServer({ clock });
  team = await createTeam(server);
  other = await createUser(server);
});
after(() => server.close());

describe('folder upload: session, relay, scan, ensure', () => {
  it('a session answers the upload target { url, method, headers } and stores only a hash of its token', async () => {
    const s = await openSession(team.member.token, { name: 'web', sizeBytes: 1234 });
    assert.match(s.sessionId, /^upl_/);
    assert.equal(s.method, 'POST');
    assert.equal(s.url, `${server.url}/api/projects/folder/upload/${s.sessionId}`);
    assert.equal(s.headers['content-type'], 'application/gzip');
    const token = s.headers['x-berth-upload-token']!;
    assert.match(token, /^berth_upl_/);
    assert.ok(Date.parse(s.expiresAt) > Date.now());
    const row = await server.ctx.db.selectFrom('uploadSessions').selectAll().where('id', '=', s.sessionId).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(token), 'the token is not stored in clear');
    assert.equal(row.tokenHash, createHash('sha256').update(token).digest('hex'));
  });

  it('a session is refused without project:write, for a project of another org, and above 300 MB', async () => {
    const r1 = await server.api(team.restricted.token).post('/api/projects/folder/session', {});
    assert.equal(r1.status, 403);
    const p = await server.api(other.token).post('/api/projects', { name: 'theirs' });
    assert.equal(p.status, 201, p.text);
    const r2 = await server.api(team.member.token).post('/api/projects/folder/session', { projectId: p.body.data.id });
    assert.equal(r2.status, 404);
    const r3 = await server.api(team.member.token).post('/api/projects/folder/session', { sizeBytes: 300_000_001 });
    assert.equal(r3.status, 413);
    assert.equal(r3.body.error.field, 'sizeBytes');
    const r4 = await server.api().post('/api/projects/folder/session', {});
    assert.equal(r4.status, 401);
  });

  it('the relay takes the tarball with the headers as given, hashes it and extracts it', async () => {
    const s = await openSession(team.member.token);
    const archive = await packDir(path.join(FIX, 'next'));
    const res = await upload(s, archive);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.sessionId, s.sessionId);
    assert.equal(d.sizeBytes, archive.length);
    assert.equal(d.sha256, createHash('sha256').update(archive).digest('hex'));
    assert.ok(d.files >= 3);
    const staged = path.join(server.dataDir, 'uploads', '.sessions', s.sessionId, 'src');
    assert.ok(existsSync(path.join(staged, 'package.json')));
    assert.deepEqual(leftovers().filter((p) => p.startsWith('.tmp')), []);
    // A session takes one upload.
    const again = await upload(s, archive);
    assert.equal(again.status, 409);
  });

  it('the relay accepts application/x-gzip and application/octet-stream, and refuses other types with 415', async () => {
    const archive = tgz([{ path: 'index.html', data: '<h1>hi</h1>' }]);
    for (const type of ['application/x-gzip', 'application/octet-stream']) {
      const s = await openSession(team.member.token);
      const res = await upload(s, archive, { 'content-type': type });
      assert.equal(res.status, 200, `${type}: ${JSON.stringify(res.body)}`);
    }
    const s = await openSession(team.member.token);
    for (const type of ['text/plain', 'application/json', 'multipart/form-data; boundary=x']) {
      const res = await upload(s, archive, { 'content-type': type });
      assert.equal(res.status, 415, type);
      assert.equal(res.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('the relay refuses a missing or wrong upload token with 401, and a bearer alone is not enough', async () => {
    const s = await openSession(team.member.token);
    const archive = tgz([{ path: 'a.txt', data: 'a' }]);
    const wrong = await upload(s, archive, { 'x-berth-upload-token': 'berth_upl_wrong' });
    assert.equal(wrong.status, 401);
    const none = await rawPost(s.url, { 'content-type': 'application/gzip', authorization: `Bearer ${team.member.token}` }, archive);
    assert.equal(none.status, 401);
    const unknown = await rawPost(s.url.replace(s.sessionId, 'upl_doesnotexist000000'), s.headers, archive);
    assert.equal(unknown.status, 401);
    // The session is still usable with the right headers.
    const ok = await upload(s, archive);
    assert.equal(ok.status, 200);
  });

  it('the relay rechecks its creator: downgraded to restricted without a grant is 403, removed from the org is 401', async () => {
    const creator = await createUser(server, { orgId: team.orgId, role: 'member' });
    const archive = tgz([{ path: 'a.txt', data: 'a' }]);
    const s1 = await openSession(creator.token);
    const s2 = await openSession(creator.token);
    await server.ctx.db.updateTable('memberships').set({ role: 'restricted' }).where('orgId', '=', team.orgId).where('userId', '=', creator.userId).execute();
    const downgraded = await upload(s1, archive);
    assert.equal(downgraded.status, 403, JSON.stringify(downgraded.body));
    assert.deepEqual(leftovers(s1.sessionId), []);
    await server.ctx.db.deleteFrom('memberships').where('orgId', '=', team.orgId).where('userId', '=', creator.userId).execute();
    const removed = await upload(s2, archive);
    assert.equal(removed.status, 401, JSON.stringify(removed.body));
  });

  it('a project that lives on the cloud: folder/session and ensure naming it are 409, nothing changes locally', async () => {
    const api = server.api(team.owner.token);
    const created = await api.post('/api/projects', { name: `cloudy-${Date.now()}` });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    await server.ctx.db.updateTable('projects').set({ location: 'cloud' }).where('id', '=', id).execute();
    const session = await api.post('/api/projects/folder/session', { projectId: id });
    assert.equal(session.status, 409, session.text);
    assert.equal(session.body.error.field ?? session.body.error.details?.field, 'projectId');
    const before = await server.ctx.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const ensure = await api.post('/api/projects/ensure', { projectId: id, buildCommand: 'make' });
    assert.equal(ensure.status, 409, ensure.text);
    const after = await server.ctx.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(after, before);
    // Another org still gets 404, as for any record it cannot see.
    assert.equal((await server.api(other.token).post('/api/projects/ensure', { projectId: id })).status, 404);
  });

  it('a Content-Length over 300 MB is refused with 413 before the body is read', async () => {
    const s = await openSession(team.member.token);
    async function* slow() {
      yield Buffer.alloc(1024);
      await new Promise((r) => setTimeout(r, 5000));
      yield Buffer.alloc(1024);
    }
    const t0 = Date.now();
    const res = await upload(s, slow(), { 'content-length': String(300_000_001) });
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'PAYLOAD_TOO_LARGE');
    assert.ok(Date.now() - t0 < 4000, 'answered before the body arrived');
    assert.deepEqual(leftovers(s.sessionId), []);
    await healthy();
  });

  it('a stream passing 300 MB is cut at once with 413; nothing is kept and the server stays healthy', async () => {
    const s = await openSession(team.member.token);
    const res = await upload(s, endlessTgz(400 * 1024 * 1024));
    assert.equal(res.status, 413, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'PAYLOAD_TOO_LARGE');
    assert.ok(res.sent < 340 * 1024 * 1024, `the client could send ${res.sent} bytes`);
    assert.deepEqual(leftovers(s.sessionId), []);
    await healthy();
    // The session can take a proper upload afterwards.
    const ok = await upload(s, tgz([{ path: 'a.txt', data: 'a' }]));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  it('a hostile or corrupt archive is a 400 at upload time and leaves nothing behind', async () => {
    const cases: Buffer[] = [
      tgz([{ path: '../escape.txt', data: 'x' }]),
      tgz([{ path: 'l', type: 'SymbolicLink', linkpath: '/etc' }, { path: 'l/pwn', data: 'x' }]),
      tgz([{ path: 'dev', type: 'CharacterDevice' }]),
      Buffer.from('definitely not gzip'),
      tgz([{ path: 'a.txt', data: 'hello' }]).subarray(0, 30),
    ];
    for (const archive of cases) {
      const s = await openSession(team.member.token);
      const res = await upload(s, archive);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'VALIDATION_FAILED');
      assert.equal(res.body.error.field, 'body');
      assert.deepEqual(leftovers(s.sessionId), []);
    }
    await healthy();
  });

  it('scan detects the build of the uploaded folder', async () => {
    const s = await openSession(team.member.token);
    assert.equal((await upload(s, await packDir(path.join(FIX, 'next')))).status, 200);
    const res = await server.api(team.member.token).post(`/api/projects/folder/scan/${s.sessionId}`);
    assert.equal(res.status, 200, res.text);
    const d = res.body.data;
    for (const k of ['runtime', 'framework', 'packageManager', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'port']) assert.ok(k in d, k);
    assert.equal(d.runtime, 'node');
    assert.equal(d.framework, 'next');
    assert.equal(d.packageManager, 'npm');
    assert.equal(d.buildCommand, 'npm run build');
    assert.equal(d.outputDirectory, '.next');
    assert.ok(Array.isArray(d.apps));
  });

  it('scan is 409 before an upload, 404 for another org, 403 for a restricted member without a grant', async () => {
    const s = await openSession(team.member.token);
    const early = await server.api(team.member.token).post(`/api/projects/folder/scan/${s.sessionId}`);
    assert.equal(early.status, 409);
    const foreign = await server.api(other.token).post(`/api/projects/folder/scan/${s.sessionId}`);
    assert.equal(foreign.status, 404);
    const restricted = await server.api(team.restricted.token).post(`/api/projects/folder/scan/${s.sessionId}`);
    assert.equal(restricted.status, 403);
  });

  it('ensure with gitProvider "upload" and sessionId creates the project with the upload as its source', async () => {
    const s = await openSession(team.member.token);
    assert.equal((await upload(s, await packDir(path.join(FIX, 'express')))).status, 200);
    const res = await server.api(team.member.token).post('/api/projects/ensure', { name: 'uploaded-express', gitProvider: 'upload', sessionId: s.sessionId });
    assert.equal(res.status, 201, res.text);
    const p = res.body.data;
    assert.equal(p.source.type, 'upload');
    assert.equal(p.source.gitProvider, 'upload');
    assert.equal(p.config.framework, 'express', 'config comes from the scan when not given');
    assert.equal(p.config.startCommand, 'npm run start');
    const current = path.join(server.dataDir, 'uploads', p.id, 'current');
    assert.ok(existsSync(path.join(current, 'server.js')));
    assert.equal(JSON.parse(readFileSync(path.join(server.dataDir, 'uploads', p.id, 'source.json'), 'utf8')).sessionId, s.sessionId);
    assert.deepEqual(leftovers(s.sessionId), [], 'the staged copy moved into the project');
    // The session is consumed: another project cannot take it.
    const again = await server.api(team.member.token).post('/api/projects/ensure', { name: 'again', gitProvider: 'upload', sessionId: s.sessionId });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.field, 'sessionId');
    // The same ensure again (a retry, by name or by projectId) is a no-op for the upload: same project, nothing created.
    const retry = await server.api(team.member.token).post('/api/projects/ensure', { name: 'uploaded-express', gitProvider: 'upload', sessionId: s.sessionId });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.data.id, p.id);
    const byId = await server.api(team.member.token).post('/api/projects/ensure', { projectId: p.id, gitProvider: 'upload', sessionId: s.sessionId, buildCommand: 'npm run build' });
    assert.equal(byId.status, 200, byId.text);
    assert.equal(byId.body.data.config.buildCommand, 'npm run build', 'the fields still apply');
    const projects = await server.api(team.member.token).get('/api/projects');
    assert.equal(projects.body.data.filter((x: { name: string }) => x.name === 'uploaded-express').length, 1);
    // Someone who may not change that project cannot reach it through the session either.
    const restricted = await server.api(team.restricted.token).post('/api/projects/ensure', { name: 'uploaded-express', gitProvider: 'upload', sessionId: s.sessionId });
    assert.ok([403, 409].includes(restricted.status), restricted.text);
  });

  it('ensure with projectId and a new upload updates the project in place and replaces its source', async () => {
    const s1 = await openSession(team.member.token);
    assert.equal((await upload(s1, await packDir(path.join(FIX, 'express')))).status, 200);
    const first = await server.api(team.member.token).post('/api/projects/ensure', { name: 'in-place', gitProvider: 'upload', sessionId: s1.sessionId });
    assert.equal(first.status, 201, first.text);
    const id = first.body.data.id;
    const s2 = await openSession(team.member.token, { projectId: id });
    assert.equal((await upload(s2, await packDir(path.join(FIX, 'static-html')))).status, 200);
    const second = await server.api(team.member.token).post('/api/projects/ensure', { projectId: id, gitProvider: 'upload', sessionId: s2.sessionId, buildCommand: 'echo hi' });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.data.id, id);
    assert.equal(second.body.data.config.buildCommand, 'echo hi');
    const current = path.join(server.dataDir, 'uploads', id, 'current');
    assert.ok(existsSync(path.join(current, 'index.html')));
    assert.ok(!existsSync(path.join(current, 'server.js')), 'the old source was replaced');
    const list = await server.api(team.member.token).get('/api/projects');
    assert.equal(list.body.data.filter((p: any) => p.id === id).length, 1);
  });

  it('ensure with a bad sessionId creates nothing', async () => {
    const before = (await server.api(team.member.token).get('/api/projects')).body.data.length;
    const missing = await server.api(team.member.token).post('/api/projects/ensure', { name: 'nope', gitProvider: 'upload', sessionId: 'upl_missing0000000000000' });
    assert.equal(missing.status, 404);
    const s = await openSession(team.member.token);
    const notUploaded = await server.api(team.member.token).post('/api/projects/ensure', { name: 'nope', gitProvider: 'upload', sessionId: s.sessionId });
    assert.equal(notUploaded.status, 409);
    const foreign = await openSession(other.token);
    const otherOrg = await server.api(team.member.token).post('/api/projects/ensure', { name: 'nope', gitProvider: 'upload', sessionId: foreign.sessionId });
    assert.equal(otherOrg.status, 404);
    assert.equal((await server.api(team.member.token).get('/api/projects')).body.data.length, before);
  });

  it('expired sessions and their files are swept; an expired session cannot be uploaded to', async () => {
    const s = await openSession(team.member.token);
    assert.equal((await upload(s, tgz([{ path: 'a.txt', data: 'a' }]))).status, 200);
    assert.deepEqual(leftovers(s.sessionId), [`.sessions/${s.sessionId}`]);
    const s2 = await openSession(team.member.token);
    clock.advance(60 * 60 * 1000 + 1000); // past both sessions' hour
    const late = await upload(s2, tgz([{ path: 'a.txt', data: 'a' }]));
    assert.equal(late.status, 401);
    const out = await sweepUploads(server.ctx);
    assert.ok(out.expired >= 2);
    assert.deepEqual(leftovers(s.sessionId), []);
    const rows = await server.ctx.db.selectFrom('uploadSessions').select('id').where('id', 'in', [s.sessionId, s2.sessionId]).execute();
    assert.deepEqual(rows, []);
  });
});
