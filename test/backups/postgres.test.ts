import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createDestination, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitTerminal } from './helpers.js';

const CLUSTER = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:41167/postgres';

async function reachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: CLUSTER, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function query(url: string, text: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

const ok = await reachable();

describe('backups of an attached PostgreSQL database', { skip: ok ? false : `no PostgreSQL reachable at ${CLUSTER}` }, () => {
  let server: TestServer;
  let owner: TestUser;
  const dbName = `berth_svc_${randomBytes(5).toString('hex')}`;
  const otherName = `berth_other_${randomBytes(5).toString('hex')}`;
  let dbUrl: string;
  let otherUrl: string;

  before(async () => {
    server = await startTestServer({ background: true });
    owner = await createUser(server);
    await query(CLUSTER, `CREATE DATABASE ${dbName}`);
    await query(CLUSTER, `CREATE DATABASE ${otherName}`);
    const u = new URL(CLUSTER);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
    u.pathname = `/${otherName}`;
    otherUrl = u.toString();
  });
  after(async () => {
    await server?.close();
    await query(CLUSTER, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await query(CLUSTER, `DROP DATABASE IF EXISTS ${otherName} WITH (FORCE)`).catch(() => {});
  });

  it('round-trips a table through pg_dump -Fc and pg_restore --single-transaction, touching only the attached database', async () => {
    await query(dbUrl, `CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL, blob bytea)`);
    await query(dbUrl, `INSERT INTO notes (body, blob) VALUES ($1, $2), ($3, $4), ($5, NULL)`, ['héllo wörld ✓', randomBytes(64), '日本語', Buffer.from([0, 255, 1]), "it's"]);
    await query(otherUrl, `CREATE TABLE untouched (v int)`);
    await query(otherUrl, `INSERT INTO untouched VALUES (1)`);
    const before = (await query(dbUrl, `SELECT id, body, encode(blob, 'hex') AS blob FROM notes ORDER BY id`)).rows;

    const p = await createProjectWithVolume(server, owner);
    const svc = await server.api(owner.token).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'main', connectionUrl: dbUrl });
    assert.equal(svc.status, 201, svc.text);
    const dest = await createDestination(server, owner);
    const pol = await server.api(owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: svc.body.data.id });
    assert.equal(pol.status, 201, pol.text);
    assert.equal(pol.body.data.serviceId, svc.body.data.id);
    const runId = (await server.api(owner.token).post(`/api/backup-policies/${pol.body.data.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 30000);
    assert.equal(run.status, 'succeeded', run.error);
    assert.equal(run.serviceId, svc.body.data.id);
    assert.ok(run.sizeBytes > 0);

    // Later changes: rows deleted, one changed, a table added; the other database changes too.
    await query(dbUrl, `DELETE FROM notes WHERE id = 1`);
    await query(dbUrl, `UPDATE notes SET body = 'changed' WHERE id = 2`);
    await query(otherUrl, `INSERT INTO untouched VALUES (2)`);

    const { restoreId, confirmationToken } = (await server.api(owner.token).post(`/api/backup-runs/${runId}/restore/prepare`, {})).body.data;
    assert.equal((await server.api(owner.token).post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken })).status, 200);
    const r = await waitTerminal(server, owner.token, `/api/backup-restores/${restoreId}`, 30000);
    assert.equal(r.status, 'succeeded', r.error);
    const afterRows = (await query(dbUrl, `SELECT id, body, encode(blob, 'hex') AS blob FROM notes ORDER BY id`)).rows;
    assert.deepEqual(afterRows, before);
    const other = (await query(otherUrl, `SELECT v FROM untouched ORDER BY v`)).rows.map((x) => x.v);
    assert.deepEqual(other, [1, 2]);
  });

  it('a failed dump is a failed run with no artifact and no credentials in its error', async () => {
    const p = await createProjectWithVolume(server, owner);
    const u = new URL(CLUSTER);
    u.pathname = '/berth_does_not_exist';
    u.password = 'sekrit-pw';
    const svc = await server.api(owner.token).post(`/api/projects/${p.id}/services`, { kind: 'postgres', name: 'gone', connectionUrl: u.toString() });
    const dest = await createDestination(server, owner);
    const pol = (await server.api(owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: svc.body.data.id })).body.data;
    const runId = (await server.api(owner.token).post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`, 30000);
    assert.equal(run.status, 'failed');
    assert.ok(run.error);
    assert.ok(!run.error.includes('sekrit-pw'));
    assert.equal(run.sha256 === null || typeof run.sha256 === 'string', true);
    const { readdirSync, existsSync } = await import('node:fs');
    const dir = `${dest.dir}/berth`;
    const files: string[] = [];
    const walk = (d: string) => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(`${d}/${e.name}`) : files.push(e.name);
    };
    walk(dir);
    assert.deepEqual(files, []);
  });
});
