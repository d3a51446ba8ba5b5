import { ADMINS, PRINCIPALS, byGrant, type Fixture, type MatrixRow, type PrincipalName } from '../matrix.js';

/**
 * Git provider (seed "Git provider"). The matrix server has no GitHub configured, so allowed callers
 * get 400 GIT_PROVIDER_NOT_CONNECTED (or 200 on status/home/connect): what is checked here is who passes
 * the gate. The routes name no record of Berth's: owner/repo in the path are GitHub's, seen through the
 * caller's own org, so `otherOwner` passes too (on its own org) and there is no "another org's record"
 * or "missing id" target. Restricted members pass with a grant on the repository (`gitprovider_repository`
 * `owner/repo`, lowercase) or its installation; the fixture grants `acme/web`.
 */
export const fixtures: Record<string, Fixture> = {
  gitRepo: {
    async make() {
      return { params: { owner: 'acme', repo: 'web', org: 'acme' }, grantKeys: [{ type: 'gitprovider_repository', id: 'acme/web' }] };
    },
  },
};

const MEMBERS: PrincipalName[] = ['owner', 'admin', 'member'];
const repo = { fixture: 'gitRepo', otherOrg: null, missing: null } as const;
const all401 = Object.fromEntries(PRINCIPALS.map((p) => [p, 401])) as Partial<Record<PrincipalName, number>>;

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/gitprovider/status', ...repo, allow: byGrant('read'), expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/home', ...repo, allow: byGrant('read'), expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/local-status', ...repo, allow: MEMBERS, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/connect/poll', ...repo, allow: MEMBERS, expect: { owner: 404, admin: 404, member: 404, otherOwner: 404 }, note: 'no device login in progress' },
  { method: 'POST', path: '/api/gitprovider/connect', ...repo, allow: MEMBERS, body: {}, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/connect/redirect', ...repo, allow: 'public', note: '400: no state' },
  { method: 'POST', path: '/api/gitprovider/disconnect', ...repo, allow: ADMINS, body: { source: 'oauth' }, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/repos', ...repo, allow: [...MEMBERS, 'restricted', 'restrictedRead', 'restrictedWrite', 'restrictedAdmin'], expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/repos', ...repo, allow: MEMBERS, body: { name: 'matrix', private: true }, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/orgs/:org/repos', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'DELETE', path: '/api/gitprovider/repos/:owner/:repo', ...repo, allow: byGrant('admin'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/branches', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/clone-token', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/files', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/file', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, allow: byGrant('read'), expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, allow: byGrant('write'), expect: { otherOwner: 400 } },
  { method: 'DELETE', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, allow: byGrant('admin'), body: { hookId: 1 }, expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/webhook', ...repo, allow: 'public', body: { zen: 'x' }, expect: all401, note: 'unsigned delivery: 401 for everyone' },
];
