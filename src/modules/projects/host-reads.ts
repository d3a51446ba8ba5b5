/**
 * What this server's build-and-run host (the hosting area) reads of projects, as one object: the
 * edge's host lookups (hot: one query each), a host's route rules, what a release runs with, the
 * runtime state's facts, and the projects to start again at start-up. Some are not scoped by org
 * (`...AnyOrg`, by slug or domain): the edge and the supervisor act for every org, and have only a
 * host name or an app key to go on.
 */
import { environmentBySlugAnyOrg } from './environments.store.js';
import { edgeProject, projectByDomain, projectBySlug, projectOrgAnyOrg, projectRunSettings, projectRuntimeFacts, projectStatusAnyOrg, projectsToRestore, sleepModesOf } from './projects.store.js';
import { listRouteRules } from './route-rules.store.js';

export const hostReads = {
  projectBySlug,
  projectByDomain,
  environmentBySlugAnyOrg,
  listRouteRules,
  edgeProject,
  projectsToRestore,
  projectRunSettings,
  projectRuntimeFacts,
  projectOrgAnyOrg,
  projectStatusAnyOrg,
  sleepModesOf,
} as const;

export type { EdgeProject } from './projects.store.js';
