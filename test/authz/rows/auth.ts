import { randomString } from '../../../src/lib/ids.js';
import { ANY_MEMBER, type MatrixRow } from '../matrix.js';

/** Accounts, sessions and tokens (contract section 2). Tokens belong to their user: per-caller records. */
export const rows: MatrixRow[] = [
  {
    method: 'POST',
    path: '/api/auth/signup',
    allow: 'public',
    body: () => ({ email: `mx-${randomString(10)}@example.test`, password: `pw-${randomString(12)}` }),
  },
  {
    method: 'POST',
    path: '/api/auth/login',
    allow: 'public',
    body: (_r, w) => ({ email: w.orgA.owner.email, password: w.orgA.owner.password }),
  },
  { method: 'POST', path: '/api/auth/logout', allow: ANY_MEMBER, note: 'a bearer request has no session to end' },
  { method: 'GET', path: '/api/auth/me', allow: ANY_MEMBER },
  {
    method: 'POST',
    path: '/api/auth/switch-org',
    allow: [],
    body: (_r, w, caller) => ({ orgId: caller?.orgId ?? w.orgA.orgId }),
    note: 'a personal access token is bound to its org: every bearer caller is 403 (sessions switch)',
  },
  { method: 'POST', path: '/api/auth/tokens', allow: ANY_MEMBER, body: { name: 'matrix' } },
  { method: 'GET', path: '/api/auth/tokens', allow: ANY_MEMBER },
  { method: 'DELETE', path: '/api/auth/tokens/:id', fixture: 'token', allow: ANY_MEMBER, note: "another user's token is 404 like a missing one" },
];
