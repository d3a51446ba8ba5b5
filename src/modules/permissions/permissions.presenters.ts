import { Type, type Static } from '@sinclair/typebox';
import type { GrantsTable } from '../../db/schema.js';
import { Nullable } from '../../http/schemas.js';
import type { InvitationGrantsTable, InvitationsTable } from './permissions.tables.js';

/** The permissions area's API shapes: rows to answers, and the TypeBox schemas the routes declare. */

const Permissions = Type.Array(Type.String(), { description: 'read, write, admin (in level order)' });

// ---------------------------------------------------------------- org, catalog

export const OrgMetaView = Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean(), memberCount: Type.Integer() });
export const TeamOrgView = Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean() });

export const CatalogEntryView = Type.Object({
  id: Type.String(),
  label: Type.String(),
  meta: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'type-specific details (a project: slug; a repository: owner)' })),
});

// ---------------------------------------------------------------- grants

export const GrantView = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  resourceType: Type.String(),
  resourceId: Type.String({ description: 'a resource id, or `*` for every resource of the type' }),
  permissions: Permissions,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type GrantView = Static<typeof GrantView>;

export function presentGrant(g: GrantsTable): GrantView {
  return {
    id: g.id,
    userId: g.userId,
    resourceType: g.resourceType,
    resourceId: g.resourceId,
    permissions: JSON.parse(g.permissions) as string[],
    createdAt: g.createdAt,
    updatedAt: g.updatedAt,
  };
}

export const GrantRevokedView = Type.Object({ id: Type.String(), revoked: Type.Boolean() });

// ---------------------------------------------------------------- members

export const MemberView = Type.Object({ userId: Type.String(), email: Type.String(), name: Type.String(), role: Type.String(), joinedAt: Type.String() });
export type MemberView = Static<typeof MemberView>;

export function presentMember(m: MemberView): MemberView {
  return { userId: m.userId, email: m.email, name: m.name, role: m.role, joinedAt: m.joinedAt };
}

export const MemberRemovedView = Type.Object({ userId: Type.String(), removed: Type.Boolean() });

// ---------------------------------------------------------------- invitations

export type InvitationStatus = 'pending' | 'expired' | 'accepted' | 'declined' | 'cancelled';

export const InvitationView = Type.Object({
  id: Type.String(),
  orgId: Type.String(),
  email: Type.String(),
  role: Type.String(),
  status: Type.Union(['pending', 'expired', 'accepted', 'declined', 'cancelled'].map((s) => Type.Literal(s))),
  invitedBy: Nullable(Type.String()),
  acceptedBy: Nullable(Type.String()),
  createdAt: Type.String(),
  expiresAt: Type.String(),
  respondedAt: Nullable(Type.String()),
  materializedAt: Nullable(Type.String()),
  pendingGrants: Type.Array(Type.Object({ resourceType: Type.String(), resourceId: Type.String(), permissions: Permissions })),
  pendingGrantCount: Type.Integer(),
});
export interface InvitationView extends Omit<Static<typeof InvitationView>, 'status'> {
  status: InvitationStatus;
}

/** A pending invitation past this is no longer accepted (it reads as `expired`). */
export function isExpired(inv: Pick<InvitationsTable, 'expiresAt'>, now = Date.now()): boolean {
  return Date.parse(inv.expiresAt) <= now;
}

/** The stored status, except that a pending invitation past its expiry reads as `expired`. */
export function statusOf(inv: Pick<InvitationsTable, 'status' | 'expiresAt'>, now = Date.now()): InvitationStatus {
  if (inv.status === 'pending' && isExpired(inv, now)) return 'expired';
  return inv.status as InvitationStatus;
}

export function presentInvitation(inv: InvitationsTable, grants: InvitationGrantsTable[], now = Date.now()): InvitationView {
  const pendingGrants = grants.map((g) => ({ resourceType: g.resourceType, resourceId: g.resourceId, permissions: JSON.parse(g.permissions) as string[] }));
  return {
    id: inv.id,
    orgId: inv.orgId,
    email: inv.email,
    role: inv.role,
    status: statusOf(inv, now),
    invitedBy: inv.invitedBy,
    acceptedBy: inv.acceptedBy,
    createdAt: inv.createdAt,
    expiresAt: inv.expiresAt,
    respondedAt: inv.respondedAt,
    materializedAt: inv.materializedAt,
    pendingGrants,
    pendingGrantCount: pendingGrants.length,
  };
}

/** The public summary behind the invitation link: enough to say who invites you where, nothing more. */
export const InvitationSummaryView = Type.Object({
  id: Type.String(),
  orgName: Type.String({ description: 'the name of the organization the invitation joins' }),
  invitedBy: Nullable(Type.Object({ name: Type.String(), email: Type.String() }, { description: 'who sent it (null once that account is gone)' })),
  role: Type.String(),
  status: Type.Union(['pending', 'expired', 'accepted', 'declined', 'cancelled'].map((s) => Type.Literal(s))),
  expiresAt: Type.String(),
});
export type InvitationSummaryView = Static<typeof InvitationSummaryView>;

export const InvitationCreatedView = Type.Object({ id: Type.String(), email: Type.String(), role: Type.String(), pendingGrantCount: Type.Integer() });
export const MaterializedView = Type.Object({ materialized: Type.Integer({ description: 'grants written (pending grants whose resource is gone are dropped)' }) });
