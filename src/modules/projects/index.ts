/**
 * The projects area's surface: the only file other areas import. Project rows and records, the
 * functions other areas use to read or change projects (related ones grouped into one named object
 * each: `projectQueries`, `projectAuthz`, `hostReads`, `projectHosts`, `projectEnv`, `attachedServices`,
 * `gitLinks`, `projectTransfers`), and the ports the area defines (implemented by other areas through
 * their module's `provides`; the types the ports' methods answer are reached through the ports).
 */
export { projectsModule } from './projects.routes.js';

// Records and presenters.
export type { ProjectRow } from './queries.js';
export { buildConfigOf, ProjectSchema, type ProjectRecord } from './projects.presenters.js';

// Reading projects (every lookup scoped by org unless named AnyOrg: queries.ts) and authorizing on them
// (a project's ref and grant keys).
export { projectQueries } from './queries.js';
export { projectAuthz } from './projects.resolvers.js';
// The decrypted clone credential of a project, for the build only.
export { resolveCloneCredential } from './git.service.js';
export { slugify } from './validate.js';

// What build-and-run reads of projects (host-reads.ts): the edge's host lookups, what a release runs
// with, the runtime state's facts, and the projects to start again at start-up.
export { hostReads, type EdgeProject } from './host-reads.js';

// Changing projects.
export { createProject, listProjects, loadRecord, useUploadAsSource, projectImporting } from './projects.service.js';
export { deleteProject } from './deletion.service.js';
// A fresh domain claim's TXT value (transfers write the claims of a copied project).
export { newVerificationValue } from './domains.service.js';

// Preview environments (contract section 16): made and changed here, served and removed by build-and-run.
export { ensureEnvironment, environmentRecords } from './environments.service.js';
export type { EnvironmentRecord } from './projects.presenters.js';
// Where projects and previews are served (the serving domain, the edge's URL of a host, preview hosts).
export { projectHosts } from './project-hosts.js';

// Env vars (what a run gets; a transfer's key rule and sealing) and a project's own services (the
// services area lists and attaches; backups find the data volume and open a database's URL).
export { projectEnv } from './env.service.js';
export { attachedServices } from './services.service.js';

// The git provider's reads and changes of linked projects (push, uninstall, repository removed, webhook deleted).
export { gitLinks, type LinkedProject } from './git-links.js';

// Ports this area defines.
export type { GitPort } from './git-port.js';
export { GitRepositorySchema } from './config.presenters.js';
export type { RuntimePort, RuntimeState } from './runtime-port.js';
export type { ProjectDependent } from './dependents.js';
export type { DeploymentHistoryPort } from './history-port.js';
export type { UploadSourcePort } from './upload-port.js';

// A project copied whole (the cloud area's transfers and bundles).
export { projectTransfers, type ProjectRows } from './transfer.service.js';
