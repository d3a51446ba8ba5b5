import type { AccessChange } from '../../authz/access-events.js';
import type { Actor } from '../../authz/actor.js';
import type { MeView } from './auth.presenters.js';

/**
 * The auth area's caches of one running server: resolved credentials and `me` answers, so that an
 * authenticated read costs no database round trip. The auth module makes one `AuthCaches` per server
 * (`provides`) and subscribes it to the server's access events (`ctx.access`): every write that
 * changes who can do what, or what `me` answers (tokens, sessions, memberships, roles, grants, users,
 * orgs), says so there after it committed, and the entries it concerns are dropped at once, on this
 * instance and, through the notification bus (`ctx.bus`, LISTEN/NOTIFY), on every other instance
 * sharing the database. When the bus may have missed messages everything is dropped (and every second
 * while its listener is down). TTL_MS is no longer how other instances' changes arrive: it is the
 * safety net for writers that announce nothing (the admin CLI, SQL by hand), short because it bounds
 * how long an open stream outlives such a change (docs/security.md: 5 s re-check plus this).
 */
const TTL_MS = 2000;
const MAX = 10000;

interface Entry<T> {
  value: T;
  at: number;
}

/**
 * Entries live TTL_MS. A value read from the database while a drop happened is not kept: callers
 * take `generation` before they read and hand it to `set`, which keeps the value only if no drop
 * came in between (a grant written while a credential was being resolved would otherwise be cached
 * without it, and a revoked token with it, for up to TTL_MS).
 */
export class TtlCache<T> {
  private readonly map = new Map<string, Entry<T>>();
  private gen = 0;
  /** When expired entries were last swept out: an entry outlives its TTL by at most one more TTL while requests come. */
  private swept = 0;

  /** Moves on at every drop: a read started under another generation is not kept. */
  get generation(): number {
    return this.gen;
  }

  /** Entries held, expired or not (the sweep's test). */
  get size(): number {
    return this.map.size;
  }

  get(key: string, now = Date.now()): T | undefined {
    if (now - this.swept > TTL_MS) this.sweep(now);
    const e = this.map.get(key);
    if (!e) return undefined;
    if (now - e.at > TTL_MS) {
      this.map.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` unless a drop came since `readUnder` (the generation taken before the read). */
  set(key: string, value: T, readUnder: number, now = Date.now()): void {
    if (readUnder !== this.gen) return;
    if (this.map.size >= MAX) this.map.clear();
    this.map.set(key, { value, at: now });
  }

  private sweep(now: number): void {
    this.swept = now;
    for (const [k, e] of this.map) if (now - e.at > TTL_MS) this.map.delete(k);
  }

  /** Drops every entry whose value `stale` answers true for. */
  dropWhere(stale: (value: T) => boolean): void {
    this.gen++;
    for (const [k, e] of this.map) if (stale(e.value)) this.map.delete(k);
  }

  clear(): void {
    this.gen++;
    this.map.clear();
  }
}

/** A resolved credential, with the credential's own expiry. */
export interface CachedActor {
  actor: Actor;
  expiresAt: number;
}

/** A `me` answer with the orgs it names (an org's rename or removal makes it stale). */
export interface CachedMe {
  userId: string;
  orgIds: string[];
  value: MeView;
  /** The answer as the route's JSON, with the grants of the credential's actor it was written for. */
  json?: { for: Actor; text: string };
}

/**
 * Resolved credentials are keyed by the token as the client sent it, not by its hash: a hit then
 * costs a map lookup, not a SHA-256 and a key built per request (about 4 % of an authenticated read's
 * throughput, docs/decisions.md "Cached credentials keyed by the token itself"). Tokens stay only in
 * this process's memory, which already holds the secret key that opens every stored secret, and
 * leave it with their entry (TTL_MS, swept), a drop, or the server.
 */
export class AuthCaches {
  /** Bearer tokens (`berth_pat_...`) to their actors. */
  readonly bearers = new TtlCache<CachedActor>();
  /** Session cookies' values to their actors. */
  readonly sessions = new TtlCache<CachedActor>();
  readonly me = new TtlCache<CachedMe>();

  /**
   * Drops what `change` may have made stale: the credentials of the user (in the org, when named),
   * and the user's `me` answers in every org (their org list names every membership); an org-wide
   * change drops every credential acting in the org and every `me` answer that names the org.
   */
  drop(change: AccessChange): void {
    const { userId, orgId } = change;
    const stale = ({ actor }: CachedActor) => (userId === undefined || actor.userId === userId) && (orgId === undefined || actor.orgId === orgId);
    this.bearers.dropWhere(stale);
    this.sessions.dropWhere(stale);
    this.me.dropWhere((m) => (userId !== undefined ? m.userId === userId : orgId === undefined || m.orgIds.includes(orgId)));
  }
}
