import type { Db } from '../../db/client.js';
import type { ApiTokensTable, OrgsTable, SessionsTable, UsersTable } from '../../db/schema.js';
import { inOrg } from '../../db/scope.js';

/** SQL for accounts. Org-owned rows are read with their org; user-owned rows with their user. */

export async function findUserByEmail(db: Db, email: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
}

export async function findUserById(db: Db, id: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function anyUser(db: Db): Promise<boolean> {
  return !!(await db.selectFrom('users').select('id').limit(1).executeTakeFirst());
}

export async function setPasswordHash(db: Db, userId: string, passwordHash: string, at: string): Promise<void> {
  await db.updateTable('users').set({ passwordHash, updatedAt: at }).where('id', '=', userId).execute();
}

export async function insertUser(db: Db, u: UsersTable): Promise<void> {
  await db.insertInto('users').values(u).execute();
}

export async function insertOrg(db: Db, o: OrgsTable): Promise<void> {
  await db.insertInto('orgs').values(o).execute();
}

export async function findOrg(db: Db, id: string): Promise<OrgsTable | undefined> {
  return db.selectFrom('orgs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertMembership(db: Db, m: { orgId: string; userId: string; role: string; createdAt: string }): Promise<void> {
  await db.insertInto('memberships').values(m).execute();
}

export async function findMembership(db: Db, orgId: string, userId: string) {
  return db.selectFrom('memberships').selectAll().where(inOrg(orgId)).where('userId', '=', userId).executeTakeFirst();
}

export async function listUserOrgs(db: Db, userId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('orgs', 'orgs.id', 'memberships.orgId')
    .select(['orgs.id as id', 'orgs.name as name', 'orgs.isTeam as isTeam', 'memberships.role as role'])
    .where('memberships.userId', '=', userId)
    .orderBy('orgs.createdAt')
    .execute();
}

export async function insertSession(db: Db, s: SessionsTable): Promise<void> {
  await db.insertInto('sessions').values(s).execute();
}

/** A session joined to its user and the user's role in the session's org (no row when the membership is gone). */
function sessionActorQuery(db: Db) {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.userId')
    .innerJoin('memberships', (j) => j.onRef('memberships.userId', '=', 'sessions.userId').onRef('memberships.orgId', '=', 'sessions.orgId'))
    .select(['sessions.id as sessionId', 'sessions.userId as userId', 'sessions.orgId as orgId', 'sessions.expiresAt as expiresAt', 'users.email as email', 'memberships.role as role']);
}

/** The session with its user and the user's role in the session's org (no row when the membership is gone). */
export async function findSessionActor(db: Db, tokenHash: string) {
  return sessionActorQuery(db).where('sessions.tokenHash', '=', tokenHash).executeTakeFirst();
}

export async function deleteSession(db: Db, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}

export async function setSessionOrg(db: Db, id: string, orgId: string): Promise<void> {
  await db.updateTable('sessions').set({ orgId }).where('id', '=', id).execute();
}

export async function insertToken(db: Db, t: ApiTokensTable): Promise<void> {
  await db.insertInto('apiTokens').values(t).execute();
}

/** A token joined to its user and the user's role in the token's org (no row when the membership is gone). */
function tokenActorQuery(db: Db) {
  return db
    .selectFrom('apiTokens')
    .innerJoin('users', 'users.id', 'apiTokens.userId')
    .innerJoin('memberships', (j) => j.onRef('memberships.userId', '=', 'apiTokens.userId').onRef('memberships.orgId', '=', 'apiTokens.orgId'))
    .select([
      'apiTokens.id as tokenId',
      'apiTokens.tokenHash as tokenHash',
      'apiTokens.userId as userId',
      'apiTokens.orgId as orgId',
      'apiTokens.scopes as scopes',
      'apiTokens.expiresAt as expiresAt',
      'apiTokens.revokedAt as revokedAt',
      'apiTokens.lastUsedAt as lastUsedAt',
      'users.email as email',
      'memberships.role as role',
    ]);
}

/** The token with its user and the user's role in the token's org (no row when the membership is gone). */
export async function findTokenActor(db: Db, tokenHash: string) {
  return tokenActorQuery(db).where('apiTokens.tokenHash', '=', tokenHash).executeTakeFirst();
}

/** The same as findTokenActor, by the token's id (re-checking a credential that minted something). */
export async function findTokenActorById(db: Db, id: string) {
  return tokenActorQuery(db).where('apiTokens.id', '=', id).executeTakeFirst();
}

/** The same as findSessionActor, by the session's id. */
export async function findSessionActorById(db: Db, id: string) {
  return sessionActorQuery(db).where('sessions.id', '=', id).executeTakeFirst();
}

export async function touchToken(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('apiTokens').set({ lastUsedAt: at }).where('id', '=', id).execute();
}

export async function listUserTokens(db: Db, userId: string) {
  return db.selectFrom('apiTokens').selectAll().where('userId', '=', userId).orderBy('createdAt', 'desc').execute();
}

export async function findUserToken(db: Db, userId: string, id: string) {
  return db.selectFrom('apiTokens').selectAll().where('userId', '=', userId).where('id', '=', id).executeTakeFirst();
}

export async function revokeToken(db: Db, userId: string, id: string, at: string): Promise<void> {
  await db.updateTable('apiTokens').set({ revokedAt: at }).where('userId', '=', userId).where('id', '=', id).where('revokedAt', 'is', null).execute();
}

export async function listGrantsFor(db: Db, orgId: string, userId: string) {
  return db.selectFrom('grants').select(['id', 'resourceType', 'resourceId', 'permissions']).where(inOrg(orgId)).where('userId', '=', userId).execute();
}

export async function countRecentLoginFailures(db: Db, ip: string, email: string, sinceIso: string) {
  return db
    .selectFrom('loginFailures')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('at').as('oldest')])
    .where('ip', '=', ip)
    .where('email', '=', email)
    .where('at', '>', sinceIso)
    .executeTakeFirstOrThrow();
}

/** Records a sign-in attempt as failed until it is known to have succeeded (`forgetLoginAttempt`). */
export async function insertLoginAttempt(db: Db, row: { id: string; ip: string; email: string; at: string }): Promise<void> {
  await db.insertInto('loginFailures').values(row).execute();
}

export async function forgetLoginAttempt(db: Db, id: string): Promise<void> {
  await db.deleteFrom('loginFailures').where('id', '=', id).execute();
}

export async function pruneLoginFailures(db: Db, beforeIso: string): Promise<void> {
  await db.deleteFrom('loginFailures').where('at', '<', beforeIso).execute();
}
