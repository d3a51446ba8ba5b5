import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JOB_LOCK_MS, JobQueue } from '../../src/jobs/queue.js';
import { LeaderLease, Scheduler } from '../../src/jobs/leader.js';
import { testClock } from '../support/clock.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

describe('jobs queue', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('runs an enqueued job once and marks it succeeded', async () => {
    const { db, dialect, log } = server.ctx;
    const q = new JobQueue(db, dialect, 'w1', log, { pollMs: 20 });
    const seen: unknown[] = [];
    q.register('test.once', async (p) => {
      seen.push(p);
    });
    const id = await q.enqueue('test.once', { n: 1 });
    await q.drain();
    assert.deepEqual(seen, [{ n: 1 }]);
    assert.equal((await q.get(id))!.status, 'succeeded');
  });

  it('retries a failing job with backoff, then marks it failed with the last error', async () => {
    const { db, dialect, log } = server.ctx;
    const q = new JobQueue(db, dialect, 'w2', log, { pollMs: 20 });
    let attempts = 0;
    q.register(
      'test.flaky',
      async () => {
        attempts++;
        throw new Error(`boom ${attempts}`);
      },
      { maxAttempts: 3, backoffMs: 30 },
    );
    const id = await q.enqueue('test.flaky', {});
    q.start();
    await waitFor(async () => (await q.get(id))!.status === 'failed', 'the job to be marked failed', 5000, 20);
    await q.stop();
    const job = (await q.get(id))!;
    assert.equal(attempts, 3);
    assert.equal(job.attempts, 3);
    assert.equal(job.lastError, 'boom 3');
  });

  it('a job that succeeds on a retry ends succeeded', async () => {
    const { db, dialect, log } = server.ctx;
    const q = new JobQueue(db, dialect, 'w3', log, { pollMs: 20 });
    let n = 0;
    q.register(
      'test.second',
      async () => {
        if (++n < 2) throw new Error('first time fails');
      },
      { backoffMs: 20 },
    );
    const id = await q.enqueue('test.second', {});
    q.start();
    await waitFor(async () => (await q.get(id))!.status === 'succeeded', 'the job to be marked succeeded', 5000, 20);
    await q.stop();
  });

  it('two workers on one database never run the same job twice', async () => {
    const { db, dialect, log } = server.ctx;
    const a = new JobQueue(db, dialect, 'wa', log, { pollMs: 10, concurrency: 4 });
    const b = new JobQueue(db, dialect, 'wb', log, { pollMs: 10, concurrency: 4 });
    const runs = new Map<number, number>();
    const handler = async (p: { i: number }) => {
      runs.set(p.i, (runs.get(p.i) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 2));
    };
    a.register('test.many', handler);
    b.register('test.many', handler);
    for (let i = 0; i < 40; i++) await a.enqueue('test.many', { i });
    a.start();
    b.start();
    await waitFor(() => runs.size === 40, 'all 40 jobs to run', 10000, 20);
    await Promise.all([a.stop(), b.stop()]);
    assert.ok([...runs.values()].every((v) => v === 1));
  });

  it('a job whose worker died is claimed again once its lock runs out, not before', async () => {
    const { db, dialect, log } = server.ctx;
    const clock = testClock();
    const q = new JobQueue(db, dialect, 'w4', log, { pollMs: 20, clock });
    let ran = 0;
    q.register('test.orphan', async () => {
      ran++;
    });
    const id = await q.enqueue('test.orphan', {});
    // Another worker claimed it (as a claim writes it: locked for JOB_LOCK_MS) and died with it.
    await db.updateTable('jobs').set({ status: 'running', lockedBy: 'dead', lockedUntil: new Date(clock.now() + JOB_LOCK_MS).toISOString(), attempts: 1 }).where('id', '=', id).execute();
    await q.drain();
    assert.equal(ran, 0, 'not while its lock holds');
    clock.advance(JOB_LOCK_MS + 1000);
    await q.drain();
    assert.equal(ran, 1);
    assert.equal((await q.get(id))!.status, 'succeeded');
  });
});

describe('leader lease', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('exactly one of several instances holds the lease; another takes over when it expires', async () => {
    const { db, log } = server.ctx;
    const a = new LeaderLease(db, 'test-lease', 'a', log, 300);
    const b = new LeaderLease(db, 'test-lease', 'b', log, 300);
    assert.equal(await a.tryAcquire(), true);
    assert.equal(await b.tryAcquire(), false);
    assert.equal(await a.tryAcquire(), true, 'the holder renews');
    await new Promise((r) => setTimeout(r, 350));
    assert.equal(await b.tryAcquire(), true, 'an expired lease is taken over');
    assert.equal(await a.tryAcquire(), false);
    await b.stop();
    assert.equal(await a.tryAcquire(), true, 'a released lease is free at once');
    await a.stop();
  });

  it('a scheduler ticker runs only on the leader', async () => {
    const { db, log } = server.ctx;
    const counts = { a: 0, b: 0 };
    const sa = new Scheduler(new LeaderLease(db, 'sched-test', 'sa', log, 5000), log);
    const sb = new Scheduler(new LeaderLease(db, 'sched-test', 'sb', log, 5000), log);
    sa.add({ name: 't', everyMs: 1000, run: async () => void counts.a++ });
    sb.add({ name: 't', everyMs: 1000, run: async () => void counts.b++ });
    for (let i = 0; i < 5; i++) {
      await sa.runTicker({ name: 't', everyMs: 1000, run: async () => void counts.a++ });
      await sb.runTicker({ name: 't', everyMs: 1000, run: async () => void counts.b++ });
    }
    assert.equal(counts.a, 5);
    assert.equal(counts.b, 0);
    await sa.stop();
    await sb.stop();
  });
});
