import { PRINCIPALS, type Fixture, type MatrixRow, type PrincipalName } from '../matrix.js';

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

const repo = { fixture: 'gitRepo', otherOrg: null, missing: null } as const;
const all401 = Object.fromEntries(PRINCIPALS.map((p) => [p, 401])) as Partial<Record<PrincipalName, number>>;

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/gitprovider/status', ...repo, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/home', ...repo, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/local-status', ...repo, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/connect/poll', ...repo, expect: { owner: 404, admin: 404, member: 404, otherOwner: 404 }, note: 'no device login in progress' },
  { method: 'POST', path: '/api/gitprovider/connect', ...repo, body: {}, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/connect/redirect', ...repo, note: '400: no state' },
  { method: 'POST', path: '/api/gitprovider/disconnect', ...repo, body: { source: 'oauth' }, expect: { otherOwner: 200 } },
  { method: 'GET', path: '/api/gitprovider/repos', ...repo, expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/repos', ...repo, body: { name: 'matrix', private: true }, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/orgs/:org/repos', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo', ...repo, expect: { otherOwner: 400 } },
  { method: 'DELETE', path: '/api/gitprovider/repos/:owner/:repo', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/branches', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/clone-token', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/files', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/file', ...repo, expect: { otherOwner: 400 } },
  { method: 'GET', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, expect: { otherOwner: 400 } },
  { method: 'DELETE', path: '/api/gitprovider/repos/:owner/:repo/webhooks', ...repo, body: { hookId: 1 }, expect: { otherOwner: 400 } },
  { method: 'POST', path: '/api/gitprovider/webhook', ...repo, body: { zen: 'x' }, expect: all401, note: 'unsigned delivery: 401 for everyone' },
];
