/**
 * Backups of managed services by native dump (issue 37 point 4, contract sections 8 and 19), with
 * the host's Debian servers on the `sandbox` runtime: a policy naming a managed service dumps it
 * (`pg_dump -Fc`, mysqldump, Redis BGSAVE + RDB) through the verified pipeline; a restore makes a
 * fresh instance from the artifact, checks it, swaps it in, and the old data is back; a policy with
 * `verifyRestore` restores each new run into a throwaway instance and records `verifiedAt`.
 */
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execIn, serviceRunning } from './helpers.js';
import { createDestination, createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { waitTerminal } from '../backups/helpers.js';
import { startReceiver } from '../notifications/receivers.js';
import { executeVerify } from '../../src/modules/backups/verify-executor.js';

const root = process.getuid?.() === 0;

describe('backups of managed services by native dump', { skip: root ? false : 'the sandbox runs services under project uids only as root' }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  const api = () => server.api(owner.token);
  const runner = () => server.ctx.state.services.runner!;

  before(async () => {
    dir = tempDir('berth-svc-backups-');
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), flags: { runtime: 'sandbox' } });
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const running = (projectId: string, id: string, timeoutMs = 120_000) => serviceRunning(server, owner.token, projectId, id, timeoutMs);


  /** Runs `text` in the PostgreSQL service at its address as its user; answers psql's unaligned output. */
  async function psql(at: { internalHost: string; port: number }, creds: { username: string; password: string; database: string }, text: string): Promise<string> {
    const r = await execIn(at.internalHost, '/usr/bin/psql', ['-At', '-h', at.internalHost, '-p', String(at.port), '-U', creds.username, '-d', creds.database, '-c', text], { PGPASSWORD: creds.password });
    assert.equal(r.code, 0, r.out);
    return r.out.trim();
  }

  /** A managed service of a new project, running, with its credentials, and a policy backing it up (restore-tested). */
  async function serviceWithPolicy(kind: string, name: string) {
    const p = await createProject(server, owner);
    const created = await api().post(`/api/projects/${p.id}/services`, { kind, name });
    assert.equal(created.status, 201, created.text);
    const s = await running(p.id, created.body.data.id);
    const creds = (await api().get(`/api/projects/${p.id}/services/${s.id}/credentials`)).body.data;
    const dest = await createDestination(server, owner);
    const pol = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: s.id, verifyRestore: true });
    assert.equal(pol.status, 201, pol.text);
    assert.equal(pol.body.data.verifyRestore, true);
    return { p, s, creds, dest, policy: pol.body.data };
  }

  /** Runs the policy: succeeded, its artifact final in the destination, restore-tested (`verifiedAt`). */
  async function backUp(policyId: string, dest: { dir: string }, ext: string, secret: string) {
    const runId = (await api().post(`/api/backup-policies/${policyId}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 120_000);
    assert.equal(run.status, 'succeeded', run.error);
    assert.ok(run.sizeBytes > 0 && /^[0-9a-f]{64}$/.test(run.sha256));
    const files = readdirSync(dest.dir, { recursive: true }).map(String);
    assert.ok(files.some((f) => f.endsWith(`${runId}${ext}`)), `the artifact ${runId}${ext} is final: ${files}`);
    assert.ok(!files.some((f) => f.includes('.tmp-')), 'no temporary artifact is left');
    const verified = await waitFor(
      async () => {
        const r = (await api().get(`/api/backup-runs/${runId}`)).body.data;
        return r.verifiedAt || r.verifyError ? r : null;
      },
      'the run restore-tested',
      180_000,
      250,
    );
    assert.equal(verified.verifyError, null, 'the restore test passed');
    assert.ok(!JSON.stringify(verified).includes(secret), 'no secret in the run');
    return runId;
  }

  /** Prepares and applies a restore of the run; it succeeds, and no old or staged data folder is left. */
  async function restore(runId: string, projectId: string, serviceId: string) {
    const prep = await api().post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const { restoreId, confirmationToken } = prep.body.data;
    const applied = await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const r = await waitTerminal(server, owner.token, `/api/backup-restores/${restoreId}`, 240_000);
    assert.equal(r.status, 'succeeded', r.error);
    const svc = await running(projectId, serviceId);
    // The old data goes once the restore is recorded as succeeded.
    const extra = () => readdirSync(runner().volumeDir({ projectId, id: serviceId })).filter((n) => n !== 'data' && n !== 'conf');
    await waitFor(() => extra().length === 0, `only the service's data and configuration left (${extra()})`, 30_000, 100);
    return svc;
  }

  it('postgres: pg_dump -Fc of a managed service, a changed row, a restore into a fresh instance swapped in: the old row is back', async () => {
    const { p, s, creds, dest, policy } = await serviceWithPolicy('postgres', 'main-db');
    const q = (text: string, at = s) => psql(at, creds, text);
    await q("create table notes (id int primary key, body text); insert into notes values (1, 'before')");
    const runId = await backUp(policy.id, dest, '.dump', creds.password);
    await q("update notes set body = 'after' where id = 1; create table later (v int)");
    const again = await restore(runId, p.id, s.id);
    assert.equal(await q('select id, body from notes', again), '1|before');
    assert.equal(await q("select count(*) from pg_tables where tablename = 'later'", again), '0', 'nothing of after the backup is merged in');
    assert.ok(!runner().logs(s.id).join('\n').includes(creds.password), 'the service log has no password');
  });

  it('postgres: an artifact changed between prepare and apply fails the restore on its sha256 while the fresh instance starts; the service keeps its data, and nothing of the fresh one is left', async () => {
    const { p, s, creds, dest, policy } = await serviceWithPolicy('postgres', 'changed-db');
    const q = (text: string) => psql(s, creds, text);
    await q("create table notes (id int primary key, body text); insert into notes values (1, 'before')");
    const runId = await backUp(policy.id, dest, '.dump', creds.password);
    await q("update notes set body = 'after' where id = 1");
    const prep = await api().post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const file = readdirSync(dest.dir, { recursive: true }).map(String).find((f) => f.endsWith(`${runId}.dump`))!;
    writeFileSync(path.join(dest.dir, file), 'not the dump that was written');
    const applied = await api().post(`/api/backup-restores/${prep.body.data.restoreId}/apply`, { confirmationToken: prep.body.data.confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const r = await waitTerminal(server, owner.token, `/api/backup-restores/${prep.body.data.restoreId}`, 240_000);
    assert.equal(r.status, 'failed');
    assert.match(r.error, /sha256/);
    assert.equal(await q('select body from notes where id = 1'), 'after', 'the service was not touched');
    const extra = () => readdirSync(runner().volumeDir({ projectId: p.id, id: s.id })).filter((n) => n !== 'data' && n !== 'conf');
    await waitFor(() => extra().length === 0, `no fresh data folder or its configuration left (${extra()})`, 30_000, 100);
  });

  it('redis: BGSAVE and the RDB file, a changed key, a restore: the old value is back and kept on the next start (append-only file)', async () => {
    const { p, s, creds, dest, policy } = await serviceWithPolicy('redis', 'cache');
    const cli = (at: any, ...args: string[]) => execIn(at.internalHost, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', at.internalHost, '-p', String(at.port), ...args], { REDISCLI_AUTH: creds.password });
    assert.match((await cli(s, 'set', 'greeting', 'before')).out, /OK/);
    assert.match((await cli(s, 'rpush', 'list', 'a', 'b', 'c')).out, /3/);
    const runId = await backUp(policy.id, dest, '.rdb', creds.password);
    await cli(s, 'set', 'greeting', 'after');
    await cli(s, 'set', 'later', 'x');
    const again = await restore(runId, p.id, s.id);
    assert.equal((await cli(again, 'get', 'greeting')).out.trim(), 'before');
    assert.equal((await cli(again, 'llen', 'list')).out.trim(), '3');
    assert.equal((await cli(again, 'exists', 'later')).out.trim(), '0');
    // The restored data is the service's own for good: a restart (loading its append-only file) keeps it.
    assert.equal((await api().post(`/api/projects/${p.id}/services/${s.id}/restart`)).status, 200);
    const third = await running(p.id, s.id);
    assert.equal((await cli(third, 'get', 'greeting')).out.trim(), 'before');
  });

  it('mariadb: mysqldump --single-transaction, a changed row, a restore: the old row is back', async () => {
    const { p, s, creds, dest, policy } = await serviceWithPolicy('mysql', 'shop');
    const sql = (at: any, text: string) => execIn(at.internalHost, '/usr/bin/mariadb', ['--no-defaults', '-h', at.internalHost, '-P', String(at.port), '-u', creds.username, '-D', creds.database, '-N', '-e', text], { MYSQL_PWD: creds.password });
    assert.equal((await sql(s, "create table t (id int primary key, v varchar(20)); insert into t values (1, 'before'); select v from t")).out.trim(), 'before');
    const runId = await backUp(policy.id, dest, '.sql', creds.password);
    await sql(s, "update t set v = 'after'; create table later (v int)");
    const again = await restore(runId, p.id, s.id);
    assert.equal((await sql(again, 'select v from t where id = 1')).out.trim(), 'before');
    assert.equal((await sql(again, "select count(*) from information_schema.tables where table_name = 'later'")).out.trim(), '0');
  });

  it('a restore test that does not pass records verifyError and tells the org\'s channels backup.verify_failed', async () => {
    const receiver = await startReceiver();
    try {
      const ch = (await api().post('/api/notification-channels', { name: 'backups', kind: 'webhook', url: receiver.url('/verify'), events: ['backup.verify_failed'] })).body.data;
      receiver.setSecret(ch.secret);
      const { creds, dest, policy } = await serviceWithPolicy('redis', 'sessions');
      const runId = await backUp(policy.id, dest, '.rdb', creds.password);
      // The artifact changes in the destination after the run: the next restore test must not pass.
      const file = readdirSync(dest.dir, { recursive: true }).map(String).find((f) => f.endsWith(`${runId}.rdb`))!;
      writeFileSync(path.join(dest.dir, file), 'not the dump that was written');
      await server.ctx.db.updateTable('backupRuns').set({ verifiedAt: null }).where('id', '=', runId).execute();
      await executeVerify(server.ctx, runId, owner.orgId);
      const run = (await api().get(`/api/backup-runs/${runId}`)).body.data;
      assert.equal(run.verifiedAt, null);
      assert.match(run.verifyError, /sha256/);
      await server.ctx.jobs.drain();
      const got = receiver.got.filter((g) => g.path === '/verify');
      assert.equal(got.length, 1);
      assert.equal(got[0]!.json.event, 'backup.verify_failed');
      assert.match(got[0]!.json.detail, /restore test did not pass/);
      assert.equal(got[0]!.signatureValid, true);
    } finally {
      await receiver.close();
    }
  });

  it('verifyRestore is refused (400 naming the field) for the data volume, which has no throwaway instance', async () => {
    const p = await createProject(server, owner);
    const dest = await createDestination(server, owner);
    const res = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, verifyRestore: true });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.field, 'verifyRestore');
  });
});
