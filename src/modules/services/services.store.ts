/** SQL on managed services, every query scoped by org (and project). Private to the services area. */
import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg, inProject } from '../../db/scope.js';
import type { ManagedServicesTable } from './services.tables.js';

export type ManagedServiceRow = Selectable<ManagedServicesTable>;

/** The managed services of one environment of the project (production's by default), oldest first. */
export async function listManaged(db: Db, orgId: string, projectId: string, environment = 'production'): Promise<ManagedServiceRow[]> {
  return db.selectFrom('managedServices').selectAll().where(inProject(orgId, projectId)).where('environment', '=', environment).orderBy('createdAt', 'asc').orderBy('name', 'asc').execute();
}

/** Every managed service of the project, previews' instances included. */
export async function listProjectManaged(db: Db, orgId: string, projectId: string): Promise<ManagedServiceRow[]> {
  return db.selectFrom('managedServices').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt', 'asc').execute();
}

/** The preview instances of a production service (they go with it). */
export async function listInstancesOf(db: Db, orgId: string, projectId: string, sourceId: string): Promise<ManagedServiceRow[]> {
  return db.selectFrom('managedServices').selectAll().where(inProject(orgId, projectId)).where('sourceId', '=', sourceId).execute();
}

export async function deleteEnvironmentManaged(db: Db, orgId: string, projectId: string, environment: string): Promise<void> {
  await db.deleteFrom('managedServices').where(inProject(orgId, projectId)).where('environment', '=', environment).execute();
}

export async function findManaged(db: Db, orgId: string, projectId: string, id: string): Promise<ManagedServiceRow | undefined> {
  return db.selectFrom('managedServices').selectAll().where(inProject(orgId, projectId)).where('id', '=', id).executeTakeFirst();
}

export async function findManagedByName(db: Db, orgId: string, projectId: string, name: string, environment = 'production'): Promise<ManagedServiceRow | undefined> {
  return db.selectFrom('managedServices').selectAll().where(inProject(orgId, projectId)).where('environment', '=', environment).where('name', '=', name).executeTakeFirst();
}

export async function insertManaged(db: Db, row: Insertable<ManagedServicesTable>): Promise<void> {
  await db.insertInto('managedServices').values(row).execute();
}

export async function updateManaged(db: Db, orgId: string, id: string, patch: Updateable<ManagedServicesTable>): Promise<void> {
  await db.updateTable('managedServices').set(patch).where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deleteManaged(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('managedServices').where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deleteProjectManaged(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('managedServices').where(inProject(orgId, projectId)).execute();
}

/** Every service of this server that should run (the supervisor's start); the server's own work, not a request's. */
export async function listWanted(db: Db, orgId?: string): Promise<ManagedServiceRow[]> {
  let q = db.selectFrom('managedServices').selectAll().where('desired', '=', 'running');
  if (orgId) q = q.where(inOrg(orgId));
  return q.orderBy('createdAt', 'asc').execute();
}
