import type { Actor } from '../../authz/actor.js';
import type { Role } from '../../authz/roles.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import { cachesOf, grantsIfRestricted } from './auth.credentials.js';
import { presentMe, type MeView } from './auth.presenters.js';
import * as store from './auth.store.js';

/** `me` (the signed-in user, the active org and role, every org of the user) and switching the active org. */

type Deps = Pick<AppContext, 'db' | 'ports'>;

/** The `me` answer: from this server's cache without a promise when a fresh one is there. */
export function me(ctx: Deps, actor: Actor): MeView | Promise<MeView> {
  const caches = cachesOf(ctx);
  const key = `${actor.userId}:${actor.orgId}:${actor.role}`;
  const hit = caches?.me.get(key);
  return hit ? withGrants(hit.value, grantsOf(actor)) : meFromStore(ctx, caches, key, actor);
}

/**
 * The `me` answer as JSON text written by `write` (the route's serializer): on a cache hit for the
 * actor it was last written for, the text kept with the cached answer, without a promise. The actor
 * object is the credential cache's: a new one (a new credential, or any access change, which drops
 * both caches) is written anew, so the grants in the text are always the actor's.
 */
export function meJson(ctx: Deps, actor: Actor, write: (value: MeView) => string): string | Promise<string> {
  const caches = cachesOf(ctx);
  const key = `${actor.userId}:${actor.orgId}:${actor.role}`;
  const hit = caches?.me.get(key);
  if (!hit) return meFromStore(ctx, caches, key, actor).then(write);
  if (hit.json?.for !== actor) hit.json = { for: actor, text: write(withGrants(hit.value, grantsOf(actor))) };
  return hit.json.text;
}

/** The grants come from the actor (loaded with its credential, dropped with it on every access change). */
function grantsOf(actor: Actor): MeView['grants'] {
  return actor.grants.map((g) => ({ resourceType: g.resourceType, resourceId: g.resourceId, permissions: g.permissions }));
}

async function meFromStore(ctx: Deps, caches: ReturnType<typeof cachesOf>, key: string, actor: Actor): Promise<MeView> {
  const gen = caches?.me.generation ?? 0;
  const [user, orgs] = await Promise.all([store.findUserById(ctx.db, actor.userId), store.listUserOrgs(ctx.db, actor.userId)]);
  if (!user) throw new AppError('UNAUTHENTICATED', 'account no longer exists');
  const value = presentMe(user, actor.orgId, actor.role, orgs);
  caches?.me.set(key, { userId: actor.userId, orgIds: orgs.map((o) => o.id), value }, gen);
  return withGrants(value, grantsOf(actor));
}

/**
 * The answer with the actor's grants, its fields written out: an object spread followed by a property
 * (`{ ...value, grants }`) costs microseconds per call on Node 20's V8 (docs/decisions.md, "Object
 * spread on request paths"), and this runs on every `GET /api/auth/me`.
 */
function withGrants(v: MeView, grants: MeView['grants']): MeView {
  return { user: v.user, org: v.org, role: v.role, orgs: v.orgs, grants };
}

/** Points a session (by its token) at another org; used right after a signup that joined invited orgs. */
export async function switchSessionOrg({ db, access }: Pick<AppContext, 'db' | 'access'>, sessionToken: string, orgId: string): Promise<void> {
  const s = await store.findSessionActor(db, sha256Hex(sessionToken));
  if (!s) return;
  await store.setSessionOrg(db, s.sessionId, orgId);
  access.changed({ userId: s.userId });
}

/** POST switch-org: the session acts in another org of its user from now on; answers `me` there. */
export async function switchOrg(ctx: Pick<AppContext, 'db' | 'access' | 'ports'>, actor: Actor, orgId: string): Promise<MeView> {
  if (actor.via !== 'session' || !actor.sessionId) {
    throw new AppError('FORBIDDEN', 'a personal access token is bound to the org it was made in; sign in with a session to switch orgs');
  }
  const m = await store.findMembership(ctx.db, orgId, actor.userId);
  if (!m) throw new AppError('NOT_FOUND', 'organization not found');
  await store.setSessionOrg(ctx.db, actor.sessionId, orgId);
  // The session's cached credential and the streams it opened were in the org it left.
  ctx.access.changed({ userId: actor.userId });
  const role = m.role as Role;
  return me(ctx, { ...actor, orgId, role, grants: await grantsIfRestricted(ctx.db, role, orgId, actor.userId) });
}
