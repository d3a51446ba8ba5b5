import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import { countingPool, RoundTrips } from '../../src/db/pg-pool.js';
import { createProject, createToken, createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, usingPostgres, type TestServer } from '../support/harness.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import { waitFor } from '../support/wait.js';

/**
 * Issue 23 point 1: the database round trips of the hot routes, counted by the pg client wrapper
 * (`src/db/pg-pool.ts`: every `client.query` is one, BEGIN and COMMIT included) through a real
 * server. The budgets are today's figures: a route that grows fails here. Background work is off
 * (startTestServer's default), so every query counted during a request is the request's.
 */

let server: TestServer;
let owner: TestUser;
let projectId: string;
let trips: RoundTrips;

const skip = usingPostgres() ? false : 'round trips are counted on PostgreSQL only: SQLite answers in the process (set DATABASE_URL)';

before(async () => {
  if (skip) return;
  server = await startTestServer();
  trips = (server.app as unknown as { berth: { database: { roundTrips: RoundTrips } } }).berth.database.roundTrips;
  // Reads are kept in memory only while the cross-instance notification listener is up (when there is one).
  await waitFor(() => (server.ctx as { bus?: { live?: boolean } }).bus?.live ?? true, 'the notification listener', 10000);
  owner = await createUser(server);
  projectId = (await createProject(server, owner, { name: 'trips' })).id;
  const seeded = await server.api(owner.token).patch(`/api/projects/${projectId}/env`, { upserts: [{ key: 'KEEP', value: 'k' }, { key: 'GONE', value: 'g' }, { key: 'TOKEN', value: 't', isSecret: true }] });
  assert.equal(seeded.status, 200, seeded.text);
});
after(async () => {
  await server?.close();
});

/** The round trips one request costs, with the SQL of each (for failure messages). */
async function tripsOf(send: () => Promise<HttpResponse>): Promise<{ n: number; sqls: string[]; res: HttpResponse }> {
  const stop = trips.record();
  try {
    const res = await send();
    const sqls = stop();
    return { n: sqls.length, sqls, res };
  } finally {
    stop();
  }
}

function within(label: string, got: { n: number; sqls: string[]; res: HttpResponse }, budget: number): void {
  assert.ok(got.res.status < 300, `${label}: ${got.res.status} ${got.res.text}`);
  assert.ok(got.n <= budget, `${label} costs ${got.n} round trips, its budget is ${budget}:\n  ${got.sqls.join('\n  ')}`);
}

/** A session cookie of a fresh login (a credential this server has not resolved yet). */
async function login(): Promise<HttpClient> {
  const res = await server.api().post('/api/auth/login', { email: owner.email, password: owner.password });
  assert.equal(res.status, 200, res.text);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  return server.api().with({ cookie, origin: new URL(server.url).origin });
}

/** Drops the project reads kept in memory, as any write to the projects area's tables does. */
async function dropProjectReads(): Promise<void> {
  const r = await server.api(owner.token).patch(`/api/projects/${projectId}`, { buildCommand: `echo ${Date.now()}` });
  assert.equal(r.status, 200, r.text);
}

const READS: [string, (c: HttpClient) => Promise<HttpResponse>, number][] = [
  // [route, request, warm budget]
  ['GET /api/projects', (c) => c.get('/api/projects'), 1],
  ['GET /api/projects/:id', (c) => c.get(`/api/projects/${projectId}`), 0],
  ['GET /api/projects/:id/env', (c) => c.get(`/api/projects/${projectId}/env`), 1],
];

describe('database round trips of the hot routes (PostgreSQL)', { skip }, () => {
  for (const via of ['bearer token', 'session cookie'] as const) {
    it(`an authenticated read by ${via} costs at most 2 round trips warm: the project list 1, a project 0, its env 1`, async () => {
      const client = via === 'bearer token' ? server.api((await createToken(server, owner)).token) : await login();
      for (const [route, send, budget] of READS) {
        await send(client);
        within(`${route} (${via}, warm)`, await tripsOf(() => send(client)), Math.min(budget, 2));
      }
    });

    it(`with nothing in memory (a credential not seen yet, project reads dropped by a write) a read by ${via} costs at most 2 round trips plus the credential's lookup${via === 'bearer token' ? ' and its last-used stamp' : ''}`, async () => {
      // The list: its projects and the org's routes; a project: its row and its routes; the env: the
      // project row and the environment with its variables. One query each.
      const coldReads: Record<string, number> = { 'GET /api/projects': 2, 'GET /api/projects/:id': 2, 'GET /api/projects/:id/env': 2 };
      for (const [route, send] of READS) {
        const client = via === 'bearer token' ? server.api((await createToken(server, owner)).token) : await login();
        await dropProjectReads();
        // A token's first use also stamps its last use (at most once a minute); a session has no stamp.
        const credential = via === 'bearer token' ? 2 : 1;
        within(`${route} (${via}, cold)`, await tripsOf(() => send(client)), coldReads[route]! + credential);
        // Only the credential was cold: the same read again is the warm figure, at most 2.
        await dropProjectReads();
        within(`${route} (${via}, credential warm, project reads dropped)`, await tripsOf(() => send(client)), coldReads[route]!);
      }
    });

    it(`PATCH env by ${via} costs 3 round trips: the record, the environment with its variables, and one statement that bumps the revision, upserts, deletes and writes the audit row`, async () => {
      const client = via === 'bearer token' ? server.api(owner.token) : await login();
      await client.get('/api/auth/me');
      const patch = {
        upserts: [
          { key: 'KEEP', value: 'k2' },
          { key: 'TOKEN', value: '********' },
          { key: 'DB_PASSWORD', value: 'pw', isSecret: true },
          { key: 'API_KEY', value: 'sk', isSecret: true },
          { key: 'REGION', value: 'eu' },
          { key: 'LOG_LEVEL', value: 'info' },
        ],
        deletes: ['GONE', 'ABSENT'],
      };
      const got = await tripsOf(() => client.patch(`/api/projects/${projectId}/env`, patch));
      within(`PATCH env (${via})`, got, 3);
      // Each statement as its verb and the first table it names.
      const shape = got.sqls.map((s) => [/^\w+/.exec(s)![0].toLowerCase(), /"(\w+)"/.exec(s)?.[1]].filter(Boolean).join(' '));
      assert.deepEqual(shape, ['select projects', 'select e', 'with'], got.sqls.join('\n'));
      const write = got.sqls[2]!;
      for (const step of ['update environments', 'insert into env_vars', 'delete from env_vars', 'insert into audit_events']) assert.ok(write.includes(step), `the write holds ${step}: ${write}`);
      const after = (await client.get(`/api/projects/${projectId}/env`)).body.data as { key: string; value: string; isSecret: boolean }[];
      assert.deepEqual(after.map((v) => [v.key, v.value, v.isSecret]), [['API_KEY', '********', true], ['DB_PASSWORD', '********', true], ['KEEP', 'k2', false], ['LOG_LEVEL', 'info', false], ['REGION', 'eu', false], ['TOKEN', '********', true]]);
      // Put back what the next run of this test deletes.
      assert.equal((await client.patch(`/api/projects/${projectId}/env`, { upserts: [{ key: 'GONE', value: 'g' }] })).status, 200);
    });
  }
});

describe('what an env PATCH leaves in memory (PostgreSQL)', { skip }, () => {
  it('an env PATCH announces no write to environments (its revision bump is no cache\'s), so project reads stay warm on every instance; a new environment still is announced', async () => {
    const bus = (server.ctx as unknown as { bus: { subscribe(c: string, fn: (p: { t?: string } | null) => void): () => void; publish(c: string): Promise<void> } }).bus;
    const heard: string[] = [];
    const stop = bus.subscribe('tables', (p) => heard.push(String(p?.t)));
    try {
      const client = server.api(owner.token);
      await client.get(`/api/projects/${projectId}`);
      assert.equal((await client.patch(`/api/projects/${projectId}/env`, { upserts: [{ key: 'KEEP', value: `k-${Date.now()}` }] })).status, 200);
      // Notifications arrive in commit order: once this one is back, any the PATCH caused are in.
      await bus.publish('round-trips-sentinel');
      assert.ok(!heard.includes('environments'), `announced: ${heard.join(', ')}`);
      within('GET /api/projects/:id after an env PATCH', await tripsOf(() => client.get(`/api/projects/${projectId}`)), 0);

      const made = await client.post(`/api/projects/${projectId}/environments`, { name: `pv-${Date.now()}`, branch: 'feature' });
      assert.equal(made.status, 201, made.text);
      await bus.publish('round-trips-sentinel');
      assert.ok(heard.includes('environments'), `a new environment is announced: ${heard.join(', ')}`);
    } finally {
      stop();
    }
  });
});

describe('named prepared statements (PostgreSQL)', { skip }, () => {
  it('a statement is prepared from its second use, each connection keeps at most its limit, and a prepared select * whose table gained a column fails once, then runs anew', async (t) => {
    const fresh = await freshPostgresDatabase();
    t.after(() => fresh.drop());
    const pg = createRequire(import.meta.url)('pg') as typeof pgTypes;
    const counted = new RoundTrips();
    const pool = countingPool(pg, { connectionString: fresh.url, max: 1, idleTimeoutMillis: 1000, preparePerConnection: 2 }, counted);
    t.after(() => pool.end());
    const client = (await pool.connect()) as unknown as pgTypes.PoolClient;
    const prepared = async () => (await client.query('select name from pg_prepared_statements order by name')).rows.map((r: { name: string }) => r.name);
    try {
      await client.query('create table t (a integer)');
      await client.query('insert into t values (1)');
      const q = 'select * from t where a = $1';
      await client.query(q, [1]);
      assert.equal((await prepared()).length, 0, 'not prepared on its first use');
      await client.query(q, [1]);
      await client.query(q, [1]);
      assert.equal((await prepared()).length, 1, 'prepared once from its second use on');
      for (const other of ['select a from t where a = $1', 'select a + 1 from t where a = $1', 'select a + 2 from t where a = $1']) {
        await client.query(other, [1]);
        await client.query(other, [1]);
      }
      assert.equal((await prepared()).length, 2, 'at most preparePerConnection');
      await client.query('alter table t add column b text');
      await assert.rejects(client.query(q, [1]), (e: { code?: string }) => e.code === '0A000');
      const again = await client.query(q, [1]);
      assert.deepEqual(again.rows, [{ a: 1, b: null }]);
    } finally {
      client.release();
    }
  });
});
