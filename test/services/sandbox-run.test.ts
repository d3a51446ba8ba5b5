// @store-independent: the runner's processes, namespaces and volumes; the records are managed-api.test.ts's
/**
 * Managed services on the `sandbox` runtime (issue 37 points 1, 2 and 7): the host's Debian
 * PostgreSQL 15, MariaDB and Redis run in a box of the project (its uid, namespaces, cgroup, volume),
 * initialised on first start, `running` once they answer, restarted after a kill -9, stopped, and
 * deleted with their data. No host process reaches a service (app-wiring.test.ts): the test's clients
 * run inside the service's own network namespace (as `berth services connect` would reach it through
 * the API), with the credentials the reveal route gives.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { startReceiver } from '../notifications/receivers.js';
import { execIn, serviceRunning } from './helpers.js';

const root = process.getuid?.() === 0;

describe('managed services on the sandbox runtime', { skip: root ? false : 'the sandbox runs services under project uids only as root' }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  const api = () => server.api(owner.token);
  const runner = () => server.ctx.state.services.runner!;

  before(async () => {
    dir = tempDir('berth-services-');
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), flags: { runtime: 'sandbox' } });
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const running = (projectId: string, id: string, timeoutMs = 90_000) => serviceRunning(server, owner.token, projectId, id, timeoutMs);


  it('postgres 15: initialised on first start as the project, running once it answers; data survives a kill -9', async () => {
    const p = await createProject(server, owner);
    const created = await api().post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main-db' });
    assert.equal(created.status, 201, created.text);
    const s = await running(p.id, created.body.data.id);
    assert.match(s.internalHost, /^10\.88\./, 'a network of its own');
    const creds = (await api().get(`/api/projects/${p.id}/services/${s.id}/credentials`)).body.data;
    const psql = (host: string, port: number, sql: string) => execIn(host, '/usr/bin/psql', ['-h', host, '-p', String(port), '-U', creds.username, '-d', creds.database, '-v', 'ON_ERROR_STOP=1', '-tAc', sql], { PGPASSWORD: creds.password });
    const made = await psql(s.internalHost, s.port, "create table notes (body text); insert into notes values ('kept')");
    assert.equal(made.code, 0, made.out);
    // The server runs as the project's uid, in a cgroup of its own.
    // A backend (the psql session's, an autovacuum worker) may end between the listing and the read:
    // a process that is gone is left out, not a failure.
    const procFile = (pid: number, file: string): string | undefined => {
      try { return readFileSync(`/proc/${pid}/${file}`, 'utf8'); } catch { return undefined; }
    };
    const pids = runner().pids(s.id);
    const uids = pids.flatMap((pid) => { const st = procFile(pid, 'status'); return st ? [Number(/^Uid:\s+(\d+)/m.exec(st)![1])] : []; });
    assert.ok(uids.some((u) => u !== 0), `some process runs as the project's uid: ${uids}`);
    const postmaster = pids.find((pid) => (procFile(pid, 'cmdline') ?? '').split('\0')[0]!.endsWith('/postgres') && (procFile(pid, 'status') ?? '').includes('PPid'));
    assert.ok(postmaster);
    assert.ok(!readFileSync(`/proc/${postmaster}/cmdline`, 'utf8').includes(creds.password), 'no secret in a command line');
    process.kill(postmaster!, 'SIGKILL');
    await waitFor(() => runner().logs(s.id).some((l) => l.includes('postgres exited; starting again')), 'the crash seen and a restart planned', 20_000, 100);
    const again = await running(p.id, s.id);
    assert.equal((await psql(again.internalHost, again.port, 'select body from notes')).out.trim(), 'kept');
    assert.ok(!runner().logs(s.id).join('\n').includes(creds.password), 'the log has no password');
    const logs = await api().get(`/api/projects/${p.id}/services/${s.id}/logs?limit=500`);
    assert.equal(logs.status, 200, logs.text);
    assert.ok(logs.body.data.some((l: { line: string }) => l.line.includes('[berth] ready')), logs.text);
    assert.ok(!logs.text.includes(creds.password));
    // Stop, start, delete with its data.
    assert.equal((await api().patch(`/api/projects/${p.id}/services/${s.id}`, { stopped: true })).body.data.status, 'stopped');
    const volume = runner().volumeDir({ projectId: p.id, id: s.id });
    assert.ok(existsSync(path.join(volume, 'data', 'pgdata', 'PG_VERSION')));
    assert.equal((await api().delete(`/api/projects/${p.id}/services/${s.id}`)).status, 200);
    assert.ok(!existsSync(volume), 'the data went with it');
  });

  it('redis and mariadb from Debian answer with their generated passwords only', async () => {
    const p = await createProject(server, owner);
    const redis = (await api().post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' })).body.data;
    const maria = (await api().post(`/api/projects/${p.id}/services`, { kind: 'mysql', name: 'shop' })).body.data;
    const r = await running(p.id, redis.id);
    const rc = (await api().get(`/api/projects/${p.id}/services/${r.id}/credentials`)).body.data;
    assert.match((await execIn(r.internalHost, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', r.internalHost, '-p', String(r.port), 'set', 'k', 'v'], { REDISCLI_AUTH: rc.password })).out, /OK/);
    assert.match((await execIn(r.internalHost, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', r.internalHost, '-p', String(r.port), 'get', 'k'], { REDISCLI_AUTH: 'wrong' })).out, /WRONGPASS|NOAUTH/);
    const m = await running(p.id, maria.id, 120_000);
    const mc = (await api().get(`/api/projects/${p.id}/services/${m.id}/credentials`)).body.data;
    const sql = (q: string, pw = mc.password) => execIn(m.internalHost, '/usr/bin/mariadb', ['--no-defaults', '-h', m.internalHost, '-P', String(m.port), '-u', mc.username, '-D', mc.database, '-N', '-e', q], { MYSQL_PWD: pw });
    assert.equal((await sql('create table t (v int); insert into t values (7); select v from t')).out.trim(), '7');
    assert.notEqual((await sql('select 1', 'wrong')).code, 0);
    assert.notEqual((await execIn(m.internalHost, '/usr/bin/mariadb', ['--no-defaults', '-h', m.internalHost, '-P', String(m.port), '-u', 'root', '-e', 'select 1'])).code, 0, 'root is not reachable over the network');
  });

  it("a service's data at 90% of its diskMb is disk.near_limit once (its log, the audit log, the org's channels), naming the service", async (t) => {
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const ch = (await api().post('/api/notification-channels', { name: 'disk', kind: 'webhook', url: receiver.url('/disk'), events: ['disk.near_limit'] })).body.data;
    receiver.setSecret(ch.secret);
    const p = await createProject(server, owner, { name: 'ledger' });
    const created = await api().post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache', resources: { diskMb: 128 } });
    assert.equal(created.status, 201, created.text);
    const s = await running(p.id, created.body.data.id);
    const watch = getRuntime(server.ctx).health.disk;
    await watch.round();
    await server.ctx.jobs.drain();
    assert.equal(receiver.got.length, 0, 'an empty data folder is not told');
    // What a database that grew would leave: 120 of its 128 MB written into its data folder.
    writeFileSync(path.join(runner().volumeDir({ projectId: p.id, id: s.id }), 'data', 'grown.bin'), Buffer.alloc(120 * 1024 * 1024, 1));
    await watch.round();
    await watch.round();
    await waitFor(() => receiver.got.length > 0, 'the channel to be told', 20_000);
    await server.ctx.jobs.drain();
    assert.equal(receiver.got.length, 1, 'told once');
    const note = receiver.got[0]!.json;
    assert.equal(note.event, 'disk.near_limit');
    assert.equal(note.subject, 'The data of service cache of ledger is 93% full');
    assert.match(note.detail, /120 MB of its 128 MB limit \(the service's resources\.diskMb\)/);
    assert.ok(runner().logs(s.id).some((l) => l.includes('[berth] the data is 93% full: 120 MB of its 128 MB')), runner().logs(s.id).join('\n'));
    const audit = await server.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', p.id).where('action', '=', 'disk.near_limit').execute();
    assert.equal(audit.length, 1);
    assert.equal(JSON.parse(String(audit[0]!.details)).service, 'cache');
  });
});
