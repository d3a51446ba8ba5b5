/**
 * TRANSITIONAL (issue 16): the old single auth service, split by responsibility into auth.accounts,
 * auth.sessions, auth.device, auth.credentials (+ auth.cache), auth.me, auth.tokens and auth.admin.
 * Only callers not yet converted import this file: other areas use `ctx.ports.auth` or `./index.js`.
 * Delete it once nothing imports it.
 */
export { adminCreateUser } from './auth.admin.js';
export { createOrgWithOwner } from './auth.accounts.js';
export { issueToken } from './auth.tokens.js';
export { actorFromCredentialId, memberActor } from './auth.credentials.js';
