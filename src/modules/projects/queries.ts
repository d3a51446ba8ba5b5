/**
 * The reads (and the one row removal) other areas make of the projects area's records, every one
 * scoped by org unless its name says `AnyOrg`. The stores stay private to the area: what other areas
 * may ask is this object, so a store can change its other queries freely. The build-and-run host's own
 * reads are `hostReads` (host-reads.ts).
 */
import { listDomains, verifiedDomainsAnyOrg } from './domains.store.js';
import { deleteEnvironmentRows, findEnvironment, listEnvironments } from './environments.store.js';
import { cloudProjectIds, findProject, projectByDomain } from './projects.store.js';
import { findService } from './services.store.js';

export type { ProjectRow } from './projects.store.js';

export const projectQueries = {
  findProject,
  projectByDomain,
  cloudProjectIds,
  listDomains,
  verifiedDomainsAnyOrg,
  findEnvironment,
  listEnvironments,
  deleteEnvironmentRows,
  findService,
} as const;
