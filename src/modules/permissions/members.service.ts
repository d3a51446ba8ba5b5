import type { Actor } from '../../authz/actor.js';
import { isRole, roleRank } from '../../authz/roles.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { deleteUserGrants } from './grants.store.js';
import * as store from './members.store.js';
import { presentMember, type MemberView } from './permissions.presenters.js';

type Deps = Pick<AppContext, 'db' | 'dialect' | 'access'>;

// ---------------------------------------------------------------- teams

export async function orgMeta({ db }: Deps, actor: Actor) {
  const org = await store.findOrg(db, actor.orgId);
  if (!org) throw new AppError('NOT_FOUND', 'organization not found');
  return { id: org.id, name: org.name, isTeam: !!org.isTeam, memberCount: await store.countMembers(db, org.id) };
}

/** A new team organization owned by the caller. The caller's other orgs (personal ones too) stay as they are. */
export async function createTeamOrg({ db, access }: Deps, actor: Actor, input: { name: string }) {
  const name = input.name.trim();
  if (!name) throw new AppError('VALIDATION_FAILED', 'name must not be empty', { field: 'name' });
  const at = nowIso();
  const org = { id: newId('org'), name, isTeam: 1, createdAt: at };
  await transaction(db, async (tx) => {
    await store.insertOrg(tx, org);
    await store.insertMember(tx, { orgId: org.id, userId: actor.userId, role: 'owner', createdAt: at });
    await insertAuditEvent(tx, { orgId: org.id, actorId: actor.userId, action: 'org.create', resourceType: 'org', resourceId: org.id, details: { name, isTeam: true } });
    await insertAuditEvent(tx, { orgId: org.id, actorId: actor.userId, action: 'member.add', resourceType: 'membership', resourceId: actor.userId, details: { role: 'owner', via: 'create-team-org' } });
  });
  // The caller's `me` lists the new org.
  access.changed({ userId: actor.userId, orgId: org.id });
  return { id: org.id, name, isTeam: true as const };
}

// ---------------------------------------------------------------- members

export async function listMembers({ db }: Deps, actor: Actor): Promise<MemberView[]> {
  return (await store.listMembers(db, actor.orgId)).map(presentMember);
}

/**
 * Changes a member's role. Nobody sets a role above their own; only an owner changes an owner;
 * the last owner cannot be demoted (409).
 */
export async function changeRole({ db, dialect, access }: Deps, actor: Actor, userId: string, role: string): Promise<MemberView> {
  if (!isRole(role)) throw new AppError('VALIDATION_FAILED', 'role must be one of owner, admin, member, restricted', { field: 'role' });
  if (roleRank(role) > roleRank(actor.role)) throw new AppError('FORBIDDEN', `you cannot make someone ${role}: it is above your own role`, { field: 'role' });
  const out = await transaction(db, async (tx) => {
    await store.lockOrg(tx, dialect, actor.orgId);
    const m = await store.findMember(tx, actor.orgId, userId);
    if (!m) throw new AppError('NOT_FOUND', 'member not found');
    if (m.role === role) return presentMember(m);
    if (m.role === 'owner' && actor.role !== 'owner') throw new AppError('FORBIDDEN', 'only an owner can change the role of an owner');
    if (m.role === 'owner' && (await store.countOwners(tx, actor.orgId)) <= 1) {
      throw new AppError('CONFLICT', 'the last owner of an organization cannot be demoted; make someone else owner first', { field: 'role' });
    }
    await store.setMemberRole(tx, actor.orgId, userId, role);
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'member.role_change', resourceType: 'membership', resourceId: userId, details: { from: m.role, to: role } });
    return presentMember({ ...m, role });
  });
  // The member's open streams re-check their access (a demotion ends what the new role cannot read).
  access.changed({ orgId: actor.orgId, userId });
  return out;
}

/**
 * Removes a member: the membership and the member's grants in this org go; their sessions and tokens
 * acting in this org stop working at once. Only an owner removes an owner; the last owner stays.
 */
export async function removeMember({ db, dialect, access }: Deps, actor: Actor, userId: string): Promise<{ userId: string; removed: true }> {
  await transaction(db, async (tx) => {
    await store.lockOrg(tx, dialect, actor.orgId);
    const m = await store.findMember(tx, actor.orgId, userId);
    if (!m) throw new AppError('NOT_FOUND', 'member not found');
    if (m.role === 'owner' && actor.role !== 'owner') throw new AppError('FORBIDDEN', 'only an owner can remove an owner');
    if (m.role === 'owner' && (await store.countOwners(tx, actor.orgId)) <= 1) {
      throw new AppError('CONFLICT', 'the last owner of an organization cannot be removed');
    }
    await store.deleteMember(tx, actor.orgId, userId);
    const grants = await deleteUserGrants(tx, actor.orgId, userId);
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'member.remove', resourceType: 'membership', resourceId: userId, details: { role: m.role, email: m.email, grantsRemoved: grants } });
  });
  access.changed({ orgId: actor.orgId, userId });
  return { userId, removed: true };
}

