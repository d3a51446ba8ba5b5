/**
 * The auth area's surface. Other areas reach credentials through the port it provides
 * (`ctx.ports.auth`: the route gate, stream tokens, upload sessions); the rest is for the operator's
 * CLI and the tests' factories.
 */
export { authModule } from './auth.routes.js';
export { adminCreateUser, type AdminCreateUserInput } from './auth.admin.js';
export { createOrgWithOwner } from './auth.accounts.js';
export { issueToken, type CreateTokenInput } from './auth.tokens.js';
