import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeployment, createDestination, createProject, createProjectWithVolume, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { usingPostgres } from '../support/harness.js';
import { runtimeOf } from '../../src/modules/hosting/host.js';
import { fillVolume } from '../backups/helpers.js';
import { randomBytes } from 'node:crypto';
import { openSse, startPair, type Pair } from './pair.js';
import { tgz } from '../uploads/targen.js';
import { rawPost } from '../uploads/upload-client.js';
import { waitFor } from '../support/wait.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from '../../src/db/kysely.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { attachUploadToProject, uploadSourceDir } from '../../src/modules/uploads/index.js';

/** The org's allowance of disk for uploads not deployed yet, lowered for the quota test. */
const ORG_UPLOAD_CAP = 4_000_000;

/**
 * Two instances on one PostgreSQL database and one data dir behave as one (issue 23): what one
 * changes, the other's caches drop at once; what one runs, a client of the other follows live;
 * limits count on both. The runtime side (which instance runs an app, the edge forwarding to it, a
 * kill -9) is test/scale/two-instances.test.ts.
 */
describe('two instances on one database share their state', { skip: usingPostgres() ? false : 'PostgreSQL only: on SQLite one instance serves a data dir' }, () => {
  let pair: Pair;
  let team: TestOrg;
  before(async () => {
    const env = { BERTH_UPLOAD_MAX_ORG_BYTES: String(ORG_UPLOAD_CAP) };
    pair = await startPair({ a: { env }, b: { env } });
    team = await createTeam(pair.a);
  });
  after(() => pair?.close());

  it('a token revoked on A is refused on B at once, though B had just used it', async () => {
    const { a, b } = pair;
    const u = await createUser(a);
    const t = (await a.api(u.token).post('/api/auth/tokens', { name: 'shared' })).body.data;
    assert.equal((await b.api(t.token).get('/api/auth/me')).status, 200);
    assert.equal((await b.api(t.token).get('/api/auth/me')).status, 200); // from B's cache now
    assert.equal((await a.api(u.token).delete(`/api/auth/tokens/${t.id}`)).status, 200);
    assert.equal((await b.api(t.token).get('/api/auth/me')).status, 401);
  });

  it('a member removed on A loses access on B at once', async () => {
    const { a, b } = pair;
    const m = await createUser(a, { orgId: team.orgId, role: 'member' });
    assert.equal((await b.api(m.token).get('/api/projects')).status, 200);
    assert.equal((await a.api(team.owner.token).delete(`/api/permissions/members/${m.userId}`)).status, 200);
    assert.equal((await b.api(m.token).get('/api/projects')).status, 401);
  });

  it("a domain connected on A is in B's next read of the project, though B had just read it", async () => {
    const { a, b } = pair;
    const p = await createProject(a, team.owner, { name: 'shared-routes' });
    const read = async () => (await b.api(team.owner.token).get(`/api/projects/${p.id}`)).body.data;
    assert.deepEqual((await read()).routes.domains, []);
    assert.deepEqual((await read()).routes.domains, []); // from B's cache now
    const r = await a.api(team.owner.token).post(`/api/projects/${p.id}/connect`, { domain: 'shared-routes.example' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      (await read()).routes.domains.map((d: { domain: string }) => d.domain),
      ['shared-routes.example'],
    );
    assert.equal((await a.api(team.owner.token).patch(`/api/projects/${p.id}`, { name: 'renamed-on-a' })).status, 200);
    assert.equal((await read()).name, 'renamed-on-a');
  });

  it("A answers a removal and a rename only once B has heard them, though B's listener runs late", async (t) => {
    const { a, b } = pair;
    const m = await createUser(a, { orgId: team.orgId, role: 'member' });
    const p = await createProject(a, team.owner, { name: 'late-listener' });
    assert.equal((await b.api(m.token).get(`/api/projects/${p.id}`)).status, 200); // cached on B now
    const listener = await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = ${`berth-bus ${b.ctx.instanceId}`}`.execute(a.ctx.db);
    const pid = listener.rows[0]!.pid;
    // B's listener backend stopped, as a busy host's scheduler may leave it after a commit signalled it.
    try {
      process.kill(pid, 'SIGSTOP');
    } catch (err) {
      return t.skip(`cannot stop the database's backend (${(err as NodeJS.ErrnoException).code})`);
    }
    const answered: string[] = [];
    const rename = a.api(team.owner.token).patch(`/api/projects/${p.id}`, { name: 'renamed-late' }).then((r) => (answered.push('rename'), r));
    const removal = a.api(team.owner.token).delete(`/api/permissions/members/${m.userId}`).then((r) => (answered.push('removal'), r));
    try {
      await sleep(400);
      assert.deepEqual(answered, [], 'A waits for B');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    assert.equal((await rename).status, 200);
    assert.equal((await removal).status, 200);
    assert.equal((await b.api(team.owner.token).get(`/api/projects/${p.id}`)).body.data.name, 'renamed-late');
    assert.equal((await b.api(m.token).get(`/api/projects/${p.id}`)).status, 401);
  });

  it('ten failed sign-ins spread over A and B lock the pair on both', async () => {
    const { a, b } = pair;
    const u = await createUser(a);
    for (let i = 0; i < 10; i++) {
      const r = await (i % 2 ? b : a).api().post('/api/auth/login', { email: u.email, password: `wrong-${i}-password` });
      assert.equal(r.status, 401, `attempt ${i + 1}: ${r.text}`);
    }
    for (const s of [a, b]) {
      const r = await s.api().post('/api/auth/login', { email: u.email, password: u.password });
      assert.equal(r.status, 429, r.text);
      assert.equal(r.body.error.code, 'RATE_LIMITED');
    }
  });

  it('a client of B follows the build log of a deployment A builds, and the runtime log and request log of an app A runs', async () => {
    const { a, b } = pair;
    const p = await createProject(a, team.owner, { name: 'shared-logs' });
    const dep = await createDeployment(a, { id: p.id, orgId: team.orgId }, { status: 'building', finished: false });
    const logsA = runtimeOf(a.ctx).logs;
    void runtimeOf(a.ctx).logRelay; // what A's hosting module does when it starts
    const build = await openSse(`${b.url}/api/deployments/${dep}/logs/stream`, team.owner.token);
    const runtime = await openSse(`${b.url}/api/projects/${p.id}/logs/stream`, team.owner.token);
    const requests = await openSse(`${b.url}/api/projects/${p.id}/server-logs/stream`, team.owner.token);
    try {
      assert.equal(build.status, 200);
      assert.equal(runtime.status, 200);
      assert.equal(requests.status, 200);
      // B's streams ask A for notice of these logs first (log-watch): give the request its moment.
      await new Promise((r) => setTimeout(r, 200));
      const ts = () => new Date().toISOString();
      for (let i = 1; i <= 3; i++) logsA.build(p.id, dep).append({ ts: ts(), stream: 'stdout', line: `build step ${i}` });
      logsA.runtime(p.id).append({ ts: ts(), stream: 'stderr', line: 'app says hello' });
      runtimeOf(a.ctx).requests.record(p.id, { ts: ts(), method: 'GET', path: '/served-by-a', status: 200, durationMs: 3, ip: '127.0.0.1', bytes: 12 });
      const lines = await build.until((evs) => evs.filter((e) => e.event === 'log').length >= 3, 'three build lines on B');
      assert.deepEqual(
        lines.filter((e) => e.event === 'log').map((e) => e.data.line),
        ['build step 1', 'build step 2', 'build step 3'],
      );
      const rt = await runtime.until((evs) => evs.some((e) => e.event === 'log'), 'the runtime line on B');
      assert.deepEqual(
        rt.filter((e) => e.event === 'log').map((e) => [e.data.stream, e.data.line]),
        [['stderr', 'app says hello']],
      );
      const req = await requests.until((evs) => evs.some((e) => e.event === 'request'), "the request A's edge served, on B");
      assert.deepEqual(
        req.filter((e) => e.event === 'request').map((e) => [e.data.method, e.data.path, e.data.status]),
        [['GET', '/served-by-a', 200]],
      );
      // The deployment ends (on A): B's build stream closes.
      await a.ctx.db.updateTable('deployments').set({ status: 'failed', finishedAt: ts() }).where('id', '=', dep).execute();
      await build.until(() => build.ended, 'the build stream to close');
    } finally {
      build.close();
      runtime.close();
      requests.close();
    }
  });

  it("B answers server-logs/recent of an app A runs with A's entries (asked over the bus) merged with its own, newest last", async () => {
    const { a, b } = pair;
    const p = await createProject(a, team.owner, { name: 'shared-recent' });
    void runtimeOf(a.ctx).logRelay; // what A's hosting module does when it starts
    const entry = (path: string, ms: number) => ({ ts: new Date(Date.now() - ms).toISOString(), method: 'GET', path, status: 200, durationMs: 1, ip: '127.0.0.1', bytes: 2 });
    // Before A ran the app, B's edge served it once.
    runtimeOf(b.ctx).requests.record(p.id, entry('/served-by-b', 5000));
    for (let i = 1; i <= 3; i++) runtimeOf(a.ctx).requests.record(p.id, entry(`/served-by-a-${i}`, 4000 - i * 1000));
    // A long path and many entries: the answer comes in several bus messages.
    for (let i = 0; i < 60; i++) runtimeOf(a.ctx).requests.record(p.id, entry(`/bulk-${i}/${'x'.repeat(300)}`, 500 - i));
    assert.equal(await runtimeOf(a.ctx).owners.claim(p.id, true), true, 'A claims the app');
    await runtimeOf(b.ctx).owners.tick();
    assert.equal(runtimeOf(b.ctx).owners.heldElsewhere(p.id), true, `B sees A hold it: ${JSON.stringify(runtimeOf(b.ctx).owners.ownerOf(p.id))}`);

    const all = await b.api(team.owner.token).get(`/api/projects/${p.id}/server-logs/recent?limit=1000`);
    assert.equal(all.status, 200, all.text);
    const paths = all.body.data.map((e: { path: string }) => e.path.split('/').slice(0, 2).join('/'));
    assert.deepEqual(paths.slice(0, 4), ['/served-by-b', '/served-by-a-1', '/served-by-a-2', '/served-by-a-3']);
    assert.equal(paths.length, 64);
    assert.equal(paths.at(-1), '/bulk-59');
    const last = await b.api(team.owner.token).get(`/api/projects/${p.id}/server-logs/recent?limit=2`);
    assert.deepEqual(last.body.data.map((e: { path: string }) => e.path.split('/')[1]), ['bulk-58', 'bulk-59']);
    // A answers from its own ring without asking anyone.
    assert.equal((await a.api(team.owner.token).get(`/api/projects/${p.id}/server-logs/recent?limit=1000`)).body.data.length, 63);
  });

  it('a client of B follows the progress of a backup run A executes, to its end', async () => {
    const { a, b } = pair;
    const p = await createProjectWithVolume(a, team.owner);
    fillVolume(p.volume, 3);
    const dest = await createDestination(a, team.owner);
    const pol = await a.api(team.owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id });
    assert.equal(pol.status, 201, pol.text);
    // Neither instance runs jobs yet: the run stays queued while B's client connects.
    const start = await a.api(team.owner.token).post(`/api/backup-policies/${pol.body.data.id}/run`);
    const runId = start.body.data.runId;
    const live = await openSse(`${b.url}/api/backup-runs/${runId}/stream`, team.owner.token);
    try {
      assert.equal(live.status, 200);
      await live.until((evs) => evs.some((e) => e.event === 'snapshot'), 'the snapshot');
      assert.equal(live.events[0]!.data.status, 'queued');
      await a.app.berth.startBackground();
      const events = await live.until(() => live.ended, 'the run to complete on B', 30000);
      const kinds = events.map((e) => e.event);
      assert.equal(kinds[kinds.length - 1], 'complete');
      assert.equal(events[events.length - 1]!.data.status, 'succeeded');
      assert.ok(kinds.includes('progress'), `B saw A's progress events (got ${kinds.join(', ')})`);
      const run = (await b.api(team.owner.token).get(`/api/backup-runs/${runId}`)).body.data;
      assert.equal(run.status, 'succeeded');
    } finally {
      live.close();
    }
  });

  it("an upload attached on A while B looks up the project's source (a build B runs) leaves the new upload in place on both", async () => {
    const { a, b } = pair;
    const p = await a.api(team.owner.token).post('/api/projects', { name: 'attach-across' });
    assert.equal(p.status, 201, p.text);
    const projectId = p.body.data.id as string;
    const uploadOne = async (round: number) => {
      const r = await a.api(team.owner.token).post('/api/projects/folder/session', {});
      assert.equal(r.status, 201, r.text);
      const s = r.body.data as { sessionId: string; url: string; headers: Record<string, string> };
      const sent = await rawPost(s.url, s.headers, tgz([{ path: 'index.html', data: Buffer.from(`round ${round}`) }]));
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      return s.sessionId;
    };
    await attachUploadToProject(a.ctx, team.owner.userId, team.orgId, projectId, await uploadOne(1));
    for (let round = 2; round <= 8; round++) {
      const sessionId = await uploadOne(round);
      // B looks again and again while A attaches: every look must find a source.
      let attached = false;
      const looks: (string | null)[] = [];
      const looking = (async () => {
        while (!attached) looks.push(await uploadSourceDir(b.ctx, team.orgId, projectId));
      })();
      await attachUploadToProject(a.ctx, team.owner.userId, team.orgId, projectId, sessionId).finally(() => (attached = true));
      await looking;
      assert.ok(looks.length > 0 && looks.every((d) => d !== null), `round ${round}: ${looks.filter((d) => d === null).length} of B's ${looks.length} looks found no source`);
      const dir = await uploadSourceDir(b.ctx, team.orgId, projectId);
      assert.ok(dir, `round ${round}: no source on B after the attach`);
      assert.equal(readFileSync(path.join(dir, 'index.html'), 'utf8'), `round ${round}`);
    }
  });

  it("an upload in flight on A counts against the org's allowance on B", async () => {
    const { a, b } = pair;
    const open = async () => {
      const r = await a.api(team.owner.token).post('/api/projects/folder/session', {});
      assert.equal(r.status, 201, r.text);
      return r.body.data as { sessionId: string; url: string; headers: Record<string, string> };
    };
    // About 1.5 MB that does not compress: archive and extracted file hold about 3 MB once received.
    const big = tgz([{ path: 'big.bin', data: randomBytes(1_500_000) }]);
    const first = await open();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const cut = 1_300_000;
    async function* slowly() {
      for (let at = 0; at < cut; at += 65536) yield big.subarray(at, Math.min(cut, at + 65536));
      await held;
      yield big.subarray(cut);
    }
    const onA = rawPost(first.url, first.headers, slowly());
    try {
      // A says in the database what its upload holds so far (about 2.6 MB: archive plus extracted bytes).
      await waitFor(async () => {
        const row = await b.ctx.db.selectFrom('uploadSessions').select('inFlightBytes').where('id', '=', first.sessionId).executeTakeFirst();
        // Enough that B's upload cannot fit beside it (reports come every MiB or second, so an early one may be smaller).
        return Number(row?.inFlightBytes ?? 0) >= 2_000_000;
      }, "A's report of its upload in flight", 15000);
      // On B alone this one would fit (about 2.4 MB of 4); with A's in flight it does not.
      const second = await open();
      const onB = await rawPost(second.url.replace(a.url, b.url), second.headers, tgz([{ path: 'other.bin', data: randomBytes(1_200_000) }]));
      assert.equal(onB.status, 429, JSON.stringify(onB.body));
      assert.equal(onB.body.error.code, 'RATE_LIMITED');
    } finally {
      release();
    }
    assert.equal((await onA).status, 200);
  });
});
