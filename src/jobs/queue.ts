import { sql } from '../db/kysely.js';
import type { Logger } from 'pino';
import type { Db, Dialect } from '../db/client.js';
import { transaction } from '../db/client.js';
import type { JobsTable } from '../db/schema.js';
import { clockIso, systemClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';

export interface JobInfo {
  id: string;
  kind: string;
  attempts: number;
  maxAttempts: number;
  orgId: string | null;
}

export type JobHandler<P = any> = (payload: P, job: JobInfo, signal: AbortSignal) => Promise<void>;

interface Registration {
  handler: JobHandler;
  maxAttempts: number;
  backoffMs: number;
}

export interface EnqueueOptions {
  runAt?: Date;
  maxAttempts?: number;
  orgId?: string | null;
  /** Enqueue inside a caller's transaction. */
  db?: Db;
}

/**
 * How long a claim holds without renewal (renewed every third of it while the job runs): a job whose
 * process died is claimed again by another instance (or this one after a restart) within this.
 */
export const JOB_LOCK_MS = 60 * 1000;

/**
 * A durable jobs table with an in-process worker. Claims use `FOR UPDATE SKIP LOCKED` on
 * PostgreSQL (several instances may share one database) and a single writer on SQLite. A failed
 * job is retried with exponential backoff up to its maximum attempts; a job whose worker died
 * (its lock ran out) is claimed again. Due times and locks are read from `opts.clock` (the server's
 * `ctx.clock`), so a test moves a queue's time instead of rewriting `run_at` or `locked_until`.
 */
export class JobQueue {
  private readonly handlers = new Map<string, Registration>();
  private timer: NodeJS.Timeout | null = null;
  private running = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  private stopping = false;
  private wakeScheduled = false;
  private readonly clock: Clock;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    private readonly instanceId: string,
    private readonly log: Logger,
    private readonly opts: { pollMs?: number; concurrency?: number; clock?: Clock } = {},
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  register<P>(kind: string, handler: JobHandler<P>, opts: { maxAttempts?: number; backoffMs?: number } = {}): void {
    this.handlers.set(kind, { handler, maxAttempts: opts.maxAttempts ?? 3, backoffMs: opts.backoffMs ?? 2000 });
  }

  async enqueue(kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string> {
    const at = clockIso(this.clock);
    const id = newId('job');
    const row: JobsTable = {
      id,
      kind,
      payload: JSON.stringify(payload ?? null),
      status: 'queued',
      attempts: 0,
      maxAttempts: opts.maxAttempts ?? this.handlers.get(kind)?.maxAttempts ?? 3,
      runAt: opts.runAt ? opts.runAt.toISOString() : at,
      lockedBy: null,
      lockedUntil: null,
      lastError: null,
      orgId: opts.orgId ?? null,
      createdAt: at,
      updatedAt: at,
    };
    await (opts.db ?? this.db).insertInto('jobs').values(row).execute();
    this.wake();
    return id;
  }

  /** Starts polling. Safe to call once. */
  start(): void {
    if (this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => void this.tick(), this.opts.pollMs ?? 500);
    this.timer.unref();
    void this.tick();
  }

  /** Stops claiming, aborts nothing, waits for in-flight jobs (up to `graceMs`, then aborts them). */
  async stop(graceMs = 10000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const all = [...this.running.values()];
    const grace = new Promise<void>((r) => setTimeout(r, graceMs).unref());
    await Promise.race([Promise.all(all.map((r) => r.promise)), grace]);
    for (const r of this.running.values()) r.abort.abort();
    await Promise.all([...this.running.values()].map((r) => r.promise));
  }

  /** Asks the worker to look for work soon (after an enqueue). */
  wake(): void {
    if (!this.timer || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      void this.tick();
    });
  }

  private async tick(): Promise<void> {
    if (this.stopping) return;
    const limit = this.opts.concurrency ?? 4;
    try {
      while (!this.stopping && this.running.size < limit) {
        const job = await this.claim();
        if (!job) break;
        this.launch(job);
      }
    } catch (e) {
      this.log.error({ err: e }, 'job claim failed');
    }
  }

  /** Runs queued jobs until none is due (tests and the CLI use it). */
  async drain(): Promise<void> {
    for (;;) {
      const job = await this.claim();
      if (!job) {
        if (this.running.size === 0) return;
        await Promise.race([...this.running.values()].map((r) => r.promise));
        continue;
      }
      this.launch(job);
    }
  }

  private launch(job: JobsTable): void {
    const abort = new AbortController();
    const promise = this.execute(job, abort.signal).finally(() => {
      this.running.delete(job.id);
      if (!this.stopping) this.wake();
    });
    this.running.set(job.id, { promise, abort });
  }

  private async claim(): Promise<JobsTable | undefined> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return undefined;
    const now = clockIso(this.clock);
    const until = clockIso(this.clock, JOB_LOCK_MS);
    if (this.dialect === 'postgres') {
      const res = await sql<JobsTable>`
        UPDATE jobs SET status = 'running', locked_by = ${this.instanceId}, locked_until = ${until},
          attempts = attempts + 1, updated_at = ${now}
        WHERE id = (
          SELECT id FROM jobs
          WHERE kind IN (${sql.join(kinds)})
            AND ((status = 'queued' AND run_at <= ${now}) OR (status = 'running' AND locked_until < ${now}))
          ORDER BY run_at, id
          LIMIT 1
          FOR UPDATE SKIP LOCKED)
        RETURNING *`.execute(this.db);
      return res.rows[0];
    }
    return transaction(this.db, async (tx) => {
      const next = await tx
        .selectFrom('jobs')
        .select('id')
        .where('kind', 'in', kinds)
        .where((eb) => eb.or([eb.and([eb('status', '=', 'queued'), eb('runAt', '<=', now)]), eb.and([eb('status', '=', 'running'), eb('lockedUntil', '<', now)])]))
        .orderBy('runAt')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      if (!next) return undefined;
      return tx
        .updateTable('jobs')
        .set((eb) => ({ status: 'running', lockedBy: this.instanceId, lockedUntil: until, attempts: eb('attempts', '+', 1), updatedAt: now }))
        .where('id', '=', next.id)
        .returningAll()
        .executeTakeFirst();
    });
  }

  private async execute(job: JobsTable, signal: AbortSignal): Promise<void> {
    const reg = this.handlers.get(job.kind);
    const info: JobInfo = { id: job.id, kind: job.kind, attempts: job.attempts, maxAttempts: job.maxAttempts, orgId: job.orgId };
    const renew = setInterval(() => {
      void this.db
        .updateTable('jobs')
        .set({ lockedUntil: clockIso(this.clock, JOB_LOCK_MS) })
        .where('id', '=', job.id)
        .where('lockedBy', '=', this.instanceId)
        .execute()
        .catch(() => {});
    }, JOB_LOCK_MS / 3);
    renew.unref();
    try {
      if (!reg) throw new Error(`no handler for job kind ${job.kind}`);
      await reg.handler(JSON.parse(job.payload), info, signal);
      await this.db.updateTable('jobs').set({ status: 'succeeded', lockedBy: null, lockedUntil: null, updatedAt: clockIso(this.clock) }).where('id', '=', job.id).execute();
    } catch (e) {
      const message = (e as Error)?.message ?? String(e);
      const retry = job.attempts < job.maxAttempts;
      const delay = (reg?.backoffMs ?? 2000) * 2 ** Math.max(0, job.attempts - 1);
      this.log.warn({ jobId: job.id, kind: job.kind, attempts: job.attempts, err: message }, retry ? 'job failed; will retry' : 'job failed for good');
      await this.db
        .updateTable('jobs')
        .set({
          status: retry ? 'queued' : 'failed',
          runAt: retry ? clockIso(this.clock, delay) : job.runAt,
          lockedBy: null,
          lockedUntil: null,
          lastError: message.slice(0, 2000),
          updatedAt: clockIso(this.clock),
        })
        .where('id', '=', job.id)
        .execute()
        .catch((err) => this.log.error({ err }, 'could not record job failure'));
    } finally {
      clearInterval(renew);
    }
  }

  async get(id: string): Promise<JobsTable | undefined> {
    return this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }
}
