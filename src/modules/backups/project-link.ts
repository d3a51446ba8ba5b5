import type { ResourceRef } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { projectAuthz, attachedServices, projectQueries } from '../projects/index.js';
import { managedBackups } from '../services/index.js';

/**
 * Everything the backups area needs from the projects area, in one place: the ref of a policy's,
 * run's or restore's parent project (its grant keys cover them), the services a policy backs up,
 * whether a project still lives on this instance, and what runs it.
 */

export { managedBackups } from '../services/index.js';
/** The ids of the projects moved to the cloud, as a subquery (their backups run there). */
export const cloudProjectIds = projectQueries.cloudProjectIds;
/** The project's `data` volume service (every project has it; made now for rows older than it). */
export const dataVolume = attachedServices.dataVolume;

/** What a policy backs up: the data volume, an attached database, or a managed service (`managed` its row). */
export interface BackupTarget {
  id: string;
  orgId: string;
  projectId: string;
  kind: string;
  name: string;
  managed: Awaited<ReturnType<typeof managedBackups.find>> | null;
}

/** The service of a project a policy, run or restore names (attached or managed), or undefined. */
export async function findTarget(db: Db, orgId: string, projectId: string, serviceId: string): Promise<BackupTarget | undefined> {
  const s = await projectQueries.findService(db, orgId, projectId, serviceId);
  if (s) return { id: s.id, orgId, projectId, kind: s.kind, name: s.name, managed: null };
  const m = await managedBackups.find(db, orgId, projectId, serviceId);
  return m ? { id: m.id, orgId, projectId, kind: m.kind, name: m.name, managed: m } : undefined;
}

/** The authorization ref of a project: records under it carry its grant keys. */
export function parentProjectRef(orgId: string, projectId: string): ResourceRef {
  return { orgId, grantKeys: projectAuthz.grantKeys(projectId) };
}

/** A database service's connection URL, opened (the projects area seals it). */
export async function serviceConnectionUrl(ctx: AppContext, orgId: string, projectId: string, serviceId: string): Promise<string | null> {
  return (await attachedServices.resolve(ctx, orgId, projectId, serviceId)).connectionUrl;
}

/** Whether the project exists here and was not moved to the cloud (its backups run there then). */
export async function projectRunsHere(db: Db, orgId: string, projectId: string): Promise<boolean> {
  const project = await projectQueries.findProject(db, orgId, projectId);
  return !!project && project.location !== 'cloud';
}

/** What runs the projects (the deployments area's runtime), to take one offline during a restore; null when none. */
export function projectRuntime(ctx: Pick<AppContext, 'ports'>) {
  return ctx.ports.runtime;
}
