import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase, migrateToLatest, type Database } from '../../src/db/client.js';
import { LocalBus, openBus, PgBus, type Bus } from '../../src/db/notify.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { sql } from '../../src/db/kysely.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** Two instances' buses on one database (PostgreSQL), or one in-process bus (SQLite). */
describe('notification bus', () => {
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let database: Database;
  const buses: Bus[] = [];
  const bus = (id: string): Bus => {
    const b = openBus({ db: database.db, databaseUrl: pg?.url, instanceId: id });
    buses.push(b);
    return b;
  };

  before(async () => {
    if (usingPostgres()) pg = await freshPostgresDatabase();
    database = openDatabase({ dataDir: tempDir(), databaseUrl: pg?.url });
    await migrateToLatest(database.db);
  });
  after(async () => {
    for (const b of buses) await b.close();
    await database.close();
    await pg?.drop();
  });

  it('a publish reaches this instance at once, with its own id as the origin', async () => {
    const a = bus('ins_a');
    await a.start();
    const got: unknown[] = [];
    a.subscribe('greeting', (p, origin) => got.push([p, origin]));
    a.subscribe('other', () => got.push('wrong channel'));
    void a.publish('greeting', { n: 1 });
    assert.deepEqual(got, [[{ n: 1 }, 'ins_a']]);
  });

  it('on PostgreSQL another instance hears it once (and the publisher does not hear its own echo); on SQLite delivery is in-process only', async (t) => {
    const a = bus('ins_pub');
    const b = bus('ins_sub');
    await Promise.all([a.start(), b.start()]);
    const atA: unknown[] = [];
    const atB: unknown[] = [];
    a.subscribe('hello', (p, origin) => atA.push([p, origin]));
    b.subscribe('hello', (p, origin) => atB.push([p, origin]));
    await a.publish('hello', { from: 'a' });
    if (!usingPostgres()) {
      assert.equal(a.shared, false);
      assert.deepEqual(atB, []);
      t.diagnostic('SQLite: one instance per data dir, nothing leaves the process');
      return;
    }
    assert.equal(a.shared, true);
    await waitFor(() => atB.length > 0, 'the other instance to hear the message', 5000, 10);
    assert.deepEqual(atB, [[{ from: 'a' }, 'ins_pub']]);
    // A second message after the first: had the echo come back to A, it would be here by now.
    await b.publish('hello', { from: 'b' });
    await waitFor(() => atA.length > 1, 'A to hear B', 5000, 10);
    assert.deepEqual(atA, [
      [{ from: 'a' }, 'ins_pub'],
      [{ from: 'b' }, 'ins_sub'],
    ]);
  });

  it('a message too large for NOTIFY is refused before anything is sent: large things go by reference', async () => {
    const a = bus('ins_big');
    await a.start();
    if (!(a instanceof PgBus)) {
      assert.ok(a instanceof LocalBus);
      return;
    }
    assert.throws(() => a.publish('big', { text: 'x'.repeat(8000) }), /publish a reference/);
  });

  it('PostgreSQL: a write to a cached table is announced by the database on commit, and never for a rollback', async (t) => {
    if (!usingPostgres()) return t.skip('SQLite: the triggers are PostgreSQL only (one instance per data dir)');
    const b = bus('ins_tables');
    await b.start();
    const seen: string[] = [];
    b.subscribe('tables', (p, origin) => {
      assert.equal(origin, null);
      seen.push(p.t);
    });
    await database.db
      .transaction()
      .execute(async (tx) => {
        await tx.deleteFrom('domains').where('domain', '=', 'nothing.example').execute();
        throw new Error('roll back');
      })
      .catch(() => {});
    await database.db.deleteFrom('projects').where('id', '=', 'prj_none').execute();
    await waitFor(() => seen.includes('projects'), 'the projects message', 5000, 10);
    assert.deepEqual(seen, ['projects']);
  });

  it('PostgreSQL: a lost listener reconnects and LISTENs again; subscribers are told to resync when it drops and when it is back', async (t) => {
    if (!usingPostgres()) return t.skip('SQLite: no listener connection');
    const a = bus('ins_drop_pub');
    const b = bus('ins_drop_sub') as PgBus;
    await Promise.all([a.start(), b.start()]);
    let resyncs = 0;
    b.onResync(() => resyncs++);
    const got: unknown[] = [];
    b.subscribe('after', (p) => got.push(p));
    b.simulateDrop();
    assert.equal(b.live, false);
    assert.equal(resyncs, 1);
    await waitFor(() => b.live, 'the listener to reconnect', 10000, 20);
    assert.equal(resyncs, 2);
    await a.publish('after', { ok: true });
    await waitFor(() => got.length > 0, 'a message after the reconnect', 5000, 10);
    assert.deepEqual(got, [{ ok: true }]);
  });

  it('PostgreSQL: a held publish resolves only once every other instance delivered it, though that instance\'s backend runs late', async (t) => {
    if (!usingPostgres()) return t.skip('SQLite: delivery is in-process and synchronous');
    const a = bus('ins_held_pub');
    const b = bus('ins_held_sub');
    await Promise.all([a.start(), b.start()]);
    const atB: unknown[] = [];
    b.subscribe('revoked', (p) => atB.push(p));
    const listener = await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = 'berth-bus ins_held_sub'`.execute(database.db);
    const pid = listener.rows[0]!.pid;
    // B's listener backend stopped, as a busy host's scheduler may leave it after the commit signalled it.
    try {
      process.kill(pid, 'SIGSTOP');
    } catch (err) {
      return t.skip(`cannot stop the database's backend (${(err as NodeJS.ErrnoException).code}): the server is not ours`);
    }
    let seenAtResolve: number | null = null;
    const held = a.publish('revoked', { token: 1 }, { hold: true }).then(() => (seenAtResolve = atB.length));
    const free = a.publish('other', { n: 1 });
    try {
      await free; // a message not held resolves with its own echo, B or not
      await sleep(300);
      assert.equal(seenAtResolve, null, 'the held publish waits for B');
      assert.notEqual(a.pending(), null, 'a response in progress would wait for it');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await held;
    assert.equal(seenAtResolve, 1, 'B had delivered it when the publish resolved');
    assert.deepEqual(atB, [{ token: 1 }]);
    assert.equal(a.pending(), null);
  });

  it('PostgreSQL: a held publish with no other instance listening resolves without waiting for anyone', async (t) => {
    if (!usingPostgres()) return t.skip('SQLite: delivery is in-process and synchronous');
    for (const b of buses.splice(0)) await b.close();
    const a = bus('ins_alone');
    await a.start();
    const started = Date.now();
    await a.publish('revoked', { token: 2 }, { hold: true });
    assert.ok(Date.now() - started < 900, 'well within the acknowledgement wait');
  });
});
