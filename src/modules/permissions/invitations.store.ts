import type { Db } from '../../db/client.js';
import type { InvitationGrantsTable, InvitationsTable } from './permissions.tables.js';
import { inOrg } from '../../db/scope.js';

/**
 * SQL for invitations. Listing and admin actions are scoped by org; accept, decline and
 * materialize look an invitation up by id alone (they are authorized by the invitation's email).
 */

export async function findInvitationInOrg(db: Db, orgId: string, id: string): Promise<InvitationsTable | undefined> {
  return db.selectFrom('invitations').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** By id whatever the org: only for flows authorized by the invitation itself. */
export async function findInvitationAnyOrg(db: Db, id: string): Promise<InvitationsTable | undefined> {
  return db.selectFrom('invitations').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * What the invitation link's page shows before anyone signs in: the invitation with the name of
 * its org and the name and email of who sent it (null once that account is gone). By id alone.
 */
export async function findInvitationSummary(db: Db, id: string) {
  return db
    .selectFrom('invitations as i')
    .innerJoin('orgs as o', 'o.id', 'i.orgId')
    .leftJoin('users as u', 'u.id', 'i.invitedBy')
    .select(['i.id', 'i.orgId', 'i.role', 'i.status', 'i.expiresAt', 'o.name as orgName', 'u.name as inviterName', 'u.email as inviterEmail'])
    .where('i.id', '=', id)
    .executeTakeFirst();
}

export async function listInvitations(db: Db, orgId: string, statuses: string[] | null): Promise<InvitationsTable[]> {
  let q = db.selectFrom('invitations').selectAll().where(inOrg(orgId));
  if (statuses) q = q.where('status', 'in', statuses);
  return q.orderBy('createdAt', 'desc').orderBy('id', 'desc').execute();
}

export async function findPendingForEmail(db: Db, orgId: string, email: string): Promise<InvitationsTable[]> {
  return db.selectFrom('invitations').selectAll().where(inOrg(orgId)).where('email', '=', email).where('status', '=', 'pending').execute();
}

/** Pending invitations of an email in every org (signup on an invite-only instance). */
export async function findPendingAnyOrgForEmail(db: Db, email: string): Promise<InvitationsTable[]> {
  return db.selectFrom('invitations').selectAll().where('email', '=', email).where('status', '=', 'pending').orderBy('createdAt', 'asc').execute();
}

export async function insertInvitation(db: Db, row: InvitationsTable): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

export async function updateInvitation(
  db: Db,
  orgId: string,
  id: string,
  set: Partial<Pick<InvitationsTable, 'status' | 'acceptedBy' | 'updatedAt' | 'expiresAt' | 'respondedAt' | 'materializedAt'>>,
  whereStatus?: string,
): Promise<number> {
  let q = db.updateTable('invitations').set(set).where(inOrg(orgId)).where('id', '=', id);
  if (whereStatus) q = q.where('status', '=', whereStatus);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows ?? 0);
}

export async function insertInvitationGrants(db: Db, rows: InvitationGrantsTable[]): Promise<void> {
  if (rows.length) await db.insertInto('invitationGrants').values(rows).execute();
}

export async function listInvitationGrants(db: Db, orgId: string, invitationIds: string[]): Promise<InvitationGrantsTable[]> {
  if (!invitationIds.length) return [];
  return db
    .selectFrom('invitationGrants')
    .selectAll()
    .where(inOrg(orgId))
    .where('invitationId', 'in', invitationIds)
    .orderBy('createdAt')
    .orderBy('id')
    .execute();
}

export async function deleteInvitationGrants(db: Db, orgId: string, invitationId: string): Promise<number> {
  const r = await db.deleteFrom('invitationGrants').where(inOrg(orgId)).where('invitationId', '=', invitationId).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}

