import type { Db, Dialect } from '../../db/client.js';
import { inOrg } from '../../db/scope.js';

/** SQL for organizations and their memberships; every query is scoped by org. */

export async function findOrg(db: Db, orgId: string) {
  return db.selectFrom('orgs').selectAll().where('id', '=', orgId).executeTakeFirst();
}

export async function countMembers(db: Db, orgId: string): Promise<number> {
  const r = await db.selectFrom('memberships').select((eb) => eb.fn.countAll<number>().as('n')).where(inOrg(orgId)).executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function countOwners(db: Db, orgId: string): Promise<number> {
  const r = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(inOrg(orgId))
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Serialises membership changes of one org (last-owner checks): a row lock on PostgreSQL; SQLite
 * has a single writer already.
 */
export async function lockOrg(db: Db, dialect: Dialect, orgId: string): Promise<void> {
  if (dialect === 'postgres') await db.selectFrom('orgs').select('id').where('id', '=', orgId).forUpdate().execute();
}

export async function findMember(db: Db, orgId: string, userId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.userId')
    .select(['memberships.userId as userId', 'memberships.role as role', 'memberships.createdAt as joinedAt', 'users.email as email', 'users.name as name'])
    .where(inOrg(orgId, 'memberships'))
    .where('memberships.userId', '=', userId)
    .executeTakeFirst();
}

export async function listMembers(db: Db, orgId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.userId')
    .select(['memberships.userId as userId', 'memberships.role as role', 'memberships.createdAt as joinedAt', 'users.email as email', 'users.name as name'])
    .where(inOrg(orgId, 'memberships'))
    .orderBy('memberships.createdAt')
    .orderBy('memberships.userId')
    .execute();
}

export async function setMemberRole(db: Db, orgId: string, userId: string, role: string): Promise<void> {
  await db.updateTable('memberships').set({ role }).where(inOrg(orgId)).where('userId', '=', userId).execute();
}

export async function deleteMember(db: Db, orgId: string, userId: string): Promise<void> {
  await db.deleteFrom('memberships').where(inOrg(orgId)).where('userId', '=', userId).execute();
}

export async function insertMember(db: Db, m: { orgId: string; userId: string; role: string; createdAt: string }): Promise<void> {
  await db.insertInto('memberships').values(m).execute();
}

export async function insertOrg(db: Db, o: { id: string; name: string; isTeam: number; createdAt: string }): Promise<void> {
  await db.insertInto('orgs').values(o).execute();
}

export async function findUser(db: Db, userId: string) {
  return db.selectFrom('users').select(['id', 'email', 'name']).where('id', '=', userId).executeTakeFirst();
}
