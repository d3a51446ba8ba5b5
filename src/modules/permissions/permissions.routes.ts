import { Type } from '@sinclair/typebox';
import type { GrantsTable } from '../../db/schema.js';
import { Answer, defineRoute, type ModuleDef, type ResourceResolver } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { listCatalog } from './catalog.service.js';
import * as grants from './grants.service.js';
import { findGrant } from './grants.store.js';
import * as invitations from './invitations.service.js';
import { findInvitationInOrg } from './invitations.store.js';
import * as members from './members.service.js';
import { findMember } from './members.store.js';
import {
  CatalogEntryView,
  GrantRevokedView,
  GrantView,
  InvitationCreatedView,
  InvitationSummaryView,
  InvitationView,
  MaterializedView,
  MemberRemovedView,
  MemberView,
  OrgMetaView,
  TeamOrgView,
} from './permissions.presenters.js';
import type { InvitationsTable } from './permissions.tables.js';

/**
 * Permissions (seed "Permissions", contract sections 2 and 4). Six routes are open to any member
 * (`access: 'member'`): org-meta, resources and create-team-org, and materialize, accept and decline,
 * which the invitation itself authorizes (its email must be the caller's). Every other route is
 * admin/owner only (`gate: 'admin'`). One is public: an invitation's summary (org name, inviter),
 * for the link's page before sign-in; the link's random id is what authorizes it.
 */

declare module '../../http/route.js' {
  interface ResourceKinds {
    grant: GrantsTable;
    invitation: InvitationsTable;
    member: MemberView;
  }
}

const GrantEntry = Obj({
  resourceType: Str({ min: 1, max: 64 }),
  resourceId: Str({ min: 1, max: 200 }),
  permissions: Type.Optional(Type.Array(Str({ max: 16 }), { maxItems: 3 })),
});

const InvitationParams = Obj({ id: Id });
const MemberParams = Obj({ userId: Id });

const resolveGrant: ResourceResolver<'grant'> = async (ctx, orgId, id) => {
  const g = await findGrant(ctx.db, orgId, id);
  return g ? { kind: 'grant', id: g.id, orgId: g.orgId, grantKeys: [], record: g } : null;
};

const resolveInvitation: ResourceResolver<'invitation'> = async (ctx, orgId, id) => {
  const inv = await findInvitationInOrg(ctx.db, orgId, id);
  return inv ? { kind: 'invitation', id: inv.id, orgId: inv.orgId, grantKeys: [], record: inv } : null;
};

const resolveMember: ResourceResolver<'member'> = async (ctx, orgId, userId) => {
  const m = await findMember(ctx.db, orgId, userId);
  return m ? { kind: 'member', id: m.userId, orgId, grantKeys: [], record: m } : null;
};

export const permissionsModule: ModuleDef = {
  name: 'permissions',
  resolvers: { grant: resolveGrant, invitation: resolveInvitation, member: resolveMember },
  declares: { catalogs: 'record' },
  routes: [
    // ------------------------------------------------------------ open to any member
    defineRoute({
      method: 'GET',
      url: '/api/permissions/org-meta',
      summary: 'Whether the active org is a team, and its member count',
      tag: 'permissions:read',
      access: 'member',
      schema: { response: OrgMetaView },
      handler: ({ actor }, ctx) => members.orgMeta(ctx, actor),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/permissions/resources',
      summary: 'Catalog of grantable resources of one type (`*` is never listed; billing and audit have only `*`)',
      tag: 'permissions:read',
      access: 'member',
      schema: { querystring: Obj({ type: Str({ min: 1, max: 64 }), owner: Type.Optional(Str({ min: 1, max: 200 })) }), response: Type.Array(CatalogEntryView) },
      handler: ({ actor, query }, ctx) => listCatalog(ctx, actor, query.type, { owner: query.owner }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/create-team-org',
      summary: 'Create a team organization with the caller as its owner',
      tag: 'permissions:write',
      access: 'member',
      status: 201,
      schema: { body: Obj({ name: Str({ min: 1, max: 100 }) }), response: TeamOrgView },
      handler: ({ actor, body }, ctx) => members.createTeamOrg(ctx, actor, body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invitations/:id/materialize',
      summary: "Turn an accepted invitation's pending grants into real grants",
      tag: 'permissions:write',
      access: 'member',
      schema: { params: InvitationParams, response: MaterializedView },
      handler: ({ actor, params }, ctx) => invitations.materializeInvitation(ctx, actor, params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invitations/:id/accept',
      summary: 'Accept an invitation sent to your email: join its org with its role',
      tag: 'permissions:write',
      access: 'member',
      schema: { params: InvitationParams, response: InvitationView },
      handler: ({ actor, params }, ctx) => invitations.acceptInvitation(ctx, actor, params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invitations/:id/decline',
      summary: 'Decline an invitation sent to your email',
      tag: 'permissions:write',
      access: 'member',
      schema: { params: InvitationParams, response: InvitationView },
      handler: ({ actor, params }, ctx) => invitations.declineInvitation(ctx, actor, params.id),
    }),

    // ------------------------------------------------------------ public: the link's id is its secret
    defineRoute({
      method: 'GET',
      url: '/api/permissions/invitations/:id/summary',
      summary: 'Who invites the link holder to which organization, with which role, and whether it is still open (no credential)',
      access: 'public',
      schema: { params: InvitationParams, response: InvitationSummaryView },
      handler: ({ params }, ctx) => invitations.invitationSummary(ctx, params.id),
    }),

    // ------------------------------------------------------------ admin/owner only
    defineRoute({
      method: 'GET',
      url: '/api/permissions/grants',
      summary: "List a member's grants (every grant of the org without userId)",
      tag: 'permissions:read',
      gate: 'admin',
      schema: { querystring: Obj({ userId: Type.Optional(Id) }), response: Type.Array(GrantView) },
      handler: ({ actor, query }, ctx) => grants.listGrants(ctx, actor, query.userId),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/grants',
      summary: 'Upsert one grant keyed on (userId, resourceType, resourceId); empty permissions revoke it',
      tag: 'permissions:write',
      gate: 'admin',
      status: 201,
      schema: { body: Obj({ userId: Id, ...GrantEntry.properties }), response: GrantView },
      async handler({ actor, body }, ctx) {
        const out = await grants.upsertGrant(ctx, actor, body);
        if (!out.grant) return new Answer({ data: null, revoked: true }, 200);
        return out.grant;
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/permissions/grants',
      summary: "Replace a member's whole grant set (diffed: upsert changed, delete absent, drop empty)",
      tag: 'permissions:write',
      gate: 'admin',
      schema: { body: Obj({ userId: Id, grants: Type.Array(GrantEntry, { maxItems: 500 }) }), response: Type.Array(GrantView) },
      handler: ({ actor, body }, ctx) => grants.replaceGrants(ctx, actor, body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/permissions/grants/:id',
      summary: 'Revoke one grant',
      tag: 'permissions:admin',
      gate: 'admin',
      resource: { kind: 'grant', param: 'id' },
      schema: { params: Obj({ id: Id }), response: GrantRevokedView },
      handler: ({ actor, params }, ctx) => grants.revokeGrant(ctx, actor, params.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/permissions/invitations',
      summary: 'List invitations with their pending grants (default: the unanswered ones)',
      tag: 'permissions:read',
      gate: 'admin',
      schema: {
        querystring: Obj({
          status: Type.Optional(Type.Union(['open', 'all', 'pending', 'expired', 'accepted', 'declined', 'cancelled'].map((s) => Type.Literal(s)))),
        }),
        response: Type.Array(InvitationView),
      },
      handler: ({ actor, query }, ctx) => invitations.listInvitations(ctx, actor, query.status),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invite-with-grants',
      summary: 'Invite someone by email and attach pending grants',
      tag: 'permissions:write',
      gate: 'admin',
      status: 201,
      schema: {
        body: Obj({
          email: Str({ min: 1, max: 254 }),
          role: Type.Optional(Str({ max: 32 })),
          grants: Type.Optional(Type.Array(GrantEntry, { maxItems: 500 })),
        }),
        response: InvitationCreatedView,
      },
      handler: ({ actor, body }, ctx) => invitations.invite(ctx, actor, body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invitations/:id/cancel',
      summary: 'Cancel an unanswered invitation',
      tag: 'permissions:write',
      gate: 'admin',
      resource: { kind: 'invitation', param: 'id' },
      schema: { params: InvitationParams, response: InvitationView },
      handler: ({ actor, params }, ctx) => invitations.cancelInvitation(ctx, actor, params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/permissions/invitations/:id/resend',
      summary: 'Resend an unanswered (also an expired) invitation with a fresh 7-day expiry',
      tag: 'permissions:write',
      gate: 'admin',
      resource: { kind: 'invitation', param: 'id' },
      schema: { params: InvitationParams, response: InvitationView },
      handler: ({ actor, params }, ctx) => invitations.resendInvitation(ctx, actor, params.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/permissions/members',
      summary: 'List the members of the active org with their roles',
      tag: 'permissions:read',
      gate: 'admin',
      schema: { response: Type.Array(MemberView) },
      handler: ({ actor }, ctx) => members.listMembers(ctx, actor),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/permissions/members/:userId',
      summary: "Change a member's role (not above your own; only an owner changes an owner; never the last owner)",
      tag: 'permissions:admin',
      gate: 'admin',
      resource: { kind: 'member', param: 'userId' },
      schema: { params: MemberParams, body: Obj({ role: Str({ min: 1, max: 32 }) }), response: MemberView },
      handler: ({ actor, params, body }, ctx) => members.changeRole(ctx, actor, params.userId, body.role),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/permissions/members/:userId',
      summary: 'Remove a member (and their grants) from the org; never the last owner',
      tag: 'permissions:admin',
      gate: 'admin',
      resource: { kind: 'member', param: 'userId' },
      schema: { params: MemberParams, response: MemberRemovedView },
      handler: ({ actor, params }, ctx) => members.removeMember(ctx, actor, params.userId),
    }),
  ],
};

