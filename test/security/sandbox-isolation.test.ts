// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
// Isolation (issue 14, contract section 10): a probe app and a probe build step of one tenant,
// deployed through the upload flow under the default sandbox driver, try each attack of the outside
// review against the server and a second tenant, and fail.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { getRuntime } from '../../src/modules/hosting/host.js';
import { processesWith, writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor } from '../support/wait.js';
import { deployUpload, writeProbe } from './sandbox-probe.js';
import { edgeRequest, type EdgeAnswer } from '../support/http.js';

const ready = getuidIsRoot() && spawnSync('bwrap', ['--version']).status === 0;
function getuidIsRoot(): boolean {
  return process.getuid?.() === 0;
}

let root: string;
let server: TestServer;
let attacker: TestUser;
let victim: TestUser;
let probe: { projectId: string; slug: string; deployment: any };
let other: { projectId: string; slug: string; deployment: any };
const MARKER = `berth-probe-detached-${process.pid}`;

function edge(host: string, p = '/'): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(server.ctx).edgePort(), host, p);
}
const ask = async (p: string) => (await edge(`${probe.slug}.localhost`, p)).text;

before(async () => {
  if (!ready) return;
  root = tempDir('berth-iso-');
  server = await startTestServer({ background: true, env: { BERTH_SLEEP_IDLE_SECONDS: '3600' } });
  attacker = await createUser(server);
  victim = await createUser(server);
  // The victim: another org's app with a secret in its environment and a file in its volume.
  const vdir = writeTinyApp(path.join(root, 'victim'), { version: 'victim' });
  other = await deployUpload(server, victim.token, vdir, 'victim-app', async (id) => {
    const env = await server.api(victim.token).patch(`/api/projects/${id}/env`, { environment: 'production', upserts: [{ key: 'VICTIM_SECRET', value: 'victim-secret-value-123', isSecret: true }], deletes: [] });
    assert.equal(env.status, 200, env.text);
  });
  assert.equal(other.deployment.status, 'ready', other.deployment.error);
  mkdirSync(path.join(server.dataDir, 'volumes', other.projectId, 'data'), { recursive: true });
  writeFileSync(path.join(server.dataDir, 'volumes', other.projectId, 'data', 'private.txt'), 'the victim data');

  const pdir = writeProbe(path.join(root, 'probe'));
  probe = await deployUpload(server, attacker.token, pdir, 'probe-app', async (id) => {
    const api = server.api(attacker.token);
    assert.equal((await api.patch(`/api/projects/${id}`, { buildCommand: 'node build.js' })).status, 200);
    const vars = {
      PROBE_SECRET_KEY: path.join(server.dataDir, 'secret.key'),
      PROBE_DATABASE: path.join(server.dataDir, 'berth.db'),
      PROBE_OTHER_VOLUME: path.join(server.dataDir, 'volumes', other.projectId, 'data'),
      PROBE_SERVER_PID: String(process.pid),
      PROBE_MARKER: MARKER,
    };
    const env = await api.patch(`/api/projects/${id}/env`, { environment: 'production', upserts: Object.entries(vars).map(([key, value]) => ({ key, value, isSecret: false })), deletes: [] });
    assert.equal(env.status, 200, env.text);
  });
  assert.equal(probe.deployment.status, 'ready', probe.deployment.error);
  // The server holds a secret key file of its own (the harness passes BERTH_SECRET_KEY; write one as it would).
  writeFileSync(path.join(server.dataDir, 'secret.key'), 'c2VjcmV0LWtleS1vZi10aGUtc2VydmVy\n', { mode: 0o600 });
});

after(async () => {
  if (!ready) return;
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const skip = !ready && 'needs root and bubblewrap (the sandbox driver as the server runs it in production)';

async function buildLines(): Promise<string[]> {
  const r = await server.api(attacker.token).get(`/api/deployments/${probe.deployment.id}/logs?limit=1000`);
  return r.body.data.map((l: any) => l.line);
}

test('apps and build steps run as their project\'s own uid, never 0 or the server\'s, and two projects differ', { skip }, async () => {
  const me = JSON.parse(await ask('/whoami'));
  assert.notEqual(me.uid, 0);
  assert.notEqual(me.uid, process.getuid!());
  assert.equal(me.data, '/data');
  assert.equal(me.cwd, '/app');
  assert.ok(me.procs <= 4, `the app's /proc lists only its sandbox: ${me.procs}`);
  const rows = await server.ctx.db.selectFrom('sandboxIdentities').select(['projectId', 'uid']).execute();
  const uidOf = new Map(rows.map((r) => [r.projectId, Number(r.uid)]));
  assert.equal(uidOf.get(probe.projectId), me.uid);
  assert.notEqual(uidOf.get(other.projectId), me.uid);
  const lines = await buildLines();
  assert.ok(lines.includes(`probe uid: ok ${me.uid}`), lines.join('\n'));
  assert.ok(lines.includes('probe write-app: ok written'), 'a build step writes its release');
  const info = await server.api(attacker.token).get(`/api/projects/${probe.projectId}/info`);
  assert.equal(info.body.data.runtime.isolation, 'sandbox');
});

test('neither the app nor the build can read the secret key, the database or another org\'s volume', { skip }, async () => {
  for (const f of ['secret.key', 'berth.db', 'berth.db-wal']) {
    assert.match(await ask(`/read?path=${encodeURIComponent(path.join(server.dataDir, f))}`), /^err (ENOENT|EACCES)/, f);
  }
  assert.match(await ask(`/list?path=${encodeURIComponent(server.dataDir)}`), /^err (ENOENT|EACCES)/);
  assert.match(await ask(`/list?path=${encodeURIComponent(path.join(server.dataDir, 'volumes', other.projectId, 'data'))}`), /^err (ENOENT|EACCES)/);
  assert.match(await ask(`/read?path=/proc/1/environ`), /^err (ENOENT|EACCES)/, "the sandbox's own launcher is root's");
  assert.match(await ask('/write?path=/app/x'), /^err (EROFS|EACCES)/, 'the running release is read-only');
  const lines = await buildLines();
  for (const what of ['secret-key', 'database', 'other-volume']) {
    assert.ok(lines.some((l) => new RegExp(`^probe ${what}: err (ENOENT|EACCES)$`).test(l)), `${what}: ${lines.filter((l) => l.startsWith('probe')).join(' | ')}`);
  }
});

test("another tenant's process environment is out of reach, and the server cannot be signalled", { skip }, async () => {
  const victimPid = getRuntime(server.ctx).supervisor.snapshot(other.projectId)?.pid;
  assert.ok(victimPid && victimPid > 1);
  // The victim's processes as the host numbers them: none is visible in the probe's PID namespace.
  const victimPids = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).filter((n) => {
    try {
      return readFileSync(`/proc/${n}/environ`, 'utf8').includes('VICTIM_SECRET=');
    } catch {
      return false;
    }
  });
  assert.ok(victimPids.length > 0);
  for (const pid of victimPids) {
    const r = await ask(`/read?path=/proc/${pid}/environ`);
    assert.ok(!r.startsWith('ok'), `environ of host pid ${pid}: ${r}`);
  }
  assert.match(await ask(`/kill?pid=${process.pid}`), /^err (ESRCH|EPERM)/);
  assert.ok((await buildLines()).some((l) => /^probe kill-server: err (ESRCH|EPERM)$/.test(l)));
  assert.equal((await server.api(attacker.token).get('/api/auth/me')).status, 200, 'the server is alive');
});

test('a port the app binds is reachable neither from the host nor from another sandbox; only the edge reaches PORT', { skip }, async () => {
  assert.equal(await ask('/bind?port=4567'), 'ok');
  const sandboxHost = getRuntime(server.ctx).supervisor.upstreamNow(probe.projectId)!.host;
  assert.notEqual(sandboxHost, '127.0.0.1');
  const tryConnect = (host: string, port: number) =>
    new Promise<string>((resolve) => {
      const s = net.connect(port, host);
      s.setTimeout(1500, () => {
        s.destroy();
        resolve('timeout');
      });
      s.on('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
  assert.notEqual(await tryConnect('127.0.0.1', 4567), 'connected', 'the host loopback does not have it');
  assert.notEqual(await tryConnect(sandboxHost, 4567), 'connected', 'the sandbox admits nothing but PORT');
  // Another local user cannot reach the app's PORT around the edge.
  const port = getRuntime(server.ctx).supervisor.upstreamNow(probe.projectId)!.port;
  const asNobody = spawnSync(process.execPath, ['-e', `const s=require('net').connect(${port},'${sandboxHost}');s.setTimeout(1500,()=>{console.log('timeout');process.exit(0)});s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',(e)=>{console.log(e.code);process.exit(0)})`], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10000 });
  assert.notEqual(asNobody.stdout.trim(), 'connected', asNobody.stderr);
  // The app cannot reach the host's services (the API, PostgreSQL) nor the other tenant's sandbox.
  const apiPort = new URL(server.url).port;
  assert.match(await ask(`/connect?host=127.0.0.1&port=${apiPort}`), /^err/);
  const hostSide = sandboxHost.replace(/\.(\d+)$/, (_, n) => `.${Number(n) - 1}`);
  assert.match(await ask(`/connect?host=${hostSide}&port=${apiPort}`), /^err/);
  if (usingPostgres()) {
    const pg = new URL(process.env.DATABASE_URL!);
    assert.match(await ask(`/connect?host=${pg.hostname}&port=${pg.port}`), /^err/);
  }
  const victimUp = getRuntime(server.ctx).supervisor.upstreamNow(other.projectId)!;
  assert.match(await ask(`/connect?host=${victimUp.host}&port=${victimUp.port}`), /^err/);
  // The edge still serves it.
  assert.match(await ask('/'), /^probe \d+/);
});

test('the app cannot leave its cgroup', { skip }, async () => {
  const r = await ask('/cgescape');
  assert.ok(!r.split(',').includes('ok'), r);
  const pid = getRuntime(server.ctx).supervisor.snapshot(probe.projectId)!.pid!;
  const appPids = processesWith('server.js').filter((p) => {
    try {
      return readFileSync(`/proc/${p}/environ`, 'utf8').includes(`BERTH_PROJECT_ID=${probe.projectId}`) && readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'node';
    } catch {
      return false;
    }
  });
  assert.equal(appPids.length, 1, 'one copy of the app runs');
  assert.ok(pid > 0);
  assert.match(readFileSync(`/proc/${appPids[0]}/cgroup`, 'utf8'), /berth\/[0-9a-f]+\/app-/);
});

test('a detached child of a build step does not outlive the step, nor one of the app its stop', { skip }, async () => {
  const lines = await buildLines();
  assert.ok(lines.includes('probe detached: started'), lines.join('\n'));
  assert.deepEqual(processesWith(MARKER), [], 'the build left nothing behind');
  const appMarker = `${MARKER}-app`;
  assert.equal(await ask(`/detach?marker=${appMarker}`), 'ok');
  await waitFor(async () => processesWith(appMarker).length === 1, 'the detached child to start', 5000);
  const api = server.api(attacker.token);
  assert.equal((await api.post(`/api/projects/${probe.projectId}/disable`)).status, 200);
  await waitFor(async () => processesWith(appMarker).length === 0, 'the detached child to die with its app', 15000);
  assert.equal((await api.post(`/api/projects/${probe.projectId}/enable`)).status, 200);
  await waitFor(async () => ((await edge(`${probe.slug}.localhost`)).status === 200 ? true : null), 'the app to come back', 30000, 200);
});

test('a build step that forks without end stops at the process limit, and the server keeps answering', { skip }, async () => {
  const line = (await buildLines()).find((l) => l.startsWith('probe forked: '));
  const n = Number(line?.slice('probe forked: '.length));
  assert.ok(n > 10 && n < 512, `forked ${n} before the limit (pidsMax 512)`);
  assert.equal((await server.api(attacker.token).get('/api/auth/me')).status, 200);
});

test('an app that takes more memory than its limit is killed by it and restarted', { skip }, async () => {
  const api = server.api(attacker.token);
  assert.equal((await api.patch(`/api/projects/${probe.projectId}/resources`, { production: { memoryMb: 64 } })).status, 200);
  await api.post(`/api/projects/${probe.projectId}/disable`);
  await api.post(`/api/projects/${probe.projectId}/enable`);
  await waitFor(async () => ((await edge(`${probe.slug}.localhost`)).status === 200 ? true : null), 'the app at 64 MB', 30000, 200);
  await edge(`${probe.slug}.localhost`, '/hog?mb=200').catch(() => null);
  const log = await waitFor(async () => {
    const r = await api.get(`/api/projects/${probe.projectId}/logs?limit=200`);
    return r.body.data.find((l: any) => /\[berth\] the app exited \(SIGKILL\)/.test(l.line));
  }, 'the out-of-memory kill', 20000, 200);
  assert.ok(log);
});
