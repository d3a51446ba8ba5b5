/** SQL on a project's services (its data volume, attached databases), scoped by org. */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import type { ServicesTable } from './projects.tables.js';

export type ServiceRow = Selectable<ServicesTable>;

export async function listServices(db: Db, orgId: string, projectId: string): Promise<ServiceRow[]> {
  return db
    .selectFrom('services')
    .selectAll()
    .where(inProject(orgId, projectId))
    .orderBy('createdAt', 'asc')
    .orderBy('name', 'asc')
    .execute();
}

export async function findService(db: Db, orgId: string, projectId: string, id: string): Promise<ServiceRow | undefined> {
  return db
    .selectFrom('services')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertService(db: Db, row: Insertable<ServicesTable>): Promise<void> {
  await db.insertInto('services').values(row).execute();
}

export async function findServiceByName(db: Db, orgId: string, projectId: string, name: string): Promise<ServiceRow | undefined> {
  return db.selectFrom('services').selectAll().where(inProject(orgId, projectId)).where('name', '=', name).executeTakeFirst();
}

/** Inserts the service unless the project already has one of that name. */
export async function insertServiceIfMissing(db: Db, row: Insertable<ServicesTable>): Promise<void> {
  await db
    .insertInto('services')
    .values(row)
    .onConflict((oc) => oc.columns(['projectId', 'name']).doNothing())
    .execute();
}
