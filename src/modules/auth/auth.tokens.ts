import type { Actor } from '../../authz/actor.js';
import { scopesAllow } from '../../authz/authorize.js';
import { isTag, parseTag, tagCovers } from '../../authz/tags.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import { clockIso, systemClock, type Clock } from '../../lib/clock.js';
import { newId, newSecretToken } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { TOKEN_PREFIX } from './auth.credentials.js';
import { presentToken, type TokenView } from './auth.presenters.js';
import * as store from './auth.store.js';

/**
 * Personal access tokens: bound to the user and the org they were made in, optionally narrowed by
 * scopes (permission tags), shown once. Token management by a scoped token: listing the user's tokens
 * needs a scope covering `token:read`, revoking another token `token:write` (`token:admin` covers
 * both). A token may always revoke itself; sessions and unscoped tokens manage every token of their user.
 */
export const TOKEN_LIST_SCOPE = 'token:read';
export const TOKEN_REVOKE_SCOPE = 'token:write';

export interface CreateTokenInput {
  name: string;
  expiresInDays?: number;
  scopes?: string[];
  /** The org the token is bound to: the actor's active one by default, else another org the user is a member of (`berth switch`). */
  orgId?: string;
}

/**
 * Issues a token for (userId, orgId) without an acting user: used by sign-in flows and the admin CLI.
 * Its expiry counts from `clock` (the server's, `ctx.clock`, when a request makes it).
 */
export async function issueToken(db: Db, userId: string, orgId: string, input: CreateTokenInput, actorId: string | null, clock: Clock = systemClock): Promise<TokenView & { token: string }> {
  const name = input.name.trim();
  if (!name) throw new AppError('VALIDATION_FAILED', 'name must not be empty', { field: 'name' });
  if (input.scopes) {
    input.scopes.forEach((s, i) => {
      if (!isTag(s)) throw new AppError('VALIDATION_FAILED', `scopes.${i} is not a permission tag (resource:level)`, { field: `scopes.${i}` });
    });
  }
  const token = newSecretToken(TOKEN_PREFIX);
  const at = clockIso(clock);
  const row = {
    id: newId('tok'),
    userId,
    orgId,
    name,
    prefix: token.slice(0, TOKEN_PREFIX.length + 7),
    tokenHash: sha256Hex(token),
    scopes: input.scopes ? JSON.stringify([...new Set(input.scopes)]) : null,
    expiresAt: input.expiresInDays ? clockIso(clock, input.expiresInDays * 24 * 3600 * 1000) : null,
    lastUsedAt: null,
    revokedAt: null,
    createdAt: at,
  };
  await transaction(db, async (tx) => {
    await store.insertToken(tx, row);
    await insertAuditEvent(tx, { orgId, actorId, action: 'token.create', resourceType: 'token', resourceId: row.id, details: { name, scopes: input.scopes ?? null, userId } });
  });
  return { ...presentToken(row), token };
}

/** POST tokens: a token of the actor in its active org (or another of its orgs); a scoped token cannot mint a wider one. */
export async function createToken({ db, access, clock }: Pick<AppContext, 'db' | 'access' | 'clock'>, actor: Actor, input: CreateTokenInput): Promise<TokenView & { token: string }> {
  let scopes = input.scopes;
  if (actor.scopes) {
    if (!scopes) scopes = actor.scopes;
    scopes.forEach((s, i) => {
      if (isTag(s) && !actor.scopes!.some((h) => isTag(h) && tagCovers(parseTag(h), parseTag(s)))) {
        throw new AppError('FORBIDDEN', `scopes.${i} (${s}) is wider than the scopes of the token making it`);
      }
    });
  }
  const orgId = input.orgId ?? actor.orgId;
  // Another org of the user's own (a token is bound to one org; the CLI's `switch` mints one per org).
  // Scopes carry over as above: a scoped token cannot mint a wider one in any org.
  if (orgId !== actor.orgId && !(await store.findMembership(db, orgId, actor.userId))) throw new AppError('NOT_FOUND', 'organization not found', { field: 'orgId' });
  const { orgId: _org, ...rest } = input;
  const out = await issueToken(db, actor.userId, orgId, { ...rest, scopes }, actor.userId, clock);
  access.changed({ userId: actor.userId, orgId });
  return out;
}

function requireTokenScope(actor: Actor, scope: string): void {
  if (!scopesAllow(actor, parseTag(scope))) {
    throw new AppError('FORBIDDEN', `this token's scopes do not allow managing tokens: it needs ${scope} (or token:admin)`);
  }
}

export async function listTokens({ db }: Pick<AppContext, 'db'>, actor: Actor): Promise<TokenView[]> {
  requireTokenScope(actor, TOKEN_LIST_SCOPE);
  return (await store.listUserTokens(db, actor.userId)).map(presentToken);
}

/** DELETE tokens/:id: revokes one of the actor's tokens; requests and streams made with it end at once. */
export async function revokeToken({ db, access, clock }: Pick<AppContext, 'db' | 'access' | 'clock'>, actor: Actor, id: string): Promise<TokenView> {
  // Checked before the lookup, so a scoped token cannot tell the user's token ids from others.
  if (id !== actor.tokenId) requireTokenScope(actor, TOKEN_REVOKE_SCOPE);
  const t = await store.findUserToken(db, actor.userId, id);
  if (!t) throw new AppError('NOT_FOUND', 'token not found');
  if (!t.revokedAt) {
    const at = clockIso(clock);
    await transaction(db, async (tx) => {
      await store.revokeToken(tx, actor.userId, id, at);
      await insertAuditEvent(tx, { orgId: t.orgId, actorId: actor.userId, action: 'token.revoke', resourceType: 'token', resourceId: id, details: { name: t.name } });
    });
    access.changed({ userId: actor.userId });
    t.revokedAt = at;
  }
  return presentToken(t);
}
