/**
 * The ports the projects area declares on src/ports.ts's `Ports` (what other areas do for projects:
 * its git provider, what runs it, records kept under it, uploads becoming its source, its latest
 * deployment), and its own per-server state on src/state.ts's `AreaState`.
 */
import type { ProjectDependent } from './dependents.js';
import type { GitPort } from './git-port.js';
import type { DeploymentHistoryPort } from './history-port.js';
import type { ProjectReads } from './project-reads.js';
import type { RuntimePort } from './runtime-port.js';
import type { UploadSourcePort } from './upload-port.js';

declare module '../../ports.js' {
  interface Ports {
    /** The connected git provider (gitprovider area), null when none is connected. */
    git: GitPort | null;
    /** What runs the projects (hosting area). */
    runtime: RuntimePort | null;
    /** Records other areas keep under a project, removed and previewed with it. */
    projectDependents: ProjectDependent[];
    /** Folder uploads becoming a project's source (uploads area; used by POST /api/projects/ensure). */
    uploadSource: UploadSourcePort | null;
    /** A project's deployments as the projects area reads them (deployments area): its info, its commit status. */
    deploymentHistory: DeploymentHistoryPort | null;
  }
}

declare module '../../state.js' {
  interface AreaState {
    /** Short-lived reads of projects for GET requests. */
    projects: { reads: ProjectReads };
  }
}

/** How the providers of the projects area's ports combine (its ModuleDef's `declares`). */
export const PROJECTS_PORTS = {
  git: 'one',
  runtime: 'one',
  projectDependents: 'list',
  uploadSource: 'one',
  deploymentHistory: 'one',
} as const;
