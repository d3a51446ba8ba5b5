/**
 * A preview environment's own instances of the project's managed services (contract section 19,
 * issue 37 point 3), on the `sandbox` runtime with the host's PostgreSQL and Redis: what the
 * preview's app and builds get (`envForRun`, what every start and build of it runs with) points at
 * instances of its own; writes there do not show in production; a service with `seedFrom:
 * "production"` starts the preview's instance from production's last succeeded backup; removing the
 * preview removes its instances and their data.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envForRun } from '../../src/modules/hosting/run-env.js';
import { execIn, serviceRunning } from './helpers.js';
import { createDestination, createProject, createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitTerminal } from '../backups/helpers.js';

const root = process.getuid?.() === 0;

describe("a preview environment's own managed services", { skip: root ? false : 'the sandbox runs services under project uids only as root' }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  const api = () => server.api(owner.token);

  before(async () => {
    dir = tempDir('berth-svc-previews-');
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), databaseUrl: pg?.url, flags: { runtime: 'sandbox' } });
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** psql with the parts an app gets (`PGHOST`, ...), from inside the service's network like the app's box. */
  async function psql(env: Record<string, string>, text: string): Promise<string> {
    const r = await execIn(env.PGHOST!, '/usr/bin/psql', ['-At', '-h', env.PGHOST!, '-p', env.PGPORT!, '-U', env.PGUSER!, '-d', env.PGDATABASE!, '-c', text], { PGPASSWORD: env.PGPASSWORD! });
    assert.equal(r.code, 0, r.out);
    return r.out.trim();
  }

  async function redis(url: string, ...args: string[]): Promise<string> {
    const u = new URL(url);
    const r = await execIn(u.hostname, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', u.hostname, '-p', u.port, ...args], { REDISCLI_AUTH: decodeURIComponent(u.password) });
    assert.equal(r.code, 0, r.out);
    return r.out.trim();
  }

  it("gets its own instances: a seeded PostgreSQL holds production's backed-up rows, an empty Redis; writes stay in the preview; removing it removes them", async () => {
    const p = await createProject(server, owner);
    const db = await api().post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main-db', seedFrom: 'production' });
    assert.equal(db.status, 201, db.text);
    assert.equal(db.body.data.seedFrom, 'production');
    const cache = await api().post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' });
    assert.equal(cache.body.data.seedFrom, null, 'empty previews by default');
    await serviceRunning(server, owner.token, p.id, db.body.data.id, 120_000);
    await serviceRunning(server, owner.token, p.id, cache.body.data.id, 120_000);

    const prod = (await envForRun(server.ctx, owner.orgId, p.id, 'production')).env;
    await psql(prod, "create table notes (body text); insert into notes values ('backed up')");
    assert.match(await redis(prod.REDIS_URL!, 'set', 'greeting', 'production'), /OK/);

    // Production's backup, then a row written after it: the seed is the backup, not the live data.
    const dest = await createDestination(server, owner);
    const policy = (await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: db.body.data.id })).body.data;
    const runId = (await api().post(`/api/backup-policies/${policy.id}/run`)).body.data.runId;
    assert.equal((await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 120_000)).status, 'succeeded');
    await psql(prod, "insert into notes values ('after the backup')");

    const made = await api().post(`/api/projects/${p.id}/environments`, { name: 'pr-7', branch: 'feature' });
    assert.equal(made.status, 201, made.text);
    const preview = await envForRun(server.ctx, owner.orgId, p.id, 'pr-7');
    const env = preview.env;
    assert.notEqual(env.DATABASE_URL, prod.DATABASE_URL);
    assert.notEqual(env.PGHOST, prod.PGHOST, 'its own instance, at its own address');
    assert.notEqual(env.PGPASSWORD, prod.PGPASSWORD, 'with credentials of its own');
    assert.ok(preview.secrets.includes(env.PGPASSWORD!), 'its password is redacted from its builds and logs');
    assert.equal(await psql(env, 'select body from notes order by body'), 'backed up', "production's last backup, nothing later");
    assert.equal(await redis(env.REDIS_URL!, 'exists', 'greeting'), '0', 'an empty Redis');

    // Writes in the preview stay there.
    await psql(env, "insert into notes values ('preview only')");
    assert.match(await redis(env.REDIS_URL!, 'set', 'greeting', 'preview'), /OK/);
    assert.equal(await psql(prod, 'select body from notes order by body'), 'after the backup\nbacked up');
    assert.equal(await redis(prod.REDIS_URL!, 'get', 'greeting'), 'production');

    // The preview's instances are listed with its name; production's list is unchanged.
    const listed = (await api().get(`/api/projects/${p.id}/services?environment=pr-7`)).body.data;
    assert.deepEqual(listed.map((s: any) => [s.name, s.environment, s.status]).sort(), [['cache', 'pr-7', 'running'], ['main-db', 'pr-7', 'running']]);
    const prodList = (await api().get(`/api/projects/${p.id}/services`)).body.data.filter((s: any) => s.managed);
    assert.deepEqual(prodList.map((s: any) => s.id).sort(), [db.body.data.id, cache.body.data.id].sort());
    assert.equal((await api().get(`/api/projects/${p.id}/services?environment=nope`)).status, 404);
    // A second start of the preview's app finds the same instances.
    assert.equal((await envForRun(server.ctx, owner.orgId, p.id, 'pr-7')).env.DATABASE_URL, env.DATABASE_URL);

    // Removing the preview removes its instances and their data; production's keep running.
    const dirs = listed.map((s: any) => server.ctx.state.services.runner!.volumeDir({ projectId: p.id, id: s.id }));
    assert.ok(dirs.every((d: string) => existsSync(d)));
    assert.equal((await api().delete(`/api/projects/${p.id}/environments/pr-7`)).status, 200);
    assert.deepEqual((await server.ctx.db.selectFrom('managedServices').select('id').where('environment', '=', 'pr-7').execute()), []);
    assert.ok(dirs.every((d: string) => !existsSync(d)), 'their data folders are gone');
    assert.ok(listed.every((s: any) => server.ctx.state.services.runner!.pids(s.id).length === 0), 'their processes are gone');
    assert.equal(await psql(prod, 'select count(*) from notes'), '2');
  });
});
