import type { Actor } from '../../authz/actor.js';
import { isRole, roleRank } from '../../authz/roles.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { catalogHas, WILDCARD_ONLY_TYPES } from './catalog.js';
import { checkGrantShape, checkGrantsWritable, writeGrant, type CheckedGrant, type GrantInput } from './grants.service.js';
import * as store from './invitations.store.js';
import * as members from './members.store.js';
import { isExpired, presentInvitation, statusOf, type InvitationSummaryView, type InvitationView } from './permissions.presenters.js';
import type { InvitationsTable } from './permissions.tables.js';

/** An invitation can be accepted for 7 days after it was made or last resent. */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

async function viewOf(ctx: AppContext, inv: InvitationsTable): Promise<InvitationView> {
  return presentInvitation(inv, await store.listInvitationGrants(ctx.db, inv.orgId, [inv.id]), ctx.clock.now());
}

function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 254) throw new AppError('VALIDATION_FAILED', 'email is not a valid address', { field: 'email' });
  return e;
}

// ---------------------------------------------------------------- admin side (org-scoped)

/**
 * Lists the org's invitations, newest first, with their pending grants. By default the open ones
 * (pending and expired, i.e. not yet answered); `status` picks one status, or `all`.
 */
export async function listInvitations(ctx: AppContext, actor: Actor, status?: string): Promise<InvitationView[]> {
  const want = status ?? 'open';
  const stored = want === 'all' ? null : want === 'open' || want === 'expired' || want === 'pending' ? ['pending'] : [want];
  const now = ctx.clock.now();
  const rows = (await store.listInvitations(ctx.db, actor.orgId, stored)).filter((inv) => {
    const s = statusOf(inv, now);
    return want === 'pending' ? s === 'pending' : want === 'expired' ? s === 'expired' : true;
  });
  const grants = await store.listInvitationGrants(ctx.db, actor.orgId, rows.map((r) => r.id));
  return rows.map((r) => presentInvitation(r, grants.filter((g) => g.invitationId === r.id), now));
}

export interface InviteInput {
  email: string;
  role?: string;
  grants?: GrantInput[];
}

/**
 * POST invite-with-grants. Nobody invites above their own role (an admin cannot invite an owner)
 * nor attaches grants they do not hold. The pending grants are checked like PUT grants. Without a
 * role the invitee joins as `restricted` when grants are attached, else as `member`.
 */
export async function invite(ctx: AppContext, actor: Actor, input: InviteInput) {
  const email = normaliseEmail(input.email);
  const role = input.role ?? ((input.grants ?? []).length ? 'restricted' : 'member');
  if (!isRole(role)) throw new AppError('VALIDATION_FAILED', 'role must be one of owner, admin, member, restricted', { field: 'role' });
  if (roleRank(role) > roleRank(actor.role)) throw new AppError('FORBIDDEN', `you cannot invite someone as ${role}: it is above your own role`, { field: 'role' });
  const desired = new Map<string, { g: CheckedGrant; prefix: string }>();
  (input.grants ?? []).forEach((raw, i) => {
    const prefix = `grants.${i}.`;
    const g = checkGrantShape(raw, prefix);
    const k = `${g.resourceType}\u0000${g.resourceId}`;
    desired.delete(k);
    desired.set(k, { g, prefix });
  });
  const wanted = [...desired.values()].filter((d) => d.g.permissions.length > 0);
  await checkGrantsWritable(ctx, actor, actor.orgId, wanted);

  const at = clockIso(ctx.clock);
  const inv: InvitationsTable = {
    id: newId('inv'),
    orgId: actor.orgId,
    email,
    role,
    status: 'pending',
    invitedBy: actor.userId,
    acceptedBy: null,
    createdAt: at,
    updatedAt: at,
    expiresAt: clockIso(ctx.clock, INVITATION_TTL_MS),
    respondedAt: null,
    materializedAt: null,
  };
  await transaction(ctx.db, async (tx) => {
    const user = await tx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    if (user && (await members.findMember(tx, actor.orgId, user.id))) {
      throw new AppError('CONFLICT', 'this person is already a member of the organization', { field: 'email' });
    }
    for (const old of await store.findPendingForEmail(tx, actor.orgId, email)) {
      if (!isExpired(old, ctx.clock.now())) throw new AppError('CONFLICT', 'a pending invitation for this email exists; resend or cancel it', { field: 'email' });
      // An expired invitation is replaced by the new one.
      await store.updateInvitation(tx, actor.orgId, old.id, { status: 'cancelled', updatedAt: at, respondedAt: at }, 'pending');
      await store.deleteInvitationGrants(tx, actor.orgId, old.id);
      await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'invitation.cancel', resourceType: 'invitation', resourceId: old.id, details: { email, reason: 'replaced' } });
    }
    await store.insertInvitation(tx, inv);
    await store.insertInvitationGrants(
      tx,
      wanted.map(({ g }) => ({
        id: newId('ivg'),
        invitationId: inv.id,
        orgId: actor.orgId,
        resourceType: g.resourceType,
        resourceId: g.resourceId,
        permissions: JSON.stringify(g.permissions),
        createdAt: at,
      })),
    );
    await insertAuditEvent(tx, {
      orgId: actor.orgId,
      actorId: actor.userId,
      action: 'invitation.create',
      resourceType: 'invitation',
      resourceId: inv.id,
      details: { email, role, pendingGrants: wanted.map(({ g }) => g) },
    });
  });
  return { id: inv.id, email, role, pendingGrantCount: wanted.length };
}

async function loadInOrg(ctx: AppContext, actor: Actor, id: string): Promise<InvitationsTable> {
  const inv = await store.findInvitationInOrg(ctx.db, actor.orgId, id);
  if (!inv) throw new AppError('NOT_FOUND', 'invitation not found');
  return inv;
}

/** Cancels an invitation that was not answered yet (pending or expired); its pending grants go. */
export async function cancelInvitation(ctx: AppContext, actor: Actor, id: string): Promise<InvitationView> {
  const inv = await loadInOrg(ctx, actor, id);
  if (inv.status !== 'pending') throw new AppError('CONFLICT', `the invitation is ${inv.status}; only an unanswered invitation can be cancelled`);
  const at = clockIso(ctx.clock);
  await transaction(ctx.db, async (tx) => {
    const n = await store.updateInvitation(tx, actor.orgId, id, { status: 'cancelled', updatedAt: at, respondedAt: at }, 'pending');
    if (!n) throw new AppError('CONFLICT', 'the invitation was answered meanwhile');
    await store.deleteInvitationGrants(tx, actor.orgId, id);
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'invitation.cancel', resourceType: 'invitation', resourceId: id, details: { email: inv.email } });
  });
  return viewOf(ctx, { ...inv, status: 'cancelled', updatedAt: at, respondedAt: at });
}

/** Resends an unanswered invitation (also an expired one): a fresh 7-day expiry. */
export async function resendInvitation(ctx: AppContext, actor: Actor, id: string): Promise<InvitationView> {
  const inv = await loadInOrg(ctx, actor, id);
  if (inv.status !== 'pending') throw new AppError('CONFLICT', `the invitation is ${inv.status}; only an unanswered invitation can be resent`);
  if (isRole(inv.role) && roleRank(inv.role) > roleRank(actor.role)) throw new AppError('FORBIDDEN', `you cannot invite someone as ${inv.role}: it is above your own role`);
  const at = clockIso(ctx.clock);
  const expiresAt = clockIso(ctx.clock, INVITATION_TTL_MS);
  await transaction(ctx.db, async (tx) => {
    const n = await store.updateInvitation(tx, actor.orgId, id, { updatedAt: at, expiresAt }, 'pending');
    if (!n) throw new AppError('CONFLICT', 'the invitation was answered meanwhile');
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'invitation.resend', resourceType: 'invitation', resourceId: id, details: { email: inv.email, expiresAt } });
  });
  return viewOf(ctx, { ...inv, updatedAt: at, expiresAt });
}

// ---------------------------------------------------------------- invitee side (authorized by the invitation)

/**
 * Loads an invitation by id whatever the caller's active org, for a caller whose email it names
 * (case-insensitive). Unknown id: 404; someone else's invitation: 403.
 */
async function loadForInvitee(ctx: AppContext, actor: Actor, id: string): Promise<InvitationsTable> {
  const inv = await store.findInvitationAnyOrg(ctx.db, id);
  if (!inv) throw new AppError('NOT_FOUND', 'invitation not found');
  if (inv.email.toLowerCase() !== actor.email.trim().toLowerCase()) throw new AppError('FORBIDDEN', 'this invitation was sent to another email address');
  return inv;
}

/**
 * The invitation link's public summary (GET invitations/:id/summary, no credential): the org's name,
 * who invited, the role, the status. The id is the link's secret (20 random characters); nothing
 * else of the org, no grants, no invitee email. Unknown id: 404.
 */
export async function invitationSummary(ctx: AppContext, id: string): Promise<InvitationSummaryView> {
  const row = await store.findInvitationSummary(ctx.db, id);
  if (!row) throw new AppError('NOT_FOUND', 'invitation not found');
  const invitedBy = row.inviterEmail ? { name: row.inviterName ?? '', email: row.inviterEmail } : null;
  return { id: row.id, orgName: row.orgName, invitedBy, role: row.role, status: statusOf(row, ctx.clock.now()), expiresAt: row.expiresAt };
}

/** Ids of the unexpired pending invitations addressed to `email`, oldest first, in any org. */
export async function openInvitationIdsFor(ctx: AppContext, email: string): Promise<string[]> {
  const rows = await store.findPendingAnyOrgForEmail(ctx.db, email.trim().toLowerCase());
  return rows.filter((r) => !isExpired(r, ctx.clock.now())).map((r) => r.id);
}

/**
 * The invited user joins the org with the invitation's role (a member already keeps their role) and
 * the status becomes `accepted`. Accepting twice answers the accepted invitation again.
 */
export async function acceptInvitation(ctx: AppContext, actor: Actor, id: string): Promise<InvitationView> {
  const inv = await loadForInvitee(ctx, actor, id);
  if (inv.status === 'accepted' && inv.acceptedBy === actor.userId) return viewOf(ctx, inv);
  if (inv.status !== 'pending') throw new AppError('CONFLICT', `the invitation is ${inv.status}`);
  if (isExpired(inv, ctx.clock.now())) throw new AppError('CONFLICT', 'the invitation has expired; ask for it to be resent');
  const at = clockIso(ctx.clock);
  await transaction(ctx.db, async (tx) => {
    const n = await store.updateInvitation(tx, inv.orgId, id, { status: 'accepted', acceptedBy: actor.userId, updatedAt: at, respondedAt: at }, 'pending');
    if (!n) throw new AppError('CONFLICT', 'the invitation was answered meanwhile');
    const existing = await members.findMember(tx, inv.orgId, actor.userId);
    if (!existing) {
      await members.insertMember(tx, { orgId: inv.orgId, userId: actor.userId, role: inv.role, createdAt: at });
      await insertAuditEvent(tx, { orgId: inv.orgId, actorId: actor.userId, action: 'member.add', resourceType: 'membership', resourceId: actor.userId, details: { role: inv.role, via: 'invitation', invitationId: id } });
    }
    await insertAuditEvent(tx, { orgId: inv.orgId, actorId: actor.userId, action: 'invitation.accept', resourceType: 'invitation', resourceId: id, details: { email: inv.email, role: existing ? existing.role : inv.role } });
  });
  // The invitee is a member of one more org (their `me`, their access there).
  ctx.access.changed({ userId: actor.userId, orgId: inv.orgId });
  return viewOf(ctx, { ...inv, status: 'accepted', acceptedBy: actor.userId, updatedAt: at, respondedAt: at });
}

/** The invited user declines: status `declined`, pending grants dropped. */
export async function declineInvitation(ctx: AppContext, actor: Actor, id: string): Promise<InvitationView> {
  const inv = await loadForInvitee(ctx, actor, id);
  if (inv.status === 'declined') return viewOf(ctx, inv);
  if (inv.status !== 'pending') throw new AppError('CONFLICT', `the invitation is ${inv.status}`);
  const at = clockIso(ctx.clock);
  await transaction(ctx.db, async (tx) => {
    const n = await store.updateInvitation(tx, inv.orgId, id, { status: 'declined', updatedAt: at, respondedAt: at }, 'pending');
    if (!n) throw new AppError('CONFLICT', 'the invitation was answered meanwhile');
    await store.deleteInvitationGrants(tx, inv.orgId, id);
    await insertAuditEvent(tx, { orgId: inv.orgId, actorId: actor.userId, action: 'invitation.decline', resourceType: 'invitation', resourceId: id, details: { email: inv.email } });
  });
  return viewOf(ctx, { ...inv, status: 'declined', updatedAt: at, respondedAt: at });
}

/**
 * Turns an accepted invitation's pending grants into real grants of the joined user, in one
 * transaction, and clears the pending rows. 400 until accepted or when expired; 403 for another
 * email. A pending grant whose resource was deleted meanwhile is dropped, not materialized.
 */
export async function materializeInvitation(ctx: AppContext, actor: Actor, id: string): Promise<{ materialized: number }> {
  const inv = await loadForInvitee(ctx, actor, id);
  if (inv.status !== 'accepted') throw new AppError('INVITATION_NOT_ACCEPTED', `the invitation is ${statusOf(inv, ctx.clock.now())}; it must be accepted first`);
  if (isExpired(inv, ctx.clock.now())) throw new AppError('INVITATION_NOT_ACCEPTED', 'the invitation has expired');
  const userId = inv.acceptedBy ?? actor.userId;
  if (!(await members.findMember(ctx.db, inv.orgId, userId))) throw new AppError('CONFLICT', 'you are no longer a member of the organization of this invitation');
  const pending = await store.listInvitationGrants(ctx.db, inv.orgId, [inv.id]);
  const live: CheckedGrant[] = [];
  for (const p of pending) {
    const g = { resourceType: p.resourceType, resourceId: p.resourceId, permissions: JSON.parse(p.permissions) as string[] } as CheckedGrant;
    if (g.resourceId === '*' || (!WILDCARD_ONLY_TYPES.includes(g.resourceType) && (await catalogHas(ctx, g.resourceType, inv.orgId, g.resourceId)))) live.push(g);
  }
  const at = clockIso(ctx.clock);
  await transaction(ctx.db, async (tx) => {
    // Only the transaction that clears the pending rows writes grants: a concurrent call deletes
    // fewer rows than it read (PostgreSQL waits on the row locks) and rolls back.
    const cleared = await store.deleteInvitationGrants(tx, inv.orgId, inv.id);
    if (cleared !== pending.length) throw new AppError('CONFLICT', 'the invitation is being materialized by another request');
    for (const g of live) await writeGrant(tx, inv.orgId, actor.userId, userId, g, `invitation:${inv.id}`);
    await store.updateInvitation(tx, inv.orgId, inv.id, { materializedAt: at, updatedAt: at });
    await insertAuditEvent(tx, { orgId: inv.orgId, actorId: actor.userId, action: 'invitation.materialize', resourceType: 'invitation', resourceId: inv.id, details: { userId, materialized: live.length, dropped: pending.length - live.length } });
  });
  ctx.access.changed({ userId, orgId: inv.orgId });
  return { materialized: live.length };
}


