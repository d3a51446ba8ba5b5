import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import { GRANT_PERMISSIONS, isGrantResourceType, type GrantResourceType } from '../../authz/grants.js';
import { LEVELS, maxLevel } from '../../authz/tags.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import type { GrantsTable } from '../../db/schema.js';
import { AppError } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { catalogHas, WILDCARD_ONLY_TYPES } from './catalog.js';
import * as store from './grants.store.js';
import { presentGrant, type GrantView } from './permissions.presenters.js';
import { findMember } from './members.store.js';

type Deps = AppContext;

/** A grant as a client sends it (POST grants, the entries of PUT grants and of invite-with-grants). */
export interface GrantInput {
  resourceType: string;
  resourceId: string;
  permissions?: string[];
}

/** A checked grant: known type, permissions deduplicated in level order (possibly empty). */
export interface CheckedGrant {
  resourceType: GrantResourceType;
  resourceId: string;
  permissions: string[];
}

/** The permission-tag resource a grant type widens (for "nobody grants above what they hold"). */
const TAG_RESOURCE_OF: Record<GrantResourceType, string> = {
  project: 'project',
  server: 'server',
  mail_server: 'mail_server',
  backup_destination: 'backup_destination',
  billing: 'billing',
  audit: 'audit',
  gitprovider_installation: 'gitprovider',
  gitprovider_repository: 'gitprovider',
};

const key = (type: string, id: string) => `${type}\u0000${id}`;

/**
 * Shape checks of one grant (no database): the type is in the closed list, each permission is one
 * of read/write/admin. `prefix` is the dot path of the entry (`grants.2.`) for error fields.
 */
export function checkGrantShape(input: GrantInput, prefix = ''): CheckedGrant {
  if (!isGrantResourceType(input.resourceType)) {
    throw new AppError('INVALID_RESOURCE_TYPE', `${prefix}resourceType must be one of project, server, mail_server, backup_destination, billing, audit, gitprovider_installation, gitprovider_repository`, {
      field: `${prefix}resourceType`,
    });
  }
  const resourceId = input.resourceId.trim();
  if (!resourceId) throw new AppError('VALIDATION_FAILED', `${prefix}resourceId must not be empty`, { field: `${prefix}resourceId` });
  const perms = input.permissions ?? [];
  perms.forEach((p, i) => {
    if (!(GRANT_PERMISSIONS as readonly string[]).includes(p)) {
      throw new AppError('VALIDATION_FAILED', `${prefix}permissions.${i} must be one of read, write, admin`, { field: `${prefix}permissions.${i}` });
    }
  });
  const permissions = LEVELS.filter((l) => perms.includes(l));
  return { resourceType: input.resourceType, resourceId, permissions };
}

/**
 * Database checks of grants about to be written in `orgId`: a non-wildcard id must name a resource
 * of the org (the catalog registry answers; `billing` and `audit` have only `*`), and the actor must
 * itself hold what it grants (nobody grants above their own rights; a scoped token is narrowed).
 */
export async function checkGrantsWritable(ctx: Deps, actor: Actor, orgId: string, grants: { g: CheckedGrant; prefix: string }[]): Promise<void> {
  for (const { g, prefix } of grants) {
    if (g.resourceId !== '*') {
      const ok = !WILDCARD_ONLY_TYPES.includes(g.resourceType) && (await catalogHas(ctx, g.resourceType, orgId, g.resourceId));
      if (!ok) {
        throw new AppError('RESOURCE_NOT_IN_ORG', `${prefix}resourceId does not name a ${g.resourceType} of this organization`, { field: `${prefix}resourceId` });
      }
    }
    const level = maxLevel(g.permissions);
    if (level) {
      const tag = `${TAG_RESOURCE_OF[g.resourceType]}:${level}`;
      const ref = g.resourceId === '*' ? undefined : { orgId, grantKeys: [{ type: g.resourceType, id: g.resourceId }] };
      if (!can(actor, tag, ref)) {
        throw new AppError('FORBIDDEN', `you cannot grant ${level} on ${g.resourceType} ${g.resourceId}: you do not hold it yourself`, { field: `${prefix}permissions` });
      }
    }
  }
}

async function requireMember(db: Db, orgId: string, userId: string, field = 'userId') {
  const m = await findMember(db, orgId, userId);
  if (!m) throw new AppError('NOT_FOUND', 'member not found', { field });
  return m;
}

export async function listGrants({ db }: Deps, actor: Actor, userId?: string): Promise<GrantView[]> {
  if (userId) await requireMember(db, actor.orgId, userId);
  return (await store.listOrgGrants(db, actor.orgId, userId)).map(presentGrant);
}

/** Writes one grant tuple (insert, replace or delete) with its audit event. Runs inside `tx`. */
export async function writeGrant(tx: Db, orgId: string, actorId: string | null, userId: string, g: CheckedGrant, via?: string): Promise<GrantsTable | null> {
  const existing = await store.findGrantByTuple(tx, orgId, userId, g.resourceType, g.resourceId);
  const base = { userId, resourceType: g.resourceType, resourceId: g.resourceId, ...(via ? { via } : {}) };
  if (g.permissions.length === 0) {
    if (existing) {
      await store.deleteGrant(tx, orgId, existing.id);
      await insertAuditEvent(tx, { orgId, actorId, action: 'grant.revoke', resourceType: 'grant', resourceId: existing.id, details: { ...base, previous: JSON.parse(existing.permissions) } });
    }
    return null;
  }
  const permissions = JSON.stringify(g.permissions);
  if (existing && existing.permissions === permissions) return existing;
  const at = nowIso();
  const row = await store.upsertGrant(tx, { id: existing?.id ?? newId('grt'), orgId, userId, resourceType: g.resourceType, resourceId: g.resourceId, permissions, createdAt: at, updatedAt: at });
  await insertAuditEvent(tx, {
    orgId,
    actorId,
    action: existing ? 'grant.update' : 'grant.create',
    resourceType: 'grant',
    resourceId: row.id,
    details: { ...base, permissions: g.permissions, ...(existing ? { previous: JSON.parse(existing.permissions) } : {}) },
  });
  return row;
}

export interface UpsertGrantInput extends GrantInput {
  userId: string;
}

/** POST grants: idempotent upsert keyed on (userId, resourceType, resourceId); empty permissions revoke. */
export async function upsertGrant(ctx: Deps, actor: Actor, input: UpsertGrantInput): Promise<{ grant: GrantView | null }> {
  const g = checkGrantShape(input);
  await requireMember(ctx.db, actor.orgId, input.userId);
  await checkGrantsWritable(ctx, actor, actor.orgId, [{ g, prefix: '' }]);
  const row = await transaction(ctx.db, (tx) => writeGrant(tx, actor.orgId, actor.userId, input.userId, g));
  ctx.access.changed({ orgId: actor.orgId, userId: input.userId });
  return { grant: row ? presentGrant(row) : null };
}

/**
 * PUT grants: replaces a member's whole grant set. Added or changed tuples are upserted, absent ones
 * deleted, zero-permission entries dropped; a repeated tuple counts once (the last one wins).
 */
export async function replaceGrants(ctx: Deps, actor: Actor, input: { userId: string; grants: GrantInput[] }): Promise<GrantView[]> {
  const desired = new Map<string, { g: CheckedGrant; prefix: string }>();
  input.grants.forEach((raw, i) => {
    const prefix = `grants.${i}.`;
    const g = checkGrantShape(raw, prefix);
    const k = key(g.resourceType, g.resourceId);
    desired.delete(k);
    desired.set(k, { g, prefix });
  });
  await requireMember(ctx.db, actor.orgId, input.userId);
  const wanted = [...desired.values()].filter((d) => d.g.permissions.length > 0);
  await checkGrantsWritable(ctx, actor, actor.orgId, wanted);
  await transaction(ctx.db, async (tx) => {
    const existing = await store.listOrgGrants(tx, actor.orgId, input.userId);
    for (const e of existing) {
      if (!desired.has(key(e.resourceType, e.resourceId)) || desired.get(key(e.resourceType, e.resourceId))!.g.permissions.length === 0) {
        await writeGrant(tx, actor.orgId, actor.userId, input.userId, { resourceType: e.resourceType as GrantResourceType, resourceId: e.resourceId, permissions: [] });
      }
    }
    for (const { g } of wanted) await writeGrant(tx, actor.orgId, actor.userId, input.userId, g);
  });
  ctx.access.changed({ orgId: actor.orgId, userId: input.userId });
  return (await store.listOrgGrants(ctx.db, actor.orgId, input.userId)).map(presentGrant);
}

/** DELETE grants/:id (the route's gate already loaded the grant in the actor's org). */
export async function revokeGrant({ db, access }: Deps, actor: Actor, id: string): Promise<{ id: string; revoked: true }> {
  const userId = await transaction(db, async (tx) => {
    const g = await store.findGrant(tx, actor.orgId, id);
    if (!g) throw new AppError('NOT_FOUND', 'grant not found');
    await writeGrant(tx, actor.orgId, actor.userId, g.userId, { resourceType: g.resourceType as GrantResourceType, resourceId: g.resourceId, permissions: [] });
    return g.userId;
  });
  access.changed({ orgId: actor.orgId, userId });
  return { id, revoked: true };
}
