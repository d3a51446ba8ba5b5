import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import type { CloudLinksTable } from './cloud.tables.js';
import { inOrg, inProject } from '../../db/scope.js';

/** SQL of the cloud area's one table, `cloud_links` (the id mapping of a self-hosted instance). */

export type CloudLinkRow = Selectable<CloudLinksTable>;

// ---------------------------------------------------------------- the id mapping (self-hosted side)

export async function findCloudLink(db: Db, orgId: string, projectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where(inProject(orgId, projectId)).executeTakeFirst();
}

/** The local record (in `orgId`) that stands for a cloud project, by the cloud's id. */
export async function findCloudLinkByCloudId(db: Db, orgId: string, cloudProjectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where(inOrg(orgId)).where('cloudProjectId', '=', cloudProjectId).executeTakeFirst();
}

/** Whether the org has any project on the cloud. */
export async function orgHasCloudLinks(db: Db, orgId: string): Promise<boolean> {
  return !!(await db.selectFrom('cloudLinks').select('projectId').where(inOrg(orgId)).limit(1).executeTakeFirst());
}

export async function listCloudLinks(db: Db, orgId: string): Promise<CloudLinkRow[]> {
  return db.selectFrom('cloudLinks').selectAll().where(inOrg(orgId)).execute();
}

export async function insertCloudLink(db: Db, row: Insertable<CloudLinksTable>): Promise<void> {
  await db.insertInto('cloudLinks').values(row).execute();
}

export async function deleteCloudLink(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('cloudLinks').where(inProject(orgId, projectId)).execute();
}

// ---------------------------------------------------------------- by id alone (token-in-query streams)

/** Whether any org of this instance has a project on the cloud. */
export async function anyCloudLinks(db: Db): Promise<boolean> {
  return !!(await db.selectFrom('cloudLinks').select('projectId').limit(1).executeTakeFirst());
}

/**
 * The local record that stands for a cloud project, in whichever org: only for public routes whose
 * own token (minted by the cloud) is checked by the cloud when the request is forwarded.
 */
export async function findCloudLinkByCloudIdAnyOrg(db: Db, cloudProjectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where('cloudProjectId', '=', cloudProjectId).orderBy('projectId').limit(1).executeTakeFirst();
}
