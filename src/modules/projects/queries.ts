/**
 * The reads (and the one row removal) other areas make of the projects area's records, every one
 * scoped by org unless its name says `AnyOrg`. The stores stay private to the area: what other areas
 * may ask is this list, so a store can change its other queries freely. The build-and-run host's own
 * reads are `hostReads` (host-reads.ts).
 */
export type { ProjectRow } from './projects.store.js';
export { findProject, cloudProjectIds, projectByDomain } from './projects.store.js';
export { listDomains, verifiedDomainsAnyOrg } from './domains.store.js';
export { findEnvironment, listEnvironments, deleteEnvironmentRows } from './environments.store.js';
export { findService } from './services.store.js';
