/** SQL on a project's environments (production and previews), scoped by org except where said. */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg, inProject } from '../../db/scope.js';
import type { EnvironmentsTable } from './projects.tables.js';

export type EnvironmentRow = Selectable<EnvironmentsTable>;

export async function listEnvironments(db: Db, orgId: string, projectId: string): Promise<EnvironmentRow[]> {
  return db
    .selectFrom('environments')
    .selectAll()
    .where(inProject(orgId, projectId))
    .orderBy('createdAt', 'asc')
    .orderBy('name', 'asc')
    .execute();
}

export async function findEnvironment(db: Db, orgId: string, projectId: string, name: string): Promise<EnvironmentRow | undefined> {
  return db
    .selectFrom('environments')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('name', '=', name)
    .executeTakeFirst();
}

export async function insertEnvironment(db: Db, row: Insertable<EnvironmentsTable>): Promise<void> {
  await db.insertInto('environments').values(row).execute();
}

/** Preview slugs (`environments.slug`) of a project, oldest first, but `exceptId`'s (picking a free one). */
export async function previewSlugs(db: Db, orgId: string, projectId: string, exceptId?: string): Promise<string[]> {
  let q = db.selectFrom('environments').select('slug').where(inProject(orgId, projectId)).where('slug', 'is not', null);
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.orderBy('createdAt', 'asc').orderBy('name', 'asc').execute()).map((r) => r.slug!);
}

/** A preview environment's branch and slug (ensure on a branch change). */
export async function updateEnvironment(db: Db, orgId: string, id: string, patch: { branch: string | null; slug: string | null }): Promise<void> {
  await db.updateTable('environments').set(patch).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Removes an environment and its variables (a preview's removal, inside its transaction). */
export async function deleteEnvironmentRows(db: Db, orgId: string, projectId: string, name: string): Promise<void> {
  await db.deleteFrom('envVars').where(inProject(orgId, projectId)).where('environment', '=', name).execute();
  await db.deleteFrom('environments').where(inProject(orgId, projectId)).where('name', '=', name).execute();
}

/** The preview environment a host label's branch part names in a project (the edge; hosts are global across orgs by nature). */
export async function environmentBySlugAnyOrg(db: Db, projectId: string, slug: string): Promise<Pick<EnvironmentRow, 'id' | 'name' | 'type' | 'slug'> | undefined> {
  return db.selectFrom('environments').select(['id', 'name', 'type', 'slug']).where('projectId', '=', projectId).where('slug', '=', slug).executeTakeFirst();
}

export async function setProductionBranch(db: Db, orgId: string, projectId: string, branch: string | null): Promise<void> {
  await db
    .updateTable('environments')
    .set({ branch })
    .where(inProject(orgId, projectId))
    .where('type', '=', 'production')
    .execute();
}
