import { randomString } from '../../../src/lib/ids.js';
import type { MatrixRow } from '../matrix.js';

/**
 * Accounts, sessions and tokens (contract section 2). Tokens belong to their user: per-caller records.
 * Who may call each route is what the route declares (public, or any signed-in user), except switch-org.
 */
export const rows: MatrixRow[] = [
  {
    method: 'POST',
    path: '/api/auth/signup',
    body: () => ({ email: `mx-${randomString(10)}@example.test`, password: `pw-${randomString(12)}` }),
  },
  {
    method: 'POST',
    path: '/api/auth/login',
    body: (_r, w) => ({ email: w.orgA.owner.email, password: w.orgA.owner.password }),
  },
  { method: 'POST', path: '/api/auth/logout', note: 'a bearer request has no session to end' },
  { method: 'GET', path: '/api/auth/me' },
  {
    method: 'POST',
    path: '/api/auth/switch-org',
    allow: [],
    body: (_r, w, caller) => ({ orgId: caller?.orgId ?? w.orgA.orgId }),
    note: 'a personal access token is bound to its org: every bearer caller is 403 (sessions switch)',
  },
  { method: 'POST', path: '/api/auth/tokens', body: { name: 'matrix' } },
  { method: 'GET', path: '/api/auth/tokens' },
  { method: 'DELETE', path: '/api/auth/tokens/:id', fixture: 'token', note: "another user's token is 404 like a missing one" },
];
