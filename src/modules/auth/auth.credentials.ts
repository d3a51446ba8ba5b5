import type { AccessEvents } from '../../authz/access-events.js';
import type { Actor } from '../../authz/actor.js';
import { isRole, type Role } from '../../authz/roles.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { AuthPort } from '../../ports.js';
import { AuthCaches } from './auth.cache.js';
import * as store from './auth.store.js';

/**
 * Credentials to actors: personal access tokens (bearer), session cookies, a credential named by its
 * id (what a stream token was minted with), and a member by id. Bearer and session lookups go through
 * the server's `AuthCaches`; the by-id lookups are always fresh.
 */

export const TOKEN_PREFIX = 'berth_pat';
/** last_used_at is written at most this often per token, so reads stay reads. */
const TOUCH_EVERY_MS = 60 * 1000;

type Deps = Pick<AppContext, 'db'>;
/** Expiry is decided by the server's clock (`ctx.clock`). */
type ClockedDeps = Pick<AppContext, 'db' | 'clock'>;

/** A member's grants in an org, loaded only for the restricted role (grants widen nothing else). */
export async function grantsIfRestricted(db: Db, role: Role, orgId: string, userId: string) {
  if (role !== 'restricted') return [];
  const rows = await store.listGrantsFor(db, orgId, userId);
  return rows.map((g) => ({ id: g.id, resourceType: g.resourceType, resourceId: g.resourceId, permissions: JSON.parse(g.permissions) as string[] }));
}

type TokenRow = NonNullable<Awaited<ReturnType<typeof store.findTokenActor>>>;
type SessionRow = NonNullable<Awaited<ReturnType<typeof store.findSessionActor>>>;

/** A token that still works: found (its user still a member of its org), not revoked, not expired, of a known role. */
function liveToken(row: TokenRow | undefined, now: number): row is TokenRow & { role: Role } {
  return !!row && !row.revokedAt && !(row.expiresAt && Date.parse(row.expiresAt) <= now) && isRole(row.role);
}

/** A session that still works: found (its user still a member of its org), not expired, of a known role. */
function liveSession(row: SessionRow | undefined, now: number): row is SessionRow & { role: Role } {
  return !!row && !(Date.parse(row.expiresAt) <= now) && isRole(row.role);
}

async function tokenActor(db: Db, row: TokenRow & { role: Role }): Promise<Actor> {
  const scopes = row.scopes ? (JSON.parse(row.scopes) as string[]) : null;
  return { userId: row.userId, email: row.email, orgId: row.orgId, role: row.role, scopes, via: 'token', tokenId: row.tokenId, grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId) };
}

async function sessionActor(db: Db, row: SessionRow & { role: Role }): Promise<Actor> {
  return { userId: row.userId, email: row.email, orgId: row.orgId, role: row.role, scopes: null, via: 'session', sessionId: row.sessionId, grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId) };
}

/**
 * A member as an actor, from the database (no cache): for credentials minted earlier on a member's
 * behalf (an upload session's token) that must still carry the member's current role and grants.
 * Null when the user is no longer a member of the org.
 */
export async function memberActor({ db }: Deps, orgId: string, userId: string): Promise<Actor | null> {
  const m = await store.findMembership(db, orgId, userId);
  const user = m ? await store.findUserById(db, userId) : undefined;
  if (!m || !user || !isRole(m.role)) return null;
  return { userId, email: user.email, orgId, role: m.role, scopes: null, via: 'session', grants: await grantsIfRestricted(db, m.role, orgId, userId) };
}

/**
 * A bearer token's actor: from this server's cache without a promise (every request but the first
 * few of a token), else from the database.
 */
export function actorFromBearer({ db, clock }: ClockedDeps, caches: AuthCaches | null, token: string): Actor | null | Promise<Actor | null> {
  if (!token.startsWith(`${TOKEN_PREFIX}_`) || token.length > 200) return null;
  const now = clock.now();
  const cached = caches?.bearers.get(token, now);
  if (cached) return cached.expiresAt > now ? cached.actor : null;
  return bearerFromStore(db, caches, token, now);
}

async function bearerFromStore(db: Db, caches: AuthCaches | null, token: string, now: number): Promise<Actor | null> {
  const gen = caches?.bearers.generation ?? 0;
  const row = await store.findTokenActor(db, sha256Hex(token));
  if (!liveToken(row, now)) return null;
  if (!row.lastUsedAt || now - Date.parse(row.lastUsedAt) > TOUCH_EVERY_MS) await store.touchToken(db, row.tokenId, new Date(now).toISOString());
  const actor = await tokenActor(db, row);
  caches?.bearers.set(token, { actor, expiresAt: row.expiresAt ? Date.parse(row.expiresAt) : Infinity }, gen, now);
  return actor;
}

/** A session's actor: from this server's cache without a promise, else from the database. */
export function actorFromSession({ db, clock }: ClockedDeps, caches: AuthCaches | null, token: string): Actor | null | Promise<Actor | null> {
  if (token.length > 200) return null;
  const now = clock.now();
  const cached = caches?.sessions.get(token, now);
  if (cached) return cached.expiresAt > now ? cached.actor : null;
  return sessionFromStore(db, caches, token, now);
}

async function sessionFromStore(db: Db, caches: AuthCaches | null, token: string, now: number): Promise<Actor | null> {
  const gen = caches?.sessions.generation ?? 0;
  const row = await store.findSessionActor(db, sha256Hex(token));
  if (!liveSession(row, now)) return null;
  const actor = await sessionActor(db, row);
  caches?.sessions.set(token, { actor, expiresAt: Date.parse(row.expiresAt) }, gen, now);
  return actor;
}

/**
 * The actor of a credential named by its id (`tok_...` or `ses_...`), fresh from the database: null
 * once the token is revoked or expired, the session signed out or expired, or the user left the
 * credential's org. For things a credential minted (stream tokens) that must end with it.
 */
export async function actorFromCredentialId({ db, clock }: ClockedDeps, id: string): Promise<Actor | null> {
  const now = clock.now();
  if (id.startsWith('tok_')) {
    const row = await store.findTokenActorById(db, id);
    return liveToken(row, now) ? tokenActor(db, row) : null;
  }
  if (id.startsWith('ses_')) {
    const row = await store.findSessionActorById(db, id);
    return liveSession(row, now) ? sessionActor(db, row) : null;
  }
  return null;
}

/**
 * The auth port of one running server (`ctx.ports.auth`): the lookups above with this server's caches,
 * which drop what each access change (`ctx.access`) makes stale. Made by the auth module's `provides`.
 */
export class Credentials implements AuthPort {
  readonly caches = new AuthCaches();

  constructor(access: AccessEvents) {
    // Subscribed before any stream can listen: streams re-checking their access read the new state.
    access.on((change) => this.caches.drop(change));
  }

  actorFromBearer(ctx: AppContext, token: string): Actor | null | Promise<Actor | null> {
    return actorFromBearer(ctx, this.caches, token);
  }

  actorFromSession(ctx: AppContext, sessionToken: string): Actor | null | Promise<Actor | null> {
    return actorFromSession(ctx, this.caches, sessionToken);
  }

  actorFromCredentialId(ctx: AppContext, credentialId: string): Promise<Actor | null> {
    return actorFromCredentialId(ctx, credentialId);
  }

  memberActor(ctx: AppContext, orgId: string, userId: string): Promise<Actor | null> {
    return memberActor(ctx, orgId, userId);
  }
}

/** This server's auth caches, when its auth port is the auth area's own (a test's fake has none). */
export function cachesOf(ctx: Pick<AppContext, 'ports'>): AuthCaches | null {
  return ctx.ports.auth instanceof Credentials ? ctx.ports.auth.caches : null;
}
