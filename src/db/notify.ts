import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import type { Logger } from 'pino';
import { sql } from './kysely.js';
import type { Db } from './client.js';

/**
 * The notification bus of one running server (`ctx.bus`): `publish(channel, payload)` and
 * `subscribe(channel, fn)`, where a channel is any short string (`access`, `tables`, `jobs`,
 * `backup:run:<id>`, `log:<key>`) and a payload is JSON.
 *
 * - PostgreSQL (`PgBus`): every instance holds one dedicated connection (outside the pool) that
 *   LISTENs on the database channel `berth`; a publish is `pg_notify('berth', '{"c","i","p"}')`
 *   through the pool. The connection reconnects with backoff (100 ms doubling to 5 s) and LISTENs
 *   again; while it is down the bus is not `live`, and both when it drops and when it is back the
 *   `onResync` listeners are told (caches drop everything: messages may have been missed).
 * - SQLite (`LocalBus`): in-process delivery only (one instance per data dir; the flock says so).
 *
 * Own messages: a publish is delivered to this instance's subscribers at once, synchronously, on both
 * stores; the copy PostgreSQL sends back is recognised by the instance id (`i`) and not delivered
 * again: it only resolves the publish. A held publish (`hold`: a change the client's next request,
 * perhaps to another instance, must find there) resolves only once every other instance listening on
 * the database acknowledged it (an `_ack` message each, sent after its subscribers ran), and a
 * response waits for its request's held publishes (`app.ts`). The echo alone would not do: PostgreSQL
 * signals every listener at commit, but each listener's backend sends when the scheduler runs it, and
 * a busy host can run the publisher's own listener, its answer and the client's next request to
 * another instance before that instance's backend. Messages
 * the database itself sends (the triggers of migration 024: `tables` on writes to the project and route
 * tables, `jobs` on an enqueue; they carry no `i`) reach every instance, this one included: they are sent
 * at commit, never for a rolled-back write.
 *
 * A payload stays under 7900 bytes (PostgreSQL refuses 8000): large things go by reference (a row id,
 * a file size to read up to). Never a secret: every session of the database user may LISTEN.
 */

/** The PostgreSQL channel every instance listens on. */
export const BUS_CHANNEL = 'berth';
/** The largest message (JSON text of the envelope), in bytes. */
export const MAX_MESSAGE_BYTES = 7900;

export type BusListener = (payload: any, origin: string | null) => void;

export interface Bus {
  readonly instanceId: string;
  /** True when other instances hear what this one publishes (PostgreSQL). */
  readonly shared: boolean;
  /** False while the PostgreSQL listener is down: caches must not keep what they read meanwhile. */
  readonly live: boolean;
  /**
   * Delivers `payload` on `channel` here at once and to every other instance; resolves once sent.
   * `hold`: resolves once every other instance has delivered it, and the answer of a request in
   * progress waits for it (`pending()`): a change whose next request may reach another instance.
   */
  publish(channel: string, payload?: unknown, opts?: { hold?: boolean }): Promise<void>;
  /** Listens on one channel; answers the function that stops listening. */
  subscribe(channel: string, fn: BusListener): () => void;
  /** Called when messages may have been missed (the listener dropped, and again when it is back). */
  onResync(fn: () => void): () => void;
  /** Delivers a message here as if it came from `origin` (another instance; null: the database). Tests. */
  inject(channel: string, payload: unknown, origin: string | null): void;
  /** Held publishes still on their way, or null (a response waits for them: `app.ts`). */
  pending(): Promise<void> | null;
  start(): Promise<void>;
  close(): Promise<void>;
}

export class LocalBus implements Bus {
  readonly shared: boolean = false;
  private readonly channels = new Map<string, Set<BusListener>>();
  private readonly resyncs = new Set<() => void>();

  constructor(
    readonly instanceId: string,
    protected readonly log?: Logger,
  ) {}

  get live(): boolean {
    return true;
  }

  publish(channel: string, payload?: unknown, _opts?: { hold?: boolean }): Promise<void> {
    this.deliver(channel, payload, this.instanceId);
    return Promise.resolve();
  }

  subscribe(channel: string, fn: BusListener): () => void {
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.channels.get(channel) === set) this.channels.delete(channel);
    };
  }

  onResync(fn: () => void): () => void {
    this.resyncs.add(fn);
    return () => this.resyncs.delete(fn);
  }

  pending(): Promise<void> | null {
    return null;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.channels.clear();
    this.resyncs.clear();
  }

  /** Delivers a message as if it came from `origin` (another instance; null: the database). */
  inject(channel: string, payload: unknown, origin: string | null): void {
    this.deliver(channel, payload, origin);
  }

  protected deliver(channel: string, payload: unknown, origin: string | null): void {
    const set = this.channels.get(channel);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(payload, origin);
      } catch (err) {
        this.log?.warn({ err, channel }, 'bus subscriber failed');
      }
    }
  }

  protected resync(): void {
    for (const fn of [...this.resyncs]) {
      try {
        fn();
      } catch (err) {
        this.log?.warn({ err }, 'bus resync listener failed');
      }
    }
  }
}

let pgModule: typeof pgTypes | undefined;
function loadPg(): typeof pgTypes {
  return (pgModule ??= createRequire(import.meta.url)('pg') as typeof pgTypes);
}

const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;
/** The listener connection is checked this often (a half-open TCP connection hears nothing). */
const HEARTBEAT_MS = 10000;
/** How long a publish waits for its own message, or a held one for acknowledgements (then resolves anyway). */
const ECHO_WAIT_MS = 1000;
/** The channel of acknowledgements of held messages: never delivered to subscribers. */
const ACK_CHANNEL = '_ack';
/** The application name of each instance's listener connection: `berth-bus <instance id>`. */
const LISTENER_NAME = 'berth-bus ';

/** A held message's acknowledgements: the instances still owed (null until known) and those come already. */
type AwaitedAcks = { owed: Set<string> | null; came: Set<string>; done: () => void };

export class PgBus extends LocalBus {
  override readonly shared = true;
  private client: pgTypes.Client | null = null;
  private connected = false;
  private closed = false;
  private attempt = 0;
  private retry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /** Own messages on their way back, by sequence number. */
  private readonly echoes = new Map<number, () => void>();
  /** Held messages awaiting the other instances' acknowledgements, by sequence number. */
  private readonly acks = new Map<number, AwaitedAcks>();
  private seq = 0;

  constructor(
    private readonly db: Db,
    private readonly url: string,
    instanceId: string,
    log?: Logger,
  ) {
    super(instanceId, log);
  }

  override get live(): boolean {
    return this.connected;
  }

  /**
   * Resolves once the message came back to this instance's own listener (at most ECHO_WAIT_MS; at
   * once when the listener is down); a held one once the other instances acknowledged it (`publishHeld`).
   */
  override publish(channel: string, payload?: unknown, opts: { hold?: boolean } = {}): Promise<void> {
    const n = ++this.seq;
    const text = JSON.stringify({ c: channel, i: this.instanceId, n, p: payload ?? null, ...(opts.hold ? { h: 1 } : {}) });
    const size = Buffer.byteLength(text);
    if (size > MAX_MESSAGE_BYTES) {
      // A programming error (send a reference instead), never the caller's input.
      throw new Error(`bus message on ${channel} is ${size} bytes (at most ${MAX_MESSAGE_BYTES}): publish a reference`);
    }
    this.deliver(channel, payload, this.instanceId);
    if (opts.hold) return this.publishHeld(channel, n, text);
    const echoed = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.echoes.delete(n);
        resolve();
      }, ECHO_WAIT_MS);
      timer.unref();
      this.echoes.set(n, () => {
        clearTimeout(timer);
        this.echoes.delete(n);
        resolve();
      });
    });
    const sent: Promise<void> = sql`select pg_notify(${BUS_CHANNEL}, ${text})`
      .execute(this.db)
      .then(
        () => (this.connected ? echoed : undefined),
        (err) => {
          this.log?.warn({ err: (err as Error).message, channel }, 'bus: could not publish');
        },
      )
      .finally(() => {
        this.echoes.get(n)?.();
        this.inFlight.delete(sent);
      });
    return sent;
  }

  /**
   * Sends a held message and resolves once every other instance whose listener was connected to the
   * database when it was sent acknowledged it (at most ECHO_WAIT_MS; at once when this listener is
   * down, since acknowledgements could not be heard). One statement sends it and lists the listeners
   * (`pg_stat_activity`, this database only), so a listener connecting later is not waited for.
   */
  private publishHeld(channel: string, n: number, text: string): Promise<void> {
    const acked = new Promise<void>((resolve) => {
      const timer = setTimeout(() => finish(), ECHO_WAIT_MS);
      timer.unref();
      const finish = () => {
        clearTimeout(timer);
        this.acks.delete(n);
        resolve();
      };
      this.acks.set(n, { owed: null, came: new Set(), done: finish });
    });
    const sent: Promise<void> = sql<{ listeners: string[] }>`select pg_notify(${BUS_CHANNEL}, ${text}) as sent, array(
        select application_name from pg_stat_activity
        where datid = (select oid from pg_database where datname = current_database()) and application_name like ${`${LISTENER_NAME}%`}
      ) as listeners`
      .execute(this.db)
      .then(
        (r) => {
          const wait = this.acks.get(n);
          if (!wait || !this.connected) return;
          const ids = (r.rows[0]?.listeners ?? []).map((name) => name.slice(LISTENER_NAME.length));
          wait.owed = new Set(ids.filter((id) => id !== this.instanceId && !wait.came.has(id)));
          if (wait.owed.size === 0) wait.done();
          return acked;
        },
        (err) => {
          this.log?.warn({ err: (err as Error).message, channel }, 'bus: could not publish');
        },
      )
      .finally(() => {
        this.acks.get(n)?.done();
        this.inFlight.delete(sent);
      });
    this.inFlight.add(sent);
    return sent;
  }

  /** Acknowledges a held message of `origin` once this instance's subscribers have run. */
  private acknowledge(origin: string, n: number): void {
    const text = JSON.stringify({ c: ACK_CHANNEL, i: this.instanceId, p: { to: origin, n } });
    sql`select pg_notify(${BUS_CHANNEL}, ${text})`.execute(this.db).catch((err: Error) => {
      this.log?.warn({ err: err.message }, 'bus: could not acknowledge');
    });
  }

  private acked(from: string, n: number): void {
    const wait = this.acks.get(n);
    if (!wait) return;
    wait.came.add(from);
    if (wait.owed?.delete(from) && wait.owed.size === 0) wait.done();
  }

  override pending(): Promise<void> | null {
    if (this.inFlight.size === 0) return null;
    return Promise.all([...this.inFlight]).then(() => {});
  }

  /** Connects the listener; a failure is logged and retried in the background (the pool may still work). */
  override async start(): Promise<void> {
    await this.connect();
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    await Promise.all([...this.inFlight]);
    const c = this.client;
    this.client = null;
    this.connected = false;
    if (c) await c.end().catch(() => {});
    await super.close();
  }

  /** Tests: drops the listener connection as a network failure would. */
  simulateDrop(): void {
    this.client?.emit('error', new Error('simulated connection loss'));
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const pg = loadPg();
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, application_name: `${LISTENER_NAME}${this.instanceId}` });
    this.client = client;
    let failed = false;
    const fail = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.lost(err);
      client.end().catch(() => {});
    };
    client.on('error', fail);
    client.on('end', () => fail());
    client.on('notification', (m) => {
      if (m.channel === BUS_CHANNEL && m.payload) this.receive(m.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${BUS_CHANNEL}`);
    } catch (err) {
      fail(err as Error);
      return;
    }
    if (failed || this.closed) return;
    const reconnected = this.attempt > 0;
    this.attempt = 0;
    this.connected = true;
    this.heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((err: Error) => fail(err));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    if (reconnected) {
      this.log?.info('bus: listening again');
      this.resync();
    }
  }

  private lost(err?: Error): void {
    const wasConnected = this.connected;
    this.connected = false;
    this.client = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    if (this.closed) return;
    if (wasConnected) {
      this.log?.warn({ err: err?.message }, 'bus: listener connection lost; reconnecting');
      this.resync();
    }
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    this.attempt++;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.connect();
    }, delay);
    this.retry.unref();
  }

  private receive(text: string): void {
    let m: { c?: unknown; i?: unknown; n?: unknown; p?: unknown; h?: unknown };
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof m?.c !== 'string') return;
    if (m.c === ACK_CHANNEL) {
      const p = m.p as { to?: unknown; n?: unknown } | null;
      if (p?.to === this.instanceId && typeof p.n === 'number' && typeof m.i === 'string') this.acked(m.i, p.n);
      return;
    }
    if (m.i === this.instanceId) {
      // Delivered here at publish; its return resolves a publish that is not held.
      if (typeof m.n === 'number') this.echoes.get(m.n)?.();
      return;
    }
    this.deliver(m.c, m.p, typeof m.i === 'string' ? m.i : null);
    if (m.h === 1 && typeof m.i === 'string' && typeof m.n === 'number') this.acknowledge(m.i, m.n);
  }
}

/** The bus for a database: PostgreSQL's LISTEN/NOTIFY, or in-process on SQLite. */
export function openBus(opts: { db: Db; databaseUrl?: string; instanceId: string; log?: Logger }): Bus {
  return opts.databaseUrl ? new PgBus(opts.db, opts.databaseUrl, opts.instanceId, opts.log) : new LocalBus(opts.instanceId, opts.log);
}
