/**
 * The permissions area's surface. Areas that own a grantable resource type provide its catalog
 * (`provides: () => ({ catalogs: { <type>: CatalogProvider } })`); areas deleting a resource drop its
 * grants with `deleteResourceGrants` (then say so on `ctx.access`); sign-up joins invited orgs with
 * the invitation functions. `checkGrantShape` and `writeGrant` are the tests' grant factory's.
 */
export { permissionsModule } from './permissions.routes.js';
export type { CatalogEntry, CatalogProvider, CatalogQuery } from './catalog.js';
export { acceptInvitation, openInvitationIdsFor } from './invitations.service.js';
export { checkGrantShape, writeGrant, type CheckedGrant, type GrantInput } from './grants.service.js';
export { deleteResourceGrants, grantKeysOfTypes } from './grants.store.js';
