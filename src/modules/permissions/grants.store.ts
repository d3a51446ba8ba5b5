import type { Db } from '../../db/client.js';
import type { GrantsTable } from '../../db/schema.js';
import { inOrg } from '../../db/scope.js';

/** SQL for grants; every query is scoped by org. */

export async function listOrgGrants(db: Db, orgId: string, userId?: string): Promise<GrantsTable[]> {
  let q = db.selectFrom('grants').selectAll().where(inOrg(orgId));
  if (userId) q = q.where('userId', '=', userId);
  return q.orderBy('createdAt').orderBy('id').execute();
}

export async function findGrant(db: Db, orgId: string, id: string): Promise<GrantsTable | undefined> {
  return db.selectFrom('grants').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export async function findGrantByTuple(db: Db, orgId: string, userId: string, resourceType: string, resourceId: string): Promise<GrantsTable | undefined> {
  return db
    .selectFrom('grants')
    .selectAll()
    .where(inOrg(orgId))
    .where('userId', '=', userId)
    .where('resourceType', '=', resourceType)
    .where('resourceId', '=', resourceId)
    .executeTakeFirst();
}

/** Insert or replace the permissions of the (org, user, type, id) tuple; answers the stored row. */
export async function upsertGrant(db: Db, row: GrantsTable): Promise<GrantsTable> {
  await db
    .insertInto('grants')
    .values(row)
    .onConflict((oc) => oc.columns(['orgId', 'userId', 'resourceType', 'resourceId']).doUpdateSet({ permissions: row.permissions, updatedAt: row.updatedAt }))
    .execute();
  return (await findGrantByTuple(db, row.orgId, row.userId, row.resourceType, row.resourceId))!;
}

export async function deleteGrant(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('grants').where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deleteUserGrants(db: Db, orgId: string, userId: string): Promise<number> {
  const r = await db.deleteFrom('grants').where(inOrg(orgId)).where('userId', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}

/** Drops every grant naming one resource (the resource is being deleted); answers how many went. */
export async function deleteResourceGrants(db: Db, orgId: string, resourceType: string, resourceId: string): Promise<number> {
  const r = await db.deleteFrom('grants').where(inOrg(orgId)).where('resourceType', '=', resourceType).where('resourceId', '=', resourceId).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}

/** The distinct (type, id) keys of the org's grants of the given types. */
export async function grantKeysOfTypes(db: Db, orgId: string, types: string[]): Promise<{ type: string; id: string }[]> {
  if (!types.length) return [];
  const rows = await db.selectFrom('grants').select(['resourceType', 'resourceId']).distinct().where(inOrg(orgId)).where('resourceType', 'in', types).execute();
  return rows.map((r) => ({ type: r.resourceType, id: r.resourceId }));
}
