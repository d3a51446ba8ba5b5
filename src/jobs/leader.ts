import type { Logger } from 'pino';
import type { Db } from '../db/client.js';

/** The leader lease's default ttl: a dead leader is replaced within this (BERTH_LEADER_TTL_MS, config.instance.leaderTtlMs). */
export const DEFAULT_LEADER_TTL_MS = 10000;

/**
 * A named lease in the database: at most one holder at a time, for `ttlMs` unless renewed. Several
 * instances sharing one PostgreSQL elect one scheduler this way; the holder renews every ttl/3, so a
 * holder that dies (or stops renewing) is replaced within the ttl (default 10 s). A holder counts
 * itself leader only until its own last renewal's expiry (measured from before it asked, less a
 * margin), so a paused process that wakes after its lease ran out stops acting before it learns so.
 */
export class LeaderLease {
  private timer: NodeJS.Timeout | null = null;
  private leader = false;
  private validUntil = 0;

  constructor(
    private readonly db: Db,
    private readonly name: string,
    private readonly holder: string,
    private readonly log: Logger,
    readonly ttlMs = DEFAULT_LEADER_TTL_MS,
  ) {}

  get isLeader(): boolean {
    return this.leader && Date.now() < this.validUntil;
  }

  /** One attempt to take or renew the lease (one statement: the upsert answers the row only when it is ours). */
  async tryAcquire(): Promise<boolean> {
    const asked = Date.now();
    const now = new Date(asked);
    const expiresAt = new Date(asked + this.ttlMs).toISOString();
    try {
      const row = await this.db
        .insertInto('leases')
        .values({ name: this.name, holder: this.holder, expiresAt })
        .onConflict((oc) =>
          oc
            .column('name')
            .doUpdateSet({ holder: this.holder, expiresAt })
            .where((eb) => eb.or([eb('leases.holder', '=', this.holder), eb('leases.expiresAt', '<', now.toISOString())])),
        )
        .returning('holder')
        .executeTakeFirst();
      this.leader = row?.holder === this.holder;
      // Clocks of instances differ a little: stop acting a tenth of the ttl before the lease's end.
      if (this.leader) this.validUntil = asked + this.ttlMs - Math.floor(this.ttlMs / 10);
    } catch (e) {
      this.log.warn({ err: (e as Error).message, lease: this.name }, 'lease renewal failed');
      this.leader = false;
    }
    return this.isLeader;
  }

  start(): void {
    if (this.timer) return;
    void this.tryAcquire();
    this.timer = setInterval(() => void this.tryAcquire(), Math.max(250, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  /** Stops renewing without giving the lease back (tests: a holder that died). */
  halt(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async stop(): Promise<void> {
    this.halt();
    if (this.leader) {
      await this.db.deleteFrom('leases').where('name', '=', this.name).where('holder', '=', this.holder).execute().catch(() => {});
    }
    this.leader = false;
  }
}

export interface Ticker {
  name: string;
  everyMs: number;
  run(): Promise<void>;
}

/**
 * Periodic work that must run on one instance only (cron schedules, sweeps): each ticker runs every
 * `everyMs` while this instance holds the leader lease, never overlapping itself.
 */
export class Scheduler {
  private readonly tickers: Ticker[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly busy = new Set<string>();

  constructor(
    readonly lease: LeaderLease,
    private readonly log: Logger,
  ) {}

  add(t: Ticker): void {
    this.tickers.push(t);
  }

  start(): void {
    this.lease.start();
    for (const t of this.tickers) {
      const timer = setInterval(() => void this.runTicker(t), t.everyMs);
      timer.unref();
      this.timers.push(timer);
    }
    // First pass soon after start (a schedule missed while the server was down runs now).
    setTimeout(() => {
      for (const t of this.tickers) void this.runTicker(t);
    }, 50).unref();
  }

  async runTicker(t: Ticker): Promise<void> {
    if (this.busy.has(t.name)) return;
    if (!this.lease.isLeader && !(await this.lease.tryAcquire())) return;
    this.busy.add(t.name);
    try {
      await t.run();
    } catch (e) {
      this.log.error({ err: e, ticker: t.name }, 'scheduled task failed');
    } finally {
      this.busy.delete(t.name);
    }
  }

  /** Stops everything without giving the lease back (tests: an instance that died). */
  halt(): void {
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.lease.halt();
  }

  async stop(): Promise<void> {
    for (const t of this.timers.splice(0)) clearInterval(t);
    await this.lease.stop();
  }
}
