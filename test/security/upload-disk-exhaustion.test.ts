/**
 * Issue 15, point 6 (upload disk exhaustion): four 1 MB uploads by a member filled 3.9 GB (each
 * archive expanded to a gigabyte), nothing capped what an org kept, and unconsumed uploads stayed a
 * day. Now (contract section 17): at most 5 open sessions per user and 2 GiB of stored, unconsumed
 * upload bytes per org (archive plus extracted files; over: 429 RATE_LIMITED with Retry-After), and
 * unconsumed uploads are removed an hour after they arrive by a sweep that runs every minute.
 * The org cap is lowered to 1 MB here (BERTH_UPLOAD_MAX_ORG_BYTES); the session cap runs at its default.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { SWEEP_EVERY_MS, sweepUploads } from '../../src/modules/uploads/index.js';
import { testClock } from '../support/clock.js';
import { createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { tgz } from '../uploads/targen.js';
import { rawPost } from '../uploads/upload-client.js';

const CAP = 1_000_000;

let server: TestServer;
let team: TestOrg;
const clock = testClock();
const HOUR = 60 * 60 * 1000;

before(async () => {
  // '' = the contract's default (the harness raises the session cap for other suites).
  server = await startTestServer({ clock, env: { BERTH_UPLOAD_MAX_OPEN_SESSIONS: '', BERTH_UPLOAD_MAX_ORG_BYTES: String(CAP) } });
  team = await createTeam(server);
});
after(() => server.close());

async function open(token: string) {
  return server.api(token).post('/api/projects/folder/session', {});
}

async function openOk(token: string) {
  const res = await open(token);
  assert.equal(res.status, 201, res.text);
  return res.body.data as { sessionId: string; url: string; headers: Record<string, string> };
}

const zeros = (n: number, name = 'blob.bin') => tgz([{ path: name, data: Buffer.alloc(n) }]);

function leftovers(sessionId: string): string[] {
  const root = path.join(server.dataDir, 'uploads');
  const out: string[] = [];
  for (const sub of ['.tmp', '.sessions']) {
    const d = path.join(root, sub);
    if (existsSync(d)) for (const n of readdirSync(d)) if (n.startsWith(sessionId)) out.push(`${sub}/${n}`);
  }
  return out;
}

function assertLimited(res: { status: number; body: any; headers: Record<string, any> | Headers }, what: string) {
  assert.equal(res.status, 429, `${what}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error.code, 'RATE_LIMITED');
  const ra = Number(res.headers instanceof Headers ? res.headers.get('retry-after') : res.headers['retry-after']);
  assert.ok(ra >= 1 && ra <= 3600, `Retry-After ${ra}`);
}

describe('upload disk exhaustion', () => {
  it('the contract\'s defaults: 5 open sessions per user, 2 GiB per org, a sweep every minute', () => {
    const c = loadConfig({}, { BERTH_DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv);
    assert.deepEqual(c.hardening.uploads, { maxOpenSessionsPerUser: 5, maxOrgBytes: 2 * 1024 ** 3 });
    assert.ok(SWEEP_EVERY_MS <= 60_000);
  });

  it('the 6th open session of a user is 429 with Retry-After; others of the org are not affected; a used one frees a place', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'member' });
    const sessions = [];
    for (let i = 0; i < 5; i++) sessions.push(await openOk(u.token));
    assertLimited(await open(u.token), '6th session');
    // Per user: a colleague still opens one.
    await openOk(team.member.token);
    // An upload made a project's source (consumed) is no longer open.
    const s = sessions[0]!;
    assert.equal((await rawPost(s.url, s.headers, tgz([{ path: 'index.html', data: '<p>hi</p>' }]))).status, 200);
    const ensured = await server.api(u.token).post('/api/projects/ensure', { name: `p-${s.sessionId.slice(-6)}`, gitProvider: 'upload', sessionId: s.sessionId });
    assert.ok(ensured.status === 200 || ensured.status === 201, ensured.text);
    await openOk(u.token);
    assertLimited(await open(u.token), 'again at 5');
    // Expired ones are not open either: an hour on, five places again.
    clock.advance(HOUR + 1000);
    for (let i = 0; i < 5; i++) await openOk(u.token);
    assertLimited(await open(u.token), 'again at 5 after the expiry');
  });

  it('an upload that would take the org past its byte cap is 429, and nothing of it is kept', async () => {
    const a = await openOk(team.owner.token);
    const first = await rawPost(a.url, a.headers, zeros(600_000));
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const row = await server.ctx.db.selectFrom('uploadSessions').select(['storedBytes', 'sizeBytes']).where('id', '=', a.sessionId).executeTakeFirstOrThrow();
    assert.equal(Number(row.storedBytes), Number(row.sizeBytes) + 600_000, 'the archive and its extracted files both count');

    // A small archive that expands past what is left (the review's 1 MB that became 1 GB).
    const b = await openOk(team.owner.token);
    const archive = zeros(600_000);
    assert.ok(archive.length < 5000);
    assertLimited(await rawPost(b.url, b.headers, archive), 'over the org cap');
    assert.deepEqual(leftovers(b.sessionId), [], 'nothing of the refused upload stays on disk');
    const rowB = await server.ctx.db.selectFrom('uploadSessions').select('status').where('id', '=', b.sessionId).executeTakeFirstOrThrow();
    assert.equal(rowB.status, 'open');

    // What fits still fits; and another org has its own allowance.
    assert.equal((await rawPost(b.url, b.headers, zeros(300_000))).status, 200);
    const stranger = await createUser(server);
    const c = await openOk(stranger.token);
    assert.equal((await rawPost(c.url, c.headers, zeros(900_000))).status, 200);
  });

  it('an org at or over its byte cap cannot open a session (429) until its uploads are consumed or expire', async () => {
    const org = await createUser(server);
    const a = await openOk(org.token);
    assert.equal((await rawPost(a.url, a.headers, zeros(500_000))).status, 200);
    const held = Number((await server.ctx.db.selectFrom('uploadSessions').select('storedBytes').where('id', '=', a.sessionId).executeTakeFirstOrThrow()).storedBytes);
    const limits = server.ctx.config.hardening.uploads;
    try {
      // As if the operator had set BERTH_UPLOAD_MAX_ORG_BYTES to what the org holds, then below it.
      limits.maxOrgBytes = held;
      assertLimited(await open(org.token), 'org at its cap');
      limits.maxOrgBytes = held - 1;
      assertLimited(await open(org.token), 'org over its cap');
      // Once that upload expires (and is swept), the org may upload again.
      clock.advance(HOUR + 1000);
      await sweepUploads(server.ctx);
      assert.deepEqual(leftovers(a.sessionId), []);
      await openOk(org.token);
    } finally {
      limits.maxOrgBytes = CAP;
    }
  });

  it('unconsumed uploads expire an hour after they arrive and the sweep removes them and their files', async () => {
    const u = await createUser(server);
    const s = await openOk(u.token);
    const up = await rawPost(s.url, s.headers, tgz([{ path: 'a.txt', data: 'a' }]));
    assert.equal(up.status, 200);
    const expires = Date.parse(up.body.data.expiresAt);
    assert.ok(expires <= clock.now() + HOUR + 5000, 'an hour, not a day');
    const never = await openOk(u.token);
    assert.deepEqual(leftovers(s.sessionId), [`.sessions/${s.sessionId}`]);
    // Nothing is removed before its time...
    clock.advance(30 * 60 * 1000);
    await sweepUploads(server.ctx);
    assert.deepEqual(leftovers(s.sessionId), [`.sessions/${s.sessionId}`]);
    // ...and everything unconsumed is removed after it (the sweep driven an hour and a minute on).
    clock.advance(31 * 60 * 1000);
    const out = await sweepUploads(server.ctx);
    assert.ok(out.expired >= 2, JSON.stringify(out));
    assert.deepEqual(leftovers(s.sessionId), []);
    const rows = await server.ctx.db.selectFrom('uploadSessions').select('id').where('id', 'in', [s.sessionId, never.sessionId]).execute();
    assert.deepEqual(rows, []);
  });
});
