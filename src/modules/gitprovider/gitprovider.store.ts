import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { newId, nowIso } from '../../lib/ids.js';
import type { GitproviderConnectionsTable, GitproviderDeliveriesTable, GitproviderDeviceFlowsTable, GitproviderInstallationsTable } from './gitprovider.tables.js';

/** SQL of the git provider area. Every org-owned query is scoped by org. */

export type InstallationRow = Selectable<GitproviderInstallationsTable>;
export type ConnectionRow = Selectable<GitproviderConnectionsTable>;
export type DeviceFlowRow = Selectable<GitproviderDeviceFlowsTable>;
export type DeliveryRow = Selectable<GitproviderDeliveriesTable>;

// ---------------------------------------------------------------- installations

export function listInstallations(db: Db, orgId: string): Promise<InstallationRow[]> {
  return db.selectFrom('gitproviderInstallations').selectAll().where('orgId', '=', orgId).orderBy('createdAt').execute();
}

export function findInstallationByGithubId(db: Db, installationId: string): Promise<InstallationRow | undefined> {
  return db.selectFrom('gitproviderInstallations').selectAll().where('installationId', '=', installationId).executeTakeFirst();
}

/** Records an installation (from a delivery or a claim); keeps an existing claim. */
export async function upsertInstallation(
  db: Db,
  i: { installationId: string; accountLogin: string; accountType: string; accountId: string | null },
): Promise<InstallationRow> {
  const at = nowIso();
  const existing = await findInstallationByGithubId(db, i.installationId);
  if (existing) {
    await db
      .updateTable('gitproviderInstallations')
      .set({ accountLogin: i.accountLogin, accountType: i.accountType, accountId: i.accountId, updatedAt: at })
      .where('id', '=', existing.id)
      .execute();
    return { ...existing, ...i, updatedAt: at };
  }
  const row: InstallationRow = { id: newId('ghi'), ...i, orgId: null, claimedBy: null, createdAt: at, updatedAt: at };
  await db.insertInto('gitproviderInstallations').values(row).execute();
  return row;
}

/** Binds an installation to `orgId` unless another org holds it; true when the org now holds it. */
export async function claimInstallation(db: Db, installationId: string, orgId: string, userId: string): Promise<boolean> {
  const res = await db
    .updateTable('gitproviderInstallations')
    .set({ orgId, claimedBy: userId, updatedAt: nowIso() })
    .where('installationId', '=', installationId)
    .where((eb) => eb.or([eb('orgId', 'is', null), eb('orgId', '=', orgId)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Drops the org's bindings to its installations (disconnect); the installations stay at GitHub. */
export async function releaseInstallations(db: Db, orgId: string): Promise<number> {
  const res = await db.updateTable('gitproviderInstallations').set({ orgId: null, claimedBy: null, updatedAt: nowIso() }).where('orgId', '=', orgId).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

export async function deleteInstallation(db: Db, installationId: string): Promise<void> {
  await db.deleteFrom('gitproviderInstallations').where('installationId', '=', installationId).execute();
}

// ---------------------------------------------------------------- OAuth / CLI connections

export function listConnections(db: Db, orgId: string): Promise<ConnectionRow[]> {
  return db.selectFrom('gitproviderConnections').selectAll().where('orgId', '=', orgId).execute();
}

export async function upsertConnection(db: Db, c: { orgId: string; source: string; login: string; accountType: string; token: string | null; createdBy: string }): Promise<void> {
  const at = nowIso();
  const existing = await db.selectFrom('gitproviderConnections').select('id').where('orgId', '=', c.orgId).where('source', '=', c.source).executeTakeFirst();
  if (existing) {
    await db
      .updateTable('gitproviderConnections')
      .set({ login: c.login, accountType: c.accountType, token: c.token, createdBy: c.createdBy, updatedAt: at })
      .where('id', '=', existing.id)
      .where('orgId', '=', c.orgId)
      .execute();
    return;
  }
  await db.insertInto('gitproviderConnections').values({ id: newId('ghc'), ...c, createdAt: at, updatedAt: at }).execute();
}

export async function deleteConnections(db: Db, orgId: string, sources: string[]): Promise<number> {
  const res = await db.deleteFrom('gitproviderConnections').where('orgId', '=', orgId).where('source', 'in', sources).executeTakeFirst();
  return Number(res.numDeletedRows);
}

// ---------------------------------------------------------------- state nonces and device flows

/** Marks a state nonce used; false when it was used before. */
export async function useStateNonce(db: Db, nonce: string, orgId: string, expiresAt: string): Promise<boolean> {
  const at = nowIso();
  await db.deleteFrom('gitproviderUsedStates').where('expiresAt', '<', new Date(Date.now() - 3600_000).toISOString()).execute();
  const res = await db
    .insertInto('gitproviderUsedStates')
    .values({ nonce, orgId, expiresAt, usedAt: at })
    .onConflict((oc) => oc.column('nonce').doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function insertDeviceFlow(db: Db, row: DeviceFlowRow): Promise<void> {
  await db.insertInto('gitproviderDeviceFlows').values(row).execute();
}

export function latestDeviceFlow(db: Db, orgId: string, userId: string): Promise<DeviceFlowRow | undefined> {
  return db
    .selectFrom('gitproviderDeviceFlows')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('userId', '=', userId)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function updateDeviceFlow(db: Db, orgId: string, id: string, set: { status?: string; lastPolledAt?: string; intervalSeconds?: number }): Promise<void> {
  await db.updateTable('gitproviderDeviceFlows').set(set).where('orgId', '=', orgId).where('id', '=', id).execute();
}

// ---------------------------------------------------------------- deliveries

export async function insertDelivery(db: Db, d: { deliveryId: string; event: string; hookId: string | null; payload: string }): Promise<void> {
  await db
    .insertInto('gitproviderDeliveries')
    .values({ ...d, status: 'queued', result: null, receivedAt: nowIso() })
    .execute();
}

export function findDelivery(db: Db, deliveryId: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('gitproviderDeliveries').selectAll().where('deliveryId', '=', deliveryId).executeTakeFirst();
}

/** Moves a delivery that failed for good back to `queued`; false when it is not `failed`. */
export async function requeueFailedDelivery(db: Db, deliveryId: string, payload: string): Promise<boolean> {
  const r = await db.updateTable('gitproviderDeliveries').set({ status: 'queued', result: null, payload }).where('deliveryId', '=', deliveryId).where('status', '=', 'failed').executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function finishDelivery(db: Db, deliveryId: string, status: string, result: unknown): Promise<void> {
  await db.updateTable('gitproviderDeliveries').set({ status, result: JSON.stringify(result) }).where('deliveryId', '=', deliveryId).execute();
}

// ---------------------------------------------------------------- notices on projects the provider paused or unlinked

/** Records why the provider paused or unlinked a project (shown by the project's GET git until auto-deploy is on again). */
export async function setNotice(db: Db, orgId: string, projectId: string, reason: string): Promise<void> {
  const at = nowIso();
  await db
    .insertInto('gitproviderProjectNotices')
    .values({ projectId, orgId, reason, at })
    .onConflict((oc) => oc.column('projectId').doUpdateSet({ reason, at }))
    .execute();
}

export async function clearNotice(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('gitproviderProjectNotices').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
}

export function findNotice(db: Db, orgId: string, projectId: string) {
  return db.selectFrom('gitproviderProjectNotices').select(['reason', 'at']).where('orgId', '=', orgId).where('projectId', '=', projectId).executeTakeFirst();
}

/** Forgets handled deliveries older than `before` (their ids only matter while GitHub may redeliver), and old device flows. */
export async function pruneOld(db: Db, before: string): Promise<void> {
  await db.deleteFrom('gitproviderDeliveries').where('receivedAt', '<', before).where('status', '=', 'done').execute();
  await db.deleteFrom('gitproviderDeviceFlows').where('expiresAt', '<', before).execute();
  await db.deleteFrom('gitproviderUsedStates').where('expiresAt', '<', before).execute();
}
