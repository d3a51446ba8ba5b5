import { randomString } from '../../../src/lib/ids.js';
import { ADMINS, ANY_MEMBER, type MatrixRow } from '../matrix.js';

/**
 * Permissions (seed "Permissions", contract section 4). Open to any member: org-meta, resources,
 * create-team-org, materialize, accept, decline (the last three are authorized by the invitation:
 * someone else's invitation is 403, as the seed says for materialize). Everything else: owner/admin.
 */
export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/permissions/org-meta', allow: ANY_MEMBER },
  { method: 'GET', path: '/api/permissions/resources', query: 'type=project', allow: ANY_MEMBER },
  { method: 'POST', path: '/api/permissions/create-team-org', body: { name: 'Matrix team' }, allow: ANY_MEMBER },
  { method: 'POST', path: '/api/permissions/invitations/:id/materialize', fixture: 'acceptedInvitationForCaller', allow: ANY_MEMBER, otherOrg: 403 },
  { method: 'POST', path: '/api/permissions/invitations/:id/accept', fixture: 'invitationForCaller', allow: ANY_MEMBER, otherOrg: 403 },
  { method: 'POST', path: '/api/permissions/invitations/:id/decline', fixture: 'invitationForCaller', allow: ANY_MEMBER, otherOrg: 403 },

  { method: 'GET', path: '/api/permissions/grants', allow: ADMINS },
  {
    method: 'POST',
    path: '/api/permissions/grants',
    allow: ADMINS,
    body: (_r, w, caller) => ({ userId: caller?.userId ?? w.orgA.owner.userId, resourceType: 'billing', resourceId: '*', permissions: ['read'] }),
  },
  { method: 'PUT', path: '/api/permissions/grants', allow: ADMINS, body: (_r, w, caller) => ({ userId: caller?.userId ?? w.orgA.owner.userId, grants: [] }) },
  { method: 'DELETE', path: '/api/permissions/grants/:id', fixture: 'grant', fresh: true, allow: ADMINS },
  { method: 'GET', path: '/api/permissions/invitations', allow: ADMINS },
  { method: 'POST', path: '/api/permissions/invite-with-grants', allow: ADMINS, body: () => ({ email: `mx-${randomString(10)}@example.test`, role: 'member' }) },
  { method: 'POST', path: '/api/permissions/invitations/:id/cancel', fixture: 'invitation', fresh: true, allow: ADMINS },
  { method: 'POST', path: '/api/permissions/invitations/:id/resend', fixture: 'invitation', allow: ADMINS },
  { method: 'GET', path: '/api/permissions/members', allow: ADMINS },
  { method: 'PATCH', path: '/api/permissions/members/:userId', fixture: 'member', fresh: true, body: { role: 'restricted' }, allow: ADMINS },
  { method: 'DELETE', path: '/api/permissions/members/:userId', fixture: 'member', fresh: true, allow: ADMINS },
];
