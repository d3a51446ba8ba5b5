/** SQL on a project's route rules (rate limits, bans, allow/deny lists), scoped by org. */
import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import type { RouteRulesTable } from './projects.tables.js';

export type RouteRuleRow = Selectable<RouteRulesTable>;

export async function listRouteRules(db: Db, orgId: string, projectId: string): Promise<RouteRuleRow[]> {
  return db
    .selectFrom('routeRules')
    .selectAll()
    .where(inProject(orgId, projectId))
    .orderBy('createdAt', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function findRouteRule(db: Db, orgId: string, projectId: string, id: string): Promise<RouteRuleRow | undefined> {
  return db
    .selectFrom('routeRules')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertRouteRule(db: Db, row: Insertable<RouteRulesTable>): Promise<void> {
  await db.insertInto('routeRules').values(row).execute();
}

export async function updateRouteRule(db: Db, orgId: string, projectId: string, id: string, patch: Updateable<RouteRulesTable>): Promise<void> {
  await db.updateTable('routeRules').set(patch).where(inProject(orgId, projectId)).where('id', '=', id).execute();
}

export async function deleteRouteRule(db: Db, orgId: string, projectId: string, id: string): Promise<number> {
  const r = await db.deleteFrom('routeRules').where(inProject(orgId, projectId)).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows);
}
