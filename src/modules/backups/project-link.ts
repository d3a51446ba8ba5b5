import type { ResourceRef } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { nowIso } from '../../lib/ids.js';
import { findProject, findService as findProjectService, projectGrantKeys } from '../projects/index.js';

/**
 * Everything the backups area needs from the projects area, in one place: the ref of a policy's,
 * run's or restore's parent project (its grant keys cover them), the services a policy backs up, and
 * whether a project still lives on this instance.
 */

/** The authorization ref of a project: records under it carry its grant keys. */
export function parentProjectRef(orgId: string, projectId: string): ResourceRef {
  return { orgId, grantKeys: projectGrantKeys(projectId) };
}

export function findService(db: Db, orgId: string, projectId: string, id: string) {
  return findProjectService(db, orgId, projectId, id);
}

export function findServiceByName(db: Db, orgId: string, projectId: string, name: string) {
  return db.selectFrom('services').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).where('name', '=', name).executeTakeFirst();
}

/**
 * The project's `data` volume service. Every project has it (contract section 8); rows made before
 * it existed get it now.
 */
export async function dataVolume(db: Db, orgId: string, projectId: string, newServiceId: () => string) {
  const found = await findServiceByName(db, orgId, projectId, 'data');
  if (found) return found;
  await db
    .insertInto('services')
    .values({ id: newServiceId(), orgId, projectId, kind: 'volume', name: 'data', createdAt: nowIso(), connectionUrl: null })
    .onConflict((oc) => oc.columns(['projectId', 'name']).doNothing())
    .execute();
  return (await findServiceByName(db, orgId, projectId, 'data'))!;
}

/** Whether the project exists here and was not moved to the cloud (its backups run there then). */
export async function projectRunsHere(db: Db, orgId: string, projectId: string): Promise<boolean> {
  const project = await findProject(db, orgId, projectId);
  return !!project && project.location !== 'cloud';
}

/** The ids of projects that moved to the cloud, as a subquery (the scheduler leaves their policies out). */
export function cloudProjectIds(db: Db) {
  return db.selectFrom('projects').select('id').where('location', '=', 'cloud');
}

/** What runs the projects (the deployments area's runtime), to take one offline during a restore; null when none. */
export function projectRuntime(ctx: Pick<AppContext, 'ports'>) {
  return ctx.ports.runtime;
}
