import type { ResourceRef } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { findProject, projectGrantKeys, resolveService } from '../projects/index.js';

/**
 * Everything the backups area needs from the projects area, in one place: the ref of a policy's,
 * run's or restore's parent project (its grant keys cover them), the services a policy backs up,
 * whether a project still lives on this instance, and what runs it.
 */

export { cloudProjectIds, dataVolume, findService } from '../projects/index.js';

/** The authorization ref of a project: records under it carry its grant keys. */
export function parentProjectRef(orgId: string, projectId: string): ResourceRef {
  return { orgId, grantKeys: projectGrantKeys(projectId) };
}

/** A database service's connection URL, opened (the projects area seals it). */
export async function serviceConnectionUrl(ctx: AppContext, orgId: string, projectId: string, serviceId: string): Promise<string | null> {
  return (await resolveService(ctx, orgId, projectId, serviceId)).connectionUrl;
}

/** Whether the project exists here and was not moved to the cloud (its backups run there then). */
export async function projectRunsHere(db: Db, orgId: string, projectId: string): Promise<boolean> {
  const project = await findProject(db, orgId, projectId);
  return !!project && project.location !== 'cloud';
}

/** What runs the projects (the deployments area's runtime), to take one offline during a restore; null when none. */
export function projectRuntime(ctx: Pick<AppContext, 'ports'>) {
  return ctx.ports.runtime;
}
