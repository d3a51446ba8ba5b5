import { randomString } from '../../../src/lib/ids.js';
import type { MatrixRow } from '../matrix.js';

/**
 * Permissions (seed "Permissions", contract section 4). Open to any member: org-meta, resources,
 * create-team-org, materialize, accept, decline (the last three are authorized by the invitation:
 * someone else's invitation is 403, as the seed says for materialize). Public: an invitation's summary.
 * Everything else: owner/admin.
 * Who may is read from the routes' declarations (access `member`, or the admin gate and the tag).
 */
export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/permissions/org-meta' },
  { method: 'GET', path: '/api/permissions/resources', query: 'type=project' },
  { method: 'POST', path: '/api/permissions/create-team-org', body: { name: 'Matrix team' } },
  { method: 'POST', path: '/api/permissions/invitations/:id/materialize', fixture: 'acceptedInvitationForCaller', otherOrg: 403 },
  { method: 'POST', path: '/api/permissions/invitations/:id/accept', fixture: 'invitationForCaller', otherOrg: 403 },
  { method: 'POST', path: '/api/permissions/invitations/:id/decline', fixture: 'invitationForCaller', otherOrg: 403 },
  // Public: the link's random id is its secret, in whichever org (the page before sign-in names the org and inviter).
  { method: 'GET', path: '/api/permissions/invitations/:id/summary', fixture: 'invitation', otherOrg: 200 },

  { method: 'GET', path: '/api/permissions/grants' },
  {
    method: 'POST',
    path: '/api/permissions/grants',
    body: (_r, w, caller) => ({ userId: caller?.userId ?? w.orgA.owner.userId, resourceType: 'billing', resourceId: '*', permissions: ['read'] }),
  },
  { method: 'PUT', path: '/api/permissions/grants', body: (_r, w, caller) => ({ userId: caller?.userId ?? w.orgA.owner.userId, grants: [] }) },
  { method: 'DELETE', path: '/api/permissions/grants/:id', fixture: 'grant', fresh: true },
  { method: 'GET', path: '/api/permissions/invitations' },
  { method: 'POST', path: '/api/permissions/invite-with-grants', body: () => ({ email: `mx-${randomString(10)}@example.test`, role: 'member' }) },
  { method: 'POST', path: '/api/permissions/invitations/:id/cancel', fixture: 'invitation', fresh: true },
  { method: 'POST', path: '/api/permissions/invitations/:id/resend', fixture: 'invitation' },
  { method: 'GET', path: '/api/permissions/members' },
  { method: 'PATCH', path: '/api/permissions/members/:userId', fixture: 'member', fresh: true, body: { role: 'restricted' } },
  { method: 'DELETE', path: '/api/permissions/members/:userId', fixture: 'member', fresh: true },
];
