import { createHmac, randomBytes } from 'node:crypto';
import type { Actor } from '../../authz/actor.js';
import { isRole, type Role } from '../../authz/roles.js';
import { accessChanged } from '../../authz/access-events.js';
import { scopesAllow } from '../../authz/authorize.js';
import { isTag, parseTag, tagCovers } from '../../authz/tags.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { hashPassword, safeEqual, sha256Hex, verifyPassword, type Keyring } from '../../lib/crypto.js';
import { isoPlus, newId, newSecretToken, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import * as store from './auth.store.js';
import { authCache, invalidateAuthCache } from './auth.cache.js';

export { invalidateAuthCache };

/** Resolved credentials by token hash, with the credential's own expiry. */
const actorCache = authCache<{ actor: Actor; expiresAt: number }>();
const meCache = authCache<Awaited<ReturnType<typeof loadMe>>>();

export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
export const TOKEN_PREFIX = 'berth_pat';
const LOGIN_WINDOW_MS = 15 * 60 * 1000;
const LOGIN_MAX_FAILURES = 10;
/** last_used_at is written at most this often per token, so reads stay reads. */
const TOUCH_EVERY_MS = 60 * 1000;

type Deps = Pick<AppContext, 'db'>;

export interface UserView {
  id: string;
  email: string;
  name: string;
  createdAt: string;
}

function userView(u: { id: string; email: string; name: string; createdAt: string }): UserView {
  return { id: u.id, email: u.email, name: u.name, createdAt: u.createdAt };
}

// ---------------------------------------------------------------- resolving credentials

async function grantsIfRestricted(db: Db, role: Role, orgId: string, userId: string) {
  if (role !== 'restricted') return [];
  const rows = await store.listGrantsFor(db, orgId, userId);
  return rows.map((g) => ({ id: g.id, resourceType: g.resourceType, resourceId: g.resourceId, permissions: JSON.parse(g.permissions) as string[] }));
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

export async function actorFromBearer({ db }: Deps, token: string): Promise<Actor | null> {
  if (!token.startsWith(`${TOKEN_PREFIX}_`) || token.length > 200) return null;
  const hash = sha256Hex(token);
  const now = Date.now();
  const cached = actorCache.get(`t:${hash}`, now);
  if (cached) return cached.expiresAt > now ? cached.actor : null;
  const row = await store.findTokenActor(db, hash);
  if (!row || row.revokedAt) return null;
  if (row.expiresAt && Date.parse(row.expiresAt) <= now) return null;
  if (!isRole(row.role)) return null;
  if (!row.lastUsedAt || now - Date.parse(row.lastUsedAt) > TOUCH_EVERY_MS) await store.touchToken(db, row.tokenId, new Date(now).toISOString());
  const actor: Actor = {
    userId: row.userId,
    email: row.email,
    orgId: row.orgId,
    role: row.role,
    scopes: row.scopes ? (JSON.parse(row.scopes) as string[]) : null,
    via: 'token',
    tokenId: row.tokenId,
    grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId),
  };
  actorCache.set(`t:${hash}`, { actor, expiresAt: row.expiresAt ? Date.parse(row.expiresAt) : Infinity }, now);
  return actor;
}

/**
 * The actor of a credential named by its id (`tok_...` or `ses_...`), fresh from the database: null
 * once the token is revoked or expired, the session signed out or expired, or the user left the
 * credential's org. For things a credential minted (stream tokens) that must end with it.
 */
export async function actorFromCredentialId({ db }: Deps, id: string): Promise<Actor | null> {
  const now = Date.now();
  if (id.startsWith('tok_')) {
    const row = await store.findTokenActorById(db, id);
    if (!row || row.revokedAt || (row.expiresAt && Date.parse(row.expiresAt) <= now) || !isRole(row.role)) return null;
    const scopes = row.scopes ? (JSON.parse(row.scopes) as string[]) : null;
    return { userId: row.userId, email: row.email, orgId: row.orgId, role: row.role, scopes, via: 'token', tokenId: row.tokenId, grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId) };
  }
  if (id.startsWith('ses_')) {
    const row = await store.findSessionActorById(db, id);
    if (!row || Date.parse(row.expiresAt) <= now || !isRole(row.role)) return null;
    return { userId: row.userId, email: row.email, orgId: row.orgId, role: row.role, scopes: null, via: 'session', sessionId: row.sessionId, grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId) };
  }
  return null;
}

export async function actorFromSession({ db }: Deps, token: string): Promise<Actor | null> {
  if (token.length > 200) return null;
  const hash = sha256Hex(token);
  const now = Date.now();
  const cached = actorCache.get(`s:${hash}`, now);
  if (cached) return cached.expiresAt > now ? cached.actor : null;
  const row = await store.findSessionActor(db, hash);
  if (!row || Date.parse(row.expiresAt) <= now || !isRole(row.role)) return null;
  const actor: Actor = {
    userId: row.userId,
    email: row.email,
    orgId: row.orgId,
    role: row.role,
    scopes: null,
    via: 'session',
    sessionId: row.sessionId,
    grants: await grantsIfRestricted(db, row.role, row.orgId, row.userId),
  };
  actorCache.set(`s:${hash}`, { actor, expiresAt: Date.parse(row.expiresAt) }, now);
  return actor;
}

// ---------------------------------------------------------------- accounts

export interface CreateUserInput {
  email: string;
  password?: string;
  name?: string;
}

function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 254) throw new AppError('VALIDATION_FAILED', 'email is not a valid address', { field: 'email' });
  return e;
}

function checkPassword(pw: string): void {
  if (pw.length < 8) throw new AppError('VALIDATION_FAILED', 'password must be at least 8 characters', { field: 'password' });
  if (pw.length > 512) throw new AppError('VALIDATION_FAILED', 'password must be at most 512 characters', { field: 'password' });
}

async function newUserRow(input: CreateUserInput) {
  const email = normaliseEmail(input.email);
  if (input.password !== undefined) checkPassword(input.password);
  const at = nowIso();
  return {
    id: newId('usr'),
    email,
    name: input.name?.trim() || email.split('@')[0]!,
    passwordHash: input.password !== undefined ? await hashPassword(input.password) : null,
    createdAt: at,
    updatedAt: at,
  };
}

/** Creates an organization with `userId` as its owner. */
export async function createOrgWithOwner(db: Db, userId: string, name: string, isTeam: boolean): Promise<{ id: string; name: string; isTeam: boolean }> {
  const at = nowIso();
  const org = { id: newId('org'), name, isTeam: isTeam ? 1 : 0, createdAt: at };
  await transaction(db, async (tx) => {
    await store.insertOrg(tx, org);
    await store.insertMembership(tx, { orgId: org.id, userId, role: 'owner', createdAt: at });
  });
  invalidateAuthCache();
  return { id: org.id, name, isTeam };
}

/**
 * Whether `email` may sign up (contract section 10): `open` anyone, `closed` nobody, `invite` only an
 * email with a pending invitation; the self-hosted default lets the first account in (it owns the
 * instance) and is `invite` afterwards. `invited` answers the pending invitations' ids.
 */
export async function checkSignupAllowed(ctx: AppContext, email: string, invited: (email: string) => Promise<string[]>): Promise<void> {
  const mode = ctx.config.signup;
  if (mode === 'open') return;
  if (mode === 'closed') throw new AppError('SIGNUP_CLOSED', 'sign-up is closed on this instance; ask its operator for an account');
  if (mode === 'first-then-invite' && !(await store.anyUser(ctx.db))) return;
  if ((await invited(email)).length === 0) throw new AppError('SIGNUP_CLOSED', 'sign-up on this instance is by invitation only; ask an admin of an organization to invite this email');
}

export async function signup({ db }: Deps, input: CreateUserInput): Promise<{ user: UserView; orgId: string; sessionToken: string }> {
  if (input.password === undefined) throw new AppError('VALIDATION_FAILED', 'password is required', { field: 'password' });
  const user = await newUserRow(input);
  if (await store.findUserByEmail(db, user.email)) throw new AppError('CONFLICT', 'an account with this email already exists', { field: 'email' });
  const at = user.createdAt;
  const orgId = newId('org');
  const session = newSession(user.id, orgId);
  try {
    await transaction(db, async (tx) => {
      await store.insertUser(tx, user);
      await store.insertOrg(tx, { id: orgId, name: `${user.name}'s workspace`, isTeam: 0, createdAt: at });
      await store.insertMembership(tx, { orgId, userId: user.id, role: 'owner', createdAt: at });
      await store.insertSession(tx, session.row);
    });
  } catch (e) {
    if (await store.findUserByEmail(db, user.email)) throw new AppError('CONFLICT', 'an account with this email already exists', { field: 'email' });
    throw e;
  }
  return { user: userView(user), orgId, sessionToken: session.token };
}

function newSession(userId: string, orgId: string) {
  const token = newSecretToken('berth_ses');
  const at = nowIso();
  return {
    token,
    row: { id: newId('ses'), tokenHash: sha256Hex(token), userId, orgId, createdAt: at, expiresAt: isoPlus(SESSION_TTL_MS), lastSeenAt: at },
  };
}

// ---------------------------------------------------------------- sign-in and its rate limit

/** The cookie that marks a browser (or client) where this account signed in before (`docs/decisions.md`). */
export const DEVICE_COOKIE = 'berth_device';
export const DEVICE_TTL_MS = 180 * 24 * 3600 * 1000;

function deviceMac(keyring: Keyring, userId: string, id: string, issued: string): string {
  // A key of its own, derived from the secret key, so a device cookie's MAC is nothing else's.
  const key = createHmac('sha256', keyring.current.key).update('berth device cookie v1').digest();
  return createHmac('sha256', key).update(`${userId}.${id}.${issued}`).digest('base64url');
}

/** A device cookie value for `userId`: `<id>.<issued, epoch seconds>.<MAC>`; `id` is kept on renewal. */
export function newDeviceToken(keyring: Keyring, userId: string, id = randomBytes(16).toString('base64url'), now = Date.now()): string {
  const issued = String(Math.floor(now / 1000));
  return `${id}.${issued}.${deviceMac(keyring, userId, id, issued)}`;
}

/** The device id of a valid, unexpired device cookie of `userId`, else null. */
export function verifyDeviceToken(keyring: Keyring, userId: string, token: string | undefined, now = Date.now()): string | null {
  if (!token || token.length > 200) return null;
  const [id, issued, mac, extra] = token.split('.');
  if (!id || !issued || !mac || extra !== undefined || !/^\d{1,12}$/.test(issued)) return null;
  if (now - Number(issued) * 1000 > DEVICE_TTL_MS) return null;
  return safeEqual(mac, deviceMac(keyring, userId, id, issued)) ? id : null;
}

/**
 * Email and password sign-in. Failed attempts are counted per (client address, email): 10 within 15
 * minutes and further attempts from that pair are 429 with Retry-After, the right password included.
 * A client that presents a valid device cookie of this account (set by an earlier successful sign-in)
 * is counted on its own, per (device, email), so someone who only knows the email cannot lock the
 * account's owner out from a browser where the owner signed in before, even from the same address
 * (`docs/security.md`, "Login lockout").
 */
export async function login(
  { db, keyring }: Pick<AppContext, 'db' | 'keyring'>,
  input: { email: string; password: string; ip: string; device?: string },
): Promise<{ user: UserView; sessionToken: string; deviceToken: string }> {
  const email = input.email.trim().toLowerCase();
  const since = new Date(Date.now() - LOGIN_WINDOW_MS).toISOString();
  const user = await store.findUserByEmail(db, email);
  const deviceId = user ? verifyDeviceToken(keyring, user.id, input.device) : null;
  // The failure counter's key: the device when the client proved one, else the client address.
  const key = deviceId ? `device:${deviceId}` : input.ip;
  const recent = await store.countRecentLoginFailures(db, key, email, since);
  if (Number(recent.n) >= LOGIN_MAX_FAILURES) {
    const oldest = recent.oldest ? Date.parse(String(recent.oldest)) : Date.now();
    const retry = Math.max(1, Math.ceil((oldest + LOGIN_WINDOW_MS - Date.now()) / 1000));
    throw new AppError('RATE_LIMITED', 'too many failed sign-in attempts; try again later', { retryAfterSeconds: retry });
  }
  const ok = await verifyPassword(input.password, user?.passwordHash);
  if (!user || !ok) {
    await store.recordLoginFailure(db, { id: newId('lgf'), ip: key, email, at: nowIso() }, since);
    throw new AppError('UNAUTHENTICATED', 'wrong email or password');
  }
  const orgs = await store.listUserOrgs(db, user.id);
  if (orgs.length === 0) throw new AppError('UNAUTHENTICATED', 'this account belongs to no organization');
  const session = newSession(user.id, orgs[0]!.id);
  await store.insertSession(db, session.row);
  return { user: userView(user), sessionToken: session.token, deviceToken: newDeviceToken(keyring, user.id, deviceId ?? undefined) };
}

export async function logout({ db }: Deps, actor: Actor): Promise<void> {
  if (actor.sessionId) await store.deleteSession(db, actor.sessionId);
  accessChanged({ userId: actor.userId });
}

export async function me({ db }: Deps, actor: Actor) {
  const key = `${actor.userId}:${actor.orgId}:${actor.role}`;
  const hit = meCache.get(key);
  if (hit) return hit;
  const out = await loadMe(db, actor);
  meCache.set(key, out);
  return out;
}

async function loadMe(db: Db, actor: Actor) {
  const [user, orgs] = await Promise.all([store.findUserById(db, actor.userId), store.listUserOrgs(db, actor.userId)]);
  if (!user) throw new AppError('UNAUTHENTICATED', 'account no longer exists');
  const org = orgs.find((o) => o.id === actor.orgId);
  return {
    user: userView(user),
    org: org ? { id: org.id, name: org.name, isTeam: !!org.isTeam } : null,
    role: actor.role,
    orgs: orgs.map((o) => ({ id: o.id, name: o.name, isTeam: !!o.isTeam, role: o.role })),
  };
}

/** Points a session (by its token) at another org; used right after a signup that joined invited orgs. */
export async function switchSessionOrg({ db }: Deps, sessionToken: string, orgId: string): Promise<void> {
  const s = await store.findSessionActor(db, sha256Hex(sessionToken));
  if (s) await store.setSessionOrg(db, s.sessionId, orgId);
  invalidateAuthCache();
}

export async function switchOrg({ db }: Deps, actor: Actor, orgId: string) {
  if (actor.via !== 'session' || !actor.sessionId) {
    throw new AppError('FORBIDDEN', 'a personal access token is bound to the org it was made in; sign in with a session to switch orgs');
  }
  const m = await store.findMembership(db, orgId, actor.userId);
  if (!m) throw new AppError('NOT_FOUND', 'organization not found');
  await store.setSessionOrg(db, actor.sessionId, orgId);
  // The session's streams were opened in the org it left.
  accessChanged({ userId: actor.userId });
  return me({ db }, { ...actor, orgId, role: m.role as Role });
}

// ---------------------------------------------------------------- personal access tokens

export interface TokenView {
  id: string;
  name: string;
  prefix: string;
  orgId: string;
  scopes: string[] | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

function tokenView(t: { id: string; name: string; prefix: string; orgId: string; scopes: string | null; expiresAt: string | null; lastUsedAt: string | null; revokedAt: string | null; createdAt: string }): TokenView {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    orgId: t.orgId,
    scopes: t.scopes ? (JSON.parse(t.scopes) as string[]) : null,
    expiresAt: t.expiresAt,
    lastUsedAt: t.lastUsedAt,
    revokedAt: t.revokedAt,
    createdAt: t.createdAt,
  };
}

export interface CreateTokenInput {
  name: string;
  expiresInDays?: number;
  scopes?: string[];
}

/** Issues a token for (userId, orgId) without an acting user: used by sign-in flows and the admin CLI. */
export async function issueToken(db: Db, userId: string, orgId: string, input: CreateTokenInput, actorId: string | null) {
  const name = input.name.trim();
  if (!name) throw new AppError('VALIDATION_FAILED', 'name must not be empty', { field: 'name' });
  if (input.scopes) {
    input.scopes.forEach((s, i) => {
      if (!isTag(s)) throw new AppError('VALIDATION_FAILED', `scopes.${i} is not a permission tag (resource:level)`, { field: `scopes.${i}` });
    });
  }
  const token = newSecretToken(TOKEN_PREFIX);
  const at = nowIso();
  const row = {
    id: newId('tok'),
    userId,
    orgId,
    name,
    prefix: token.slice(0, TOKEN_PREFIX.length + 7),
    tokenHash: sha256Hex(token),
    scopes: input.scopes ? JSON.stringify([...new Set(input.scopes)]) : null,
    expiresAt: input.expiresInDays ? isoPlus(input.expiresInDays * 24 * 3600 * 1000) : null,
    lastUsedAt: null,
    revokedAt: null,
    createdAt: at,
  };
  await transaction(db, async (tx) => {
    await store.insertToken(tx, row);
    await insertAuditEvent(tx, { orgId, actorId, action: 'token.create', resourceType: 'token', resourceId: row.id, details: { name, scopes: input.scopes ?? null, userId } });
  });
  return { ...tokenView(row), token };
}

export async function createToken({ db }: Deps, actor: Actor, input: CreateTokenInput) {
  let scopes = input.scopes;
  if (actor.scopes) {
    // A scoped token cannot mint a wider one.
    if (!scopes) scopes = actor.scopes;
    scopes.forEach((s, i) => {
      if (isTag(s) && !actor.scopes!.some((h) => isTag(h) && tagCovers(parseTag(h), parseTag(s)))) {
        throw new AppError('FORBIDDEN', `scopes.${i} (${s}) is wider than the scopes of the token making it`);
      }
    });
  }
  return issueToken(db, actor.userId, actor.orgId, { ...input, scopes }, actor.userId);
}

/**
 * Token management by a scoped token: listing the user's tokens needs a scope covering `token:read`,
 * revoking another token `token:write` (`token:admin` covers both). A token may always revoke itself;
 * sessions and unscoped tokens manage every token of their user.
 */
export const TOKEN_LIST_SCOPE = 'token:read';
export const TOKEN_REVOKE_SCOPE = 'token:write';

function requireTokenScope(actor: Actor, scope: string): void {
  if (!scopesAllow(actor, parseTag(scope))) {
    throw new AppError('FORBIDDEN', `this token's scopes do not allow managing tokens: it needs ${scope} (or token:admin)`);
  }
}

export async function listTokens({ db }: Deps, actor: Actor): Promise<TokenView[]> {
  requireTokenScope(actor, TOKEN_LIST_SCOPE);
  return (await store.listUserTokens(db, actor.userId)).map(tokenView);
}

export async function revokeToken({ db }: Deps, actor: Actor, id: string): Promise<TokenView> {
  // Checked before the lookup, so a scoped token cannot tell the user's token ids from others.
  if (id !== actor.tokenId) requireTokenScope(actor, TOKEN_REVOKE_SCOPE);
  const t = await store.findUserToken(db, actor.userId, id);
  if (!t) throw new AppError('NOT_FOUND', 'token not found');
  if (!t.revokedAt) {
    const at = nowIso();
    await transaction(db, async (tx) => {
      await store.revokeToken(tx, actor.userId, id, at);
      await insertAuditEvent(tx, { orgId: t.orgId, actorId: actor.userId, action: 'token.revoke', resourceType: 'token', resourceId: id, details: { name: t.name } });
    });
    accessChanged({ userId: actor.userId });
    t.revokedAt = at;
  }
  return tokenView(t);
}

// ---------------------------------------------------------------- operator (CLI) account creation

export interface AdminCreateUserInput extends CreateUserInput {
  orgId?: string;
  role?: string;
  team?: boolean;
  /** Allow an email that already has an account (its password is set when `password` is given). */
  existing?: boolean;
}

/**
 * `berth admin create-user`: without an org, a new org (personal, or team with `team`) owned by the
 * user; with an org, the user (created when the email is new) joins it with `role` (default member).
 * Answers a new personal access token of that user acting in that org.
 */
export async function adminCreateUser({ db }: Deps, input: AdminCreateUserInput): Promise<{ userId: string; orgId: string; token: string }> {
  const role = input.role ?? (input.orgId ? 'member' : 'owner');
  if (!isRole(role)) throw new AppError('VALIDATION_FAILED', 'role must be one of owner, admin, member, restricted', { field: 'role' });
  const email = normaliseEmail(input.email);
  let user = await store.findUserByEmail(db, email);
  if (user && !input.existing) throw new AppError('CONFLICT', `an account with the email ${email} already exists; pass --existing to add it to an org or reset its password`, { field: 'email' });
  if (!user) {
    const row = await newUserRow({ ...input, email });
    await store.insertUser(db, row);
    user = row;
  } else if (input.password !== undefined) {
    checkPassword(input.password);
    await store.setPasswordHash(db, user.id, await hashPassword(input.password), nowIso());
    invalidateAuthCache();
  }
  let orgId: string;
  if (input.orgId) {
    const org = await store.findOrg(db, input.orgId);
    if (!org) throw new AppError('NOT_FOUND', `organization ${input.orgId} not found`);
    orgId = org.id;
    const existing = await store.findMembership(db, orgId, user.id);
    if (!existing) {
      await store.insertMembership(db, { orgId, userId: user.id, role, createdAt: nowIso() });
      invalidateAuthCache();
      await insertAuditEvent(db, { orgId, actorId: null, action: 'member.add', resourceType: 'membership', resourceId: user.id, details: { role, via: 'cli' } });
    }
  } else {
    const org = await createOrgWithOwner(db, user.id, input.team ? `${user.name}'s team` : `${user.name}'s workspace`, !!input.team);
    orgId = org.id;
    invalidateAuthCache();
  }
  const t = await issueToken(db, user.id, orgId, { name: 'admin create-user' }, null);
  return { userId: user.id, orgId, token: t.token };
}

