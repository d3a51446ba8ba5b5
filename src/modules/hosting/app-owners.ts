import type { AppContext } from '../../context.js';
import type { EdgeUpstream } from '../../edge/backend.js';
import { Serial } from '../../db/serial.js';
import * as owners from './app-owners.store.js';
import { projectOfAppKey } from '../../runtime/app-key.js';

/** The bus channel a moved lease is announced on (payload `{ app }`, or `{ taken: n }` after a takeover). */
const OWNERS_CHANNEL = 'owners';

/** What the runtime does when ownership moves (host.ts). */
export interface OwnershipHooks {
  /** Another instance took the app (a deploy there, or this instance's lease ran out): stop the local copy. */
  lost(app: string): Promise<void>;
  /** This instance took these apps over from an instance whose leases ran out: start what should run. */
  tookOver(apps: string[]): Promise<void>;
}

/**
 * Who runs each app when several instances share one PostgreSQL (docs/scale-out.md): a lease per app
 * key in `app_owners`, held by the instance that runs the app and renewed on every tick (1 s); a
 * lease not renewed for BERTH_APP_OWNER_TTL_SECONDS (default 10) is taken over by another instance at
 * its next tick. The edge forwards a request for an app another live instance owns to that instance's
 * edge (`peerOf`).
 *
 * On SQLite (one instance per data dir) it is off: every app is this instance's, nothing is written.
 *
 * A lease that moves is announced on the bus (`owners`, the app's key: no secret): every instance
 * ticks at once, so the previous owner stops its copy and the edges forward to the new one without
 * waiting for the next tick (the ticks alone still converge when a message is missed).
 *
 * Every write goes through one chain (`serial`), so a tick never sees a claim half done.
 */
export class AppOwnership {
  readonly enabled: boolean;
  readonly ttlMs: number;
  readonly tickMs: number;
  /** The apps this instance holds (as of its last write). */
  private readonly mine = new Set<string>();
  /** Forced claims not written yet: a tick in between must not count them as lost. */
  private readonly pending = new Set<string>();
  /** Every owner row as of the last tick (or this instance's own claims since). */
  private readonly rows = new Map<string, owners.AppOwnerRow>();
  /** Peers' edges as upstreams, by address (one object per address: the edge's pools key on it). */
  private readonly peers = new Map<string, EdgeUpstream>();
  /** Every write, one at a time (`serial`). */
  private readonly writes = new Serial();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private address = '';
  private ticking = false;
  /** A tick was asked for while one ran: run another right after. */
  private again = false;
  private unsubscribe: (() => void) | null = null;
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly ctx: AppContext,
    private readonly hooks: OwnershipHooks,
  ) {
    this.enabled = ctx.dialect === 'postgres';
    this.ttlMs = ctx.config.instance.appOwnerTtlSeconds * 1000;
    this.tickMs = Math.max(100, Math.min(1000, Math.floor(this.ttlMs / 5)));
  }

  get instanceName(): string {
    return this.ctx.config.instance.name ?? 'default';
  }

  /** This instance's edge as the others reach it. */
  get edgeAddress(): string {
    return this.address;
  }

  /** Starts the ticks, with this instance's edge address (BERTH_INSTANCE_URL, else from the edge's port). */
  start(address: string): void {
    this.address = address;
    if (!this.enabled || this.timer) return;
    this.unsubscribe = this.ctx.bus.subscribe(OWNERS_CHANNEL, (_payload, origin) => {
      if (origin !== this.ctx.instanceId) void this.tick();
    });
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    this.timer.unref();
    void this.tick();
  }

  /** A clean stop: the ticks end and every lease runs out now, so the other instances take over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (!this.enabled) return;
    await this.serial(async () => {
      await owners.expireOwned(this.ctx.db, this.ctx.instanceId, new Date().toISOString());
      await owners.leave(this.ctx.db, this.ctx.instanceId);
    }).catch(() => {});
    this.mine.clear();
  }

  /**
   * The other instances alive now (none on SQLite): a starting instance leaves the builds in flight
   * alone while there is one (they may be its). Says this instance is alive first.
   */
  async othersAlive(): Promise<number> {
    if (!this.enabled) return 0;
    return this.serial(async () => {
      const now = new Date();
      await this.beat(now);
      return (await owners.otherLiveInstances(this.ctx.db, this.ctx.instanceId, this.instanceName, now.toISOString())).length;
    });
  }

  private beat(now: Date): Promise<void> {
    return owners.heartbeat(this.ctx.db, { instanceId: this.ctx.instanceId, instanceName: this.instanceName, address: this.address, startedAt: this.startedAt, expiresAt: new Date(now.getTime() + this.ttlMs).toISOString() });
  }

  /** Does this instance run the app (always, on SQLite)? */
  isMine(app: string): boolean {
    return !this.enabled || this.mine.has(app);
  }

  /** The owner row of an app as last seen (tests, the project's runtime state), else undefined. */
  ownerOf(app: string): owners.AppOwnerRow | undefined {
    return this.rows.get(app);
  }

  /** Is the app held by another instance whose lease is still running? */
  heldElsewhere(app: string): boolean {
    if (!this.enabled || this.mine.has(app)) return false;
    const row = this.rows.get(app);
    return !!row && row.instanceId !== this.ctx.instanceId && row.expiresAt > new Date().toISOString();
  }

  /** The edge of the live instance that runs the app, when it is another one; else null (serve it here). */
  peerOf(app: string): EdgeUpstream | null {
    if (!this.heldElsewhere(app)) return null;
    const address = this.rows.get(app)!.address;
    let peer = this.peers.get(address);
    if (!peer) {
      const u = new URL(address);
      const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
      peer = { host, port: Number(u.port) || 80, key: u.host };
      this.peers.set(address, peer);
    }
    return peer;
  }

  /**
   * Takes the app's lease (see `claimOwner`); `force` takes it from a live owner too (this instance
   * has just started the app: a deploy, a rollback, an enable here). Answers whether it is held here.
   */
  claim(app: string, force = false): Promise<boolean> {
    if (!this.enabled) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(this.mine.has(app));
    // Held now, as far as this process knows: the edge serves it here from this moment.
    if (force) {
      this.mine.add(app);
      this.pending.add(app);
    }
    return this.serial(async () => {
      const now = new Date();
      const row: owners.AppOwnerRow = {
        appKey: app,
        projectId: projectOfAppKey(app),
        instanceId: this.ctx.instanceId,
        instanceName: this.instanceName,
        address: this.address,
        expiresAt: new Date(now.getTime() + this.ttlMs).toISOString(),
        updatedAt: now.toISOString(),
      };
      let held = false;
      try {
        held = await owners.claimOwner(this.ctx.db, row, now.toISOString(), force);
      } catch (err) {
        // The project is gone (the row's foreign key), or the database is closing.
        this.ctx.log[force && !this.stopped ? 'warn' : 'debug']({ app, err: (err as Error).message }, 'could not claim an app');
      }
      if (force) this.pending.delete(app);
      if (held) {
        this.mine.add(app);
        this.rows.set(app, row);
        if (force) void this.ctx.bus.publish(OWNERS_CHANNEL, { app }).catch(() => {});
      } else {
        this.mine.delete(app);
        // Held elsewhere: the row as it is now (the edge forwards there without waiting for a tick).
        const now = await owners.ownerRow(this.ctx.db, app).catch(() => undefined);
        if (now) this.rows.set(app, now);
      }
      return held;
    });
  }

  /**
   * Makes a live owner elsewhere stop its copy of the app (this instance changed what it must run: a
   * disable, a static release, a preview release while its app sleeps): the lease moves here, with
   * nothing running; the next request starts the app here when it should run.
   */
  async evict(app: string): Promise<void> {
    if (this.heldElsewhere(app)) await this.claim(app, true);
  }

  /** Forgets an app (its project was deleted: its row went with it). */
  forget(app: string): void {
    this.mine.delete(app);
    this.rows.delete(app);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.writes.run('owners', () => fn());
  }

  /** One tick: renew this instance's leases, see which it lost, read every row, take over what ran out. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    const began = performance.now();
    try {
      const { lost, taken } = await this.serial(async () => {
        const now = new Date();
        const nowIso = now.toISOString();
        await this.beat(now);
        const held = new Set(await owners.renewOwned(this.ctx.db, this.ctx.instanceId, new Date(now.getTime() + this.ttlMs).toISOString()));
        const lost = [...this.mine].filter((a) => !held.has(a) && !this.pending.has(a));
        for (const a of lost) this.mine.delete(a);
        const all = await owners.listOwners(this.ctx.db);
        this.rows.clear();
        for (const r of all) this.rows.set(r.appKey, r);
        const taken: string[] = [];
        for (const r of all) {
          if (r.instanceId === this.ctx.instanceId || (r.expiresAt >= nowIso && r.instanceName !== this.instanceName)) continue;
          const row: owners.AppOwnerRow = { ...r, instanceId: this.ctx.instanceId, instanceName: this.instanceName, address: this.address, expiresAt: new Date(now.getTime() + this.ttlMs).toISOString(), updatedAt: nowIso };
          if (await owners.claimOwner(this.ctx.db, row, nowIso, false)) {
            this.mine.add(r.appKey);
            this.rows.set(r.appKey, row);
            taken.push(r.appKey);
          }
        }
        return { lost, taken };
      });
      const took = performance.now() - began;
      // A tick as slow as half a lease puts this instance's leases at risk: said, so that a takeover it causes is explained.
      if (took > this.ttlMs / 2) this.ctx.log.warn({ ms: Math.round(took), leaseMs: this.ttlMs }, 'an app ownership tick was slow; leases not renewed in time are taken over by another instance');
      // Not awaited: stopping and starting apps takes seconds, and the next tick must renew in time.
      for (const app of lost) {
        this.ctx.log.info({ app, owner: this.rows.get(app)?.instanceId ?? null }, 'another instance runs this app now: stopping it here');
        void this.hooks.lost(app).catch((err) => this.ctx.log.warn({ app, err: (err as Error).message }, 'could not stop an app another instance took over'));
      }
      if (taken.length) {
        this.ctx.log.info({ apps: taken }, 'took over apps whose owner stopped renewing');
        void this.ctx.bus.publish(OWNERS_CHANNEL, { taken: taken.length }).catch(() => {});
        void this.hooks.tookOver(taken).catch((err) => this.ctx.log.warn({ err: (err as Error).message }, 'could not start the apps taken over'));
      }
    } catch (err) {
      if (!this.stopped) this.ctx.log.warn({ err: (err as Error).message }, 'app ownership tick failed');
    } finally {
      this.ticking = false;
      if (this.again) {
        this.again = false;
        void this.tick();
      }
    }
  }
}
