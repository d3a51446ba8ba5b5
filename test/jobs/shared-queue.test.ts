import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import { openDatabase, migrateToLatest, type Database } from '../../src/db/client.js';
import { openBus, type Bus } from '../../src/db/notify.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { LeaderLease, Scheduler } from '../../src/jobs/leader.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

/**
 * Jobs and schedules of instances sharing one database: two queues, two leases and two schedulers on
 * one database stand for two instances (each with its own connection pool and bus, as `buildApp` wires them).
 */
describe('jobs and schedules shared by two instances', () => {
  const log = createLogger('silent');
  let pg: { url: string; drop(): Promise<void> } | undefined;
  const open: Database[] = [];
  const buses: Bus[] = [];
  let dataDir: string;

  /** One instance's database handle (its own pool) and bus. */
  async function instance(id: string): Promise<{ database: Database; bus: Bus }> {
    const database = openDatabase({ dataDir, databaseUrl: pg?.url });
    open.push(database);
    const bus = openBus({ db: database.db, databaseUrl: pg?.url, instanceId: id, log });
    buses.push(bus);
    await bus.start();
    return { database, bus };
  }

  before(async () => {
    if (usingPostgres()) pg = await freshPostgresDatabase();
    dataDir = tempDir();
    const first = openDatabase({ dataDir, databaseUrl: pg?.url });
    await migrateToLatest(first.db);
    await first.close();
  });
  after(async () => {
    for (const b of buses) await b.close();
    for (const d of open) await d.close();
    await pg?.drop();
  });

  it('two queues racing over 200 jobs on one database run each exactly once', async () => {
    const a = await instance('ins_qa');
    const b = await instance('ins_qb');
    const runs = new Map<number, string[]>();
    const make = (db: Database, id: string) => {
      const q = new JobQueue(db.db, db.dialect, id, log, { pollMs: 10, concurrency: 8 });
      q.register('race.job', async (p: { n: number }) => {
        const list = runs.get(p.n) ?? [];
        list.push(id);
        runs.set(p.n, list);
        await new Promise((r) => setImmediate(r));
      });
      return q;
    };
    const qa = make(a.database, 'ins_qa');
    const qb = make(b.database, 'ins_qb');
    const N = 200;
    for (let n = 0; n < N; n++) await qa.enqueue('race.job', { n });
    qa.start();
    qb.start();
    try {
      await waitFor(async () => {
        const r = await a.database.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('kind', '=', 'race.job').where('status', '=', 'succeeded').executeTakeFirst();
        return Number(r?.n) === N;
      }, 'every job to succeed', 60000, 50);
    } finally {
      await Promise.all([qa.stop(), qb.stop()]);
    }
    assert.equal(runs.size, N);
    const twice = [...runs].filter(([, by]) => by.length !== 1);
    assert.deepEqual(twice, [], 'no job ran twice');
    const by = new Set([...runs.values()].flat());
    if (usingPostgres()) assert.equal(by.size, 2, 'both instances claimed jobs');
  });

  it("PostgreSQL: a job enqueued on one instance wakes the other's worker at once, not at its next poll", async (t) => {
    if (!usingPostgres()) return t.skip('SQLite: one instance per data dir; an enqueue wakes its own worker');
    const a = await instance('ins_wa');
    const b = await instance('ins_wb');
    // B polls once a minute: only the database's notification of the insert can wake it sooner.
    const qb = new JobQueue(b.database.db, b.database.dialect, 'ins_wb', log, { pollMs: 60000 });
    b.bus.subscribe('jobs', () => qb.wake());
    let ran = false;
    qb.register('wake.job', async () => {
      ran = true;
    });
    qb.start();
    t.after(() => qb.stop());
    // A has no handler for the kind (its queue never claims it) and enqueues inside a transaction.
    const qa = new JobQueue(a.database.db, a.database.dialect, 'ins_wa', log, { pollMs: 60000 });
    await new Promise((r) => setTimeout(r, 100)); // B's first poll is over
    await a.database.db.transaction().execute((tx) => qa.enqueue('wake.job', {}, { db: tx }));
    await waitFor(() => ran, 'the other instance to run the job', 10000, 10);
  });

  it('a leader that stops renewing is replaced once its lease runs out, and schedules run on one instance at a time', async () => {
    const a = await instance('ins_la');
    const b = await instance('ins_lb');
    const ttl = 1500;
    const leaseA = new LeaderLease(a.database.db, 'test-scheduler', 'ins_la', log, ttl);
    const leaseB = new LeaderLease(b.database.db, 'test-scheduler', 'ins_lb', log, ttl);
    const runs: { by: string; start: number; end: number }[] = [];
    const ticker = (by: string) => ({
      name: 'tick',
      everyMs: 50,
      run: async () => {
        const start = Date.now();
        await new Promise((r) => setTimeout(r, 5));
        runs.push({ by, start, end: Date.now() });
      },
    });
    const sa = new Scheduler(leaseA, log);
    const sb = new Scheduler(leaseB, log);
    sa.add(ticker('a'));
    sb.add(ticker('b'));
    assert.equal(await leaseA.tryAcquire(), true);
    sa.start();
    sb.start();
    try {
      await waitFor(() => runs.length >= 5, 'the leader to run its schedule', 10000, 20);
      assert.equal(leaseB.isLeader, false);
      assert.ok(runs.every((r) => r.by === 'a'), 'only the leader ran the schedule');
      // A dies: it neither renews nor gives the lease back.
      sa.halt();
      const died = Date.now();
      await waitFor(() => leaseB.isLeader, 'the other instance to take the lease over', 10 * ttl, 20);
      await waitFor(() => runs.some((r) => r.by === 'b'), 'the new leader to run the schedule', 10 * ttl, 20);
      assert.equal(leaseA.isLeader, false, 'the old leader no longer counts itself leader');
      // The runs of the two never overlap.
      const firstB = Math.min(...runs.filter((r) => r.by === 'b').map((r) => r.start));
      assert.ok(runs.filter((r) => r.by === 'a').every((r) => r.start < firstB), 'no run of the old leader after the new one started');
      assert.ok(firstB >= died, 'the new leader started after the old one died');
    } finally {
      await sa.stop();
      await sb.stop();
    }
  });
});
