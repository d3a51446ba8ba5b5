/**
 * Two real `berth serve` processes on one PostgreSQL database and one data dir behave as one Berth
 * (issue 23, docs/scale-out.md "Several Berth instances on one PostgreSQL"): both start; a project
 * deployed through one answers through both edges while one process runs it (its runtime owner); a
 * deployment enqueued through the other runs once; kill -9 of the owner hands the app and the
 * scheduler lease to the survivor, which then answers every request.
 *
 * PostgreSQL only: SQLite has one instance per data dir (the data dir's flock refuses a second).
 */

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres } from '../support/harness.js';
import { edgeRequest } from '../support/http.js';
import { Instances, type Instance } from '../support/instances.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { appProcessesWith, processesWith, writeTinyApp } from '../runtime/app-fixture.js';

const skip = usingPostgres() ? false : 'several instances share one PostgreSQL; on SQLite one instance runs per data dir (DATABASE_URL is not set)';

/** The parent pid of a process, or 0 when it is gone. */
function parentOf(pid: number): number {
  try {
    const m = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Does `pid` descend from `ancestor` (bounded walk up the process tree)? */
function descendsFrom(pid: number, ancestor: number): boolean {
  let p = pid;
  for (let i = 0; i < 64 && p > 1; i++) {
    if (p === ancestor) return true;
    p = parentOf(p);
  }
  return false;
}

/** A WebSocket handshake through an edge and one echoed message (the tiny app's `/ws`). */
async function websocketEcho(port: number, host: string, message: string): Promise<{ head: string; echoed: boolean }> {
  const sock = net.connect(port, '127.0.0.1');
  try {
    await new Promise((r, j) => {
      sock.once('connect', r);
      sock.once('error', j);
    });
    sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    let buf = '';
    sock.on('data', (d) => (buf += d.toString()));
    await waitFor(() => buf.includes('\r\n\r\n'), 'the answer to the upgrade', 10000, 20);
    const head = buf;
    buf = '';
    sock.write(message);
    const echoed = await waitFor(() => buf.includes(message), 'the echo', 10000, 20).then(
      () => true,
      () => false,
    );
    return { head, echoed };
  } finally {
    sock.destroy();
  }
}

describe('two berth serve instances on one PostgreSQL and one data dir', { skip }, () => {
  let root: string;
  let dataDir: string;
  let appDir: string;
  let db: { url: string; drop(): Promise<void> };
  let sql: pg.Client;
  let instances: Instances | undefined;
  let user: TestUser;
  let projectId: string;
  let host: string;
  const marker = `berth-two-instances-${randomBytes(6).toString('hex')}`;
  let failed = false;

  const owner = async () => (await sql.query('select instance_id, instance_name, address, expires_at from app_owners where app_key = $1', [projectId])).rows[0] as { instance_id: string; instance_name: string; address: string; expires_at: string } | undefined;
  const edge = (i: Instance, pathName = '/', opts: { method?: string; body?: string } = {}) => edgeRequest(i.edgePort, host, pathName, opts);
  // The app's node processes: an instance that stopped its copy may keep a launcher waiting with the same
  // command for its next start there (spare-launchers.ts), which is not the app running.
  const appPids = () => appProcessesWith(marker);

  before(async () => {
    root = tempDir('berth-two-');
    dataDir = path.join(root, 'data');
    appDir = path.join(root, 'local', 'tiny');
    mkdirSync(dataDir, { recursive: true });
    writeTinyApp(appDir, { version: 'v1' });
    db = await freshPostgresDatabase();
    sql = new pg.Client({ connectionString: db.url });
    const secretKey = randomBytes(32).toString('base64');
    const env = { BERTH_SECRET_KEY: secretKey, BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_SIGNUP: 'open', BERTH_HEALTH_TIMEOUT_SECONDS: '20', BERTH_APP_OWNER_TTL_SECONDS: '4' };
    // The records, made in process on the same database and data dir (then that server stops).
    const setup = await startTestServer({ dataDir, databaseUrl: db.url, env });
    try {
      user = await createUser(setup);
      const created = await setup.api(user.token).post('/api/projects', { name: 'Two Instances', startCommand: `node server.js ${marker}` });
      assert.equal(created.status, 201, created.text);
      projectId = created.body.data.id;
      host = `${created.body.data.slug}.localhost`;
      await setup.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', projectId).execute();
    } finally {
      await setup.close();
    }
    await sql.connect();
    // Info lines (ownership moves, takeovers) so that a failure's dump of their output says what happened.
    instances = await Instances.start({ names: ['a', 'b'], dataDir, databaseUrl: db.url, env: { ...env, BERTH_LOG_LEVEL: 'info' } });
  });

  after(async () => {
    await instances?.stopAll(failed);
    for (const pid of processesWith(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sql?.end().catch(() => {});
    await db?.drop();
    rmSync(root, { recursive: true, force: true });
  });

  const step = (name: string, fn: () => Promise<void>) =>
    it(name, async () => {
      try {
        await fn();
      } catch (e) {
        failed = true;
        throw e;
      }
    });

  step('both start on the one data dir, each holding its own instance lock', async () => {
    const [a, b] = instances!.all;
    assert.equal(Number(readFileSync(path.join(dataDir, 'instances', 'a.lock'), 'utf8').trim()), a!.pid);
    assert.equal(Number(readFileSync(path.join(dataDir, 'instances', 'b.lock'), 'utf8').trim()), b!.pid);
    assert.ok(!existsSync(path.join(dataDir, 'berth.lock')), 'no data-dir lock on PostgreSQL');
    for (const i of instances!.all) assert.equal((await fetch(`${i.url}/api/health`)).status, 200);
  });

  step('a project deployed through A answers through both edges, run by one process on its owner', async () => {
    const a = instances!.byName('a');
    const res = await a.api(user.token).post('/api/deployments', { projectId });
    assert.equal(res.status, 202, res.text);
    const done = await waitForDeployment(a.api(user.token), res.body.data.id, 90000);
    assert.equal(done.status, 'ready', done.error);
    const row = await waitFor(owner, 'the owner row', 10000);
    const runner = instances!.byEdge(row.address);
    assert.ok(runner, `the owner row names an instance's edge (${row.address})`);
    assert.equal(row.instance_name, runner.name);
    const answers = await Promise.all(instances!.all.map((i) => edge(i)));
    for (const r of answers) {
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /^hello v1 /);
    }
    assert.equal(answers[0]!.text, answers[1]!.text, 'the same process (same boot token) answers through both edges');
    const pids = appPids();
    assert.ok(pids.length > 0, 'the app runs');
    for (const pid of pids) assert.ok(descendsFrom(pid, runner.pid), `app process ${pid} belongs to the owner ${runner.name}`);
  });

  step("the other instance's edge forwards Host, method, body, the client's address and WebSockets, and never the hop headers", async () => {
    const runner = instances!.byEdge((await owner())!.address)!;
    const other = instances!.all.find((i) => i !== runner)!;
    const echo = await edge(other, '/echo', { method: 'POST', body: 'x'.repeat(200000) });
    assert.equal(echo.status, 200);
    assert.equal(echo.text.length, 200000);
    const seen = JSON.parse((await edge(other, '/headers')).text) as Record<string, string>;
    assert.equal(seen.host, host);
    assert.equal(seen['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen['x-forwarded-host'], host);
    for (const h of ['x-berth-hop', 'x-berth-client', 'x-berth-proto']) assert.equal(seen[h], undefined, `${h} never reaches the app`);
    const ws = await websocketEcho(other.edgePort, host, 'echo-through-two-edges');
    assert.match(ws.head, /^HTTP\/1.1 101/);
    assert.ok(ws.echoed, 'the tunnel carries messages both ways');
    // A client cannot pass for another instance's edge: a made-up hop header is dropped, never believed.
    const forged = await new Promise<string>((resolve, reject) => {
      const s = net.connect(other.edgePort, '127.0.0.1', () => s.write(`GET /headers HTTP/1.1\r\nHost: ${host}\r\nx-berth-hop: guess\r\nx-berth-client: 10.9.9.9\r\nConnection: close\r\n\r\n`));
      let b = '';
      s.on('data', (d) => (b += d.toString()));
      s.on('end', () => resolve(b));
      s.on('error', reject);
    });
    assert.match(forged, /^HTTP\/1.1 200/);
    assert.ok(!forged.includes('10.9.9.9'), 'the forged client address is not believed');
  });

  step('a deployment enqueued through B runs once and its release ends up running on one instance', async () => {
    writeTinyApp(appDir, { version: 'v2' });
    const b = instances!.byName('b');
    const res = await b.api(user.token).post('/api/deployments', { projectId });
    assert.equal(res.status, 202, res.text);
    const id = res.body.data.id as string;
    const done = await waitForDeployment(b.api(user.token), id, 90000);
    assert.equal(done.status, 'ready', done.error);
    const jobs = (await sql.query("select status, attempts from jobs where kind = 'deployment.build' and payload like $1", [`%${id}%`])).rows;
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0].attempts, 1, 'claimed once');
    const logs = await b.api(user.token).get(`/api/deployments/${id}/logs`);
    assert.equal(logs.status, 200);
    assert.equal(logs.body.data.filter((l: { line: string }) => l.line.startsWith(`[berth] building ${id}`)).length, 1, 'built once');
    // The old owner (if it was the other one) stops its copy within a tick or two.
    const runner = await waitFor(async () => {
      const row = await owner();
      const r = row && instances!.byEdge(row.address);
      const pids = appPids();
      if (r && pids.length > 0 && pids.every((p) => descendsFrom(p, r.pid))) return r;
      // Not yet: what is seen, so that a timeout says where it stuck.
      const whose = (p: number) => instances!.all.find((i) => descendsFrom(p, i.pid))?.name ?? `none (parent ${parentOf(p)})`;
      throw new Error(`owner ${row ? `${row.instance_name} until ${row.expires_at}` : 'none'}; app processes ${pids.map((p) => `${p} of ${whose(p)}`).join(', ') || 'none'}`);
    }, 'the app to run on its owner only', 20000).catch((e) => {
      for (const i of instances!.all) console.log(`--- output of instance ${i.name}\n${i.serve.output().slice(-6000)}`);
      throw e;
    });
    const answers = await Promise.all(instances!.all.map((i) => edge(i)));
    for (const r of answers) assert.match(r.text, /^hello v2 /);
    assert.equal(answers[0]!.text, answers[1]!.text);
    assert.ok(runner);
  });

  step('kill -9 of the owner: the other takes the app over and serves it, holds the scheduler lease, and answers no 5xx after the takeover', async () => {
    const before = (await owner())!;
    const dead = instances!.byEdge(before.address)!;
    const survivor = instances!.all.find((i) => i !== dead)!;
    await dead.kill();
    const row = await waitFor(async () => {
      const r = await owner();
      return r && r.instance_id !== before.instance_id ? r : null;
    }, 'the survivor to take the app over', 30000);
    assert.equal(row.address, survivor.edgeUrl);
    assert.equal(row.instance_name, survivor.name);
    await waitFor(async () => (await edge(survivor)).status === 200, 'the app to answer through the survivor', 30000);
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await edge(survivor)).status);
    assert.deepEqual(
      statuses.filter((s) => s >= 500),
      [],
      'no 5xx after the takeover',
    );
    assert.match((await edge(survivor)).text, /^hello v2 /);
    for (const pid of appPids()) assert.ok(descendsFrom(pid, survivor.pid), 'the app runs under the survivor only');
    // The scheduler lease ends with the survivor (its holder is the process id the owner row names).
    await waitFor(async () => {
      const lease = (await sql.query("select holder from leases where name = 'scheduler'")).rows[0] as { holder: string } | undefined;
      return lease?.holder === row.instance_id;
    }, 'the scheduler lease to move to the survivor', 60000, 250);
  });
});
