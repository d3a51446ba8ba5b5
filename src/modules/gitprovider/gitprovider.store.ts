import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { newId, nowIso } from '../../lib/ids.js';
import type {
  GitproviderConnectionsTable,
  GitproviderDeliveriesTable,
  GitproviderDeviceFlowsTable,
  GitproviderInstallationsTable,
  GitproviderPreviewDeploymentsTable,
  GitproviderPreviewPullsTable,
  GitproviderPullCommentsTable,
} from './gitprovider.tables.js';
import { inOrg, inProject } from '../../db/scope.js';

/** SQL of the git provider area. Every org-owned query is scoped by org. */

export type InstallationRow = Selectable<GitproviderInstallationsTable>;
export type ConnectionRow = Selectable<GitproviderConnectionsTable>;
export type DeviceFlowRow = Selectable<GitproviderDeviceFlowsTable>;
export type DeliveryRow = Selectable<GitproviderDeliveriesTable>;
export type PreviewPullRow = Selectable<GitproviderPreviewPullsTable>;
export type PreviewDeploymentRow = Selectable<GitproviderPreviewDeploymentsTable>;
export type PullCommentRow = Selectable<GitproviderPullCommentsTable>;

// ---------------------------------------------------------------- installations

export function listInstallations(db: Db, orgId: string): Promise<InstallationRow[]> {
  return db.selectFrom('gitproviderInstallations').selectAll().where(inOrg(orgId)).orderBy('createdAt').execute();
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
  const res = await db.updateTable('gitproviderInstallations').set({ orgId: null, claimedBy: null, updatedAt: nowIso() }).where(inOrg(orgId)).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

export async function deleteInstallation(db: Db, installationId: string): Promise<void> {
  await db.deleteFrom('gitproviderInstallations').where('installationId', '=', installationId).execute();
}

// ---------------------------------------------------------------- OAuth / CLI connections

export function listConnections(db: Db, orgId: string): Promise<ConnectionRow[]> {
  return db.selectFrom('gitproviderConnections').selectAll().where(inOrg(orgId)).execute();
}

export async function upsertConnection(db: Db, c: { orgId: string; source: string; login: string; accountType: string; token: string | null; createdBy: string }): Promise<void> {
  const at = nowIso();
  const existing = await db.selectFrom('gitproviderConnections').select('id').where(inOrg(c.orgId)).where('source', '=', c.source).executeTakeFirst();
  if (existing) {
    await db
      .updateTable('gitproviderConnections')
      .set({ login: c.login, accountType: c.accountType, token: c.token, createdBy: c.createdBy, updatedAt: at })
      .where('id', '=', existing.id)
      .where(inOrg(c.orgId))
      .execute();
    return;
  }
  await db.insertInto('gitproviderConnections').values({ id: newId('ghc'), ...c, createdAt: at, updatedAt: at }).execute();
}

export async function deleteConnections(db: Db, orgId: string, sources: string[]): Promise<number> {
  const res = await db.deleteFrom('gitproviderConnections').where(inOrg(orgId)).where('source', 'in', sources).executeTakeFirst();
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
    .where(inOrg(orgId))
    .where('userId', '=', userId)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function updateDeviceFlow(db: Db, orgId: string, id: string, set: { status?: string; lastPolledAt?: string; intervalSeconds?: number }): Promise<void> {
  await db.updateTable('gitproviderDeviceFlows').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

// ---------------------------------------------------------------- deliveries

export async function insertDelivery(db: Db, d: { deliveryId: string; event: string; hookId: string | null; payload: string; dedupeKey: string }): Promise<void> {
  await db
    .insertInto('gitproviderDeliveries')
    .values({ ...d, status: 'queued', result: null, receivedAt: nowIso() })
    .execute();
}

/** Whether a delivery about the same content (another id) was received since `since` and did not fail for good. */
export async function handledRecently(db: Db, dedupeKey: string, deliveryId: string, since: string): Promise<boolean> {
  const row = await db
    .selectFrom('gitproviderDeliveries')
    .select('deliveryId')
    .where('dedupeKey', '=', dedupeKey)
    .where('receivedAt', '>', since)
    .where('deliveryId', '!=', deliveryId)
    .where('status', '!=', 'failed')
    .limit(1)
    .executeTakeFirst();
  return !!row;
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
  await db.deleteFrom('gitproviderProjectNotices').where(inProject(orgId, projectId)).execute();
}

export function findNotice(db: Db, orgId: string, projectId: string) {
  return db.selectFrom('gitproviderProjectNotices').select(['reason', 'at']).where(inProject(orgId, projectId)).executeTakeFirst();
}

/** Forgets handled deliveries older than `before` (their ids only matter while GitHub may redeliver), and old device flows. */
export async function pruneOld(db: Db, before: string): Promise<void> {
  await db.deleteFrom('gitproviderDeliveries').where('receivedAt', '<', before).where('status', '=', 'done').execute();
  await db.deleteFrom('gitproviderDeviceFlows').where('expiresAt', '<', before).execute();
  await db.deleteFrom('gitproviderUsedStates').where('expiresAt', '<', before).execute();
}

// ---------------------------------------------------------------- preview pull requests (migration 023)

/**
 * Records pull request `number` as open in a project with its head (a new row, or the existing one
 * updated); answers the row and the state it had before (null when new).
 */
export async function upsertPreviewPull(
  db: Db,
  p: { orgId: string; projectId: string; environment: string; repoOwner: string; repoName: string; number: number; headBranch: string; headSha: string },
): Promise<{ row: PreviewPullRow; previousState: string | null }> {
  const at = nowIso();
  const existing = await db.selectFrom('gitproviderPreviewPulls').selectAll().where(inProject(p.orgId, p.projectId)).where('number', '=', p.number).executeTakeFirst();
  if (existing) {
    const set = { environment: p.environment, repoOwner: p.repoOwner, repoName: p.repoName, headBranch: p.headBranch, headSha: p.headSha, state: 'open', updatedAt: at };
    await db.updateTable('gitproviderPreviewPulls').set(set).where(inOrg(p.orgId)).where('id', '=', existing.id).execute();
    return { row: { ...existing, ...set }, previousState: existing.state };
  }
  const row: PreviewPullRow = { id: newId('ghp'), ...p, state: 'open', createdAt: at, updatedAt: at };
  await db.insertInto('gitproviderPreviewPulls').values(row).execute();
  return { row, previousState: null };
}

export async function closePreviewPull(db: Db, orgId: string, id: string): Promise<void> {
  await db.updateTable('gitproviderPreviewPulls').set({ state: 'closed', updatedAt: nowIso() }).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** The org's records of pull request `number` of owner/repo, one per project (any state). */
export function previewPullsOf(db: Db, orgId: string, owner: string, repo: string, number: number): Promise<PreviewPullRow[]> {
  return db
    .selectFrom('gitproviderPreviewPulls')
    .selectAll()
    .where(inOrg(orgId))
    .where('repoOwner', '=', owner)
    .where('repoName', '=', repo)
    .where('number', '=', number)
    .orderBy('createdAt')
    .orderBy('id')
    .execute();
}

/** The open pull requests whose preview is `environment` of a project. */
export function openPreviewPullsOfEnvironment(db: Db, orgId: string, projectId: string, environment: string): Promise<PreviewPullRow[]> {
  return db
    .selectFrom('gitproviderPreviewPulls')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('environment', '=', environment)
    .where('state', '=', 'open')
    .execute();
}

/** The open pull requests of a project whose head is `branch` (a push to it deploys their previews). */
export function openPreviewPullsOnBranch(db: Db, orgId: string, projectId: string, branch: string): Promise<PreviewPullRow[]> {
  return db
    .selectFrom('gitproviderPreviewPulls')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('headBranch', '=', branch)
    .where('state', '=', 'open')
    .execute();
}

// ---------------------------------------------------------------- preview deployments and their commit statuses

/**
 * Claims the deployment of `commitSha` to a project's environment: false when it was claimed before
 * (a redelivery, or the push and the `synchronize` of the same head).
 */
export async function claimPreviewDeployment(db: Db, row: PreviewDeploymentRow): Promise<boolean> {
  const res = await db
    .insertInto('gitproviderPreviewDeployments')
    .values(row)
    .onConflict((oc) => oc.columns(['projectId', 'environment', 'commitSha']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Binds a claim to the deployment made for it (unless the settle listener bound it first). */
export async function bindPreviewDeployment(db: Db, orgId: string, id: string, deploymentId: string): Promise<void> {
  await db.updateTable('gitproviderPreviewDeployments').set({ deploymentId, updatedAt: nowIso() }).where(inOrg(orgId)).where('id', '=', id).where('deploymentId', 'is', null).execute();
}

export async function deletePreviewDeployment(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('gitproviderPreviewDeployments').where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Forgets the claims of a project's environment (a closed pull request reopened starts afresh). */
export async function deletePreviewDeploymentsOf(db: Db, orgId: string, projectId: string, environment: string): Promise<void> {
  await db.deleteFrom('gitproviderPreviewDeployments').where(inProject(orgId, projectId)).where('environment', '=', environment).execute();
}

export function findPreviewDeployment(db: Db, orgId: string, id: string): Promise<PreviewDeploymentRow | undefined> {
  return db.selectFrom('gitproviderPreviewDeployments').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** The claim of a settled deployment: bound to it, else the unbound claim of its environment and commit. */
export async function previewDeploymentFor(db: Db, orgId: string, d: { id: string; projectId: string; environment: string; commit: string | null }): Promise<PreviewDeploymentRow | undefined> {
  const bound = await db.selectFrom('gitproviderPreviewDeployments').selectAll().where(inOrg(orgId)).where('deploymentId', '=', d.id).executeTakeFirst();
  if (bound || !d.commit) return bound;
  const unbound = await db
    .selectFrom('gitproviderPreviewDeployments')
    .selectAll()
    .where(inProject(orgId, d.projectId))
    .where('environment', '=', d.environment)
    .where('commitSha', '=', d.commit)
    .where('deploymentId', 'is', null)
    .executeTakeFirst();
  if (!unbound) return undefined;
  await bindPreviewDeployment(db, orgId, unbound.id, d.id);
  return { ...unbound, deploymentId: d.id };
}

export async function setPreviewDeploymentState(db: Db, orgId: string, id: string, set: { state: string; description: string; previewUrl?: string | null }): Promise<void> {
  await db.updateTable('gitproviderPreviewDeployments').set({ ...set, updatedAt: nowIso() }).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** The still pending claims of a project's environment. */
export function pendingPreviewDeploymentsOf(db: Db, orgId: string, projectId: string, environment: string): Promise<PreviewDeploymentRow[]> {
  return db
    .selectFrom('gitproviderPreviewDeployments')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('environment', '=', environment)
    .where('state', '=', 'pending')
    .execute();
}

/** The newest claim of a project's environment (what its pull request comment shows). */
export function latestPreviewDeployment(db: Db, orgId: string, projectId: string, environment: string): Promise<PreviewDeploymentRow | undefined> {
  return db
    .selectFrom('gitproviderPreviewDeployments')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('environment', '=', environment)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

// ---------------------------------------------------------------- the one comment per pull request

/** The org's comment record of pull request `number` (made when missing), its revision bumped: the comment must show a change. */
export async function touchPullComment(db: Db, k: { orgId: string; repoOwner: string; repoName: string; number: number }): Promise<PullCommentRow> {
  const at = nowIso();
  await db
    .insertInto('gitproviderPullComments')
    .values({ id: newId('ghm'), ...k, commentId: null, rev: 0, syncedRev: 0, lockUntil: null, createdAt: at, updatedAt: at })
    .onConflict((oc) => oc.columns(['orgId', 'repoOwner', 'repoName', 'number']).doNothing())
    .execute();
  await db
    .updateTable('gitproviderPullComments')
    .set((eb) => ({ rev: eb('rev', '+', 1), updatedAt: at }))
    .where(inOrg(k.orgId))
    .where('repoOwner', '=', k.repoOwner)
    .where('repoName', '=', k.repoName)
    .where('number', '=', k.number)
    .execute();
  return db
    .selectFrom('gitproviderPullComments')
    .selectAll()
    .where(inOrg(k.orgId))
    .where('repoOwner', '=', k.repoOwner)
    .where('repoName', '=', k.repoName)
    .where('number', '=', k.number)
    .executeTakeFirstOrThrow();
}

export function findPullComment(db: Db, orgId: string, id: string): Promise<PullCommentRow | undefined> {
  return db.selectFrom('gitproviderPullComments').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** Takes the comment's write lease until `until` when nobody holds it (or a holder's ran out); true when taken. */
export async function leasePullComment(db: Db, orgId: string, id: string, until: string): Promise<boolean> {
  const now = nowIso();
  const res = await db
    .updateTable('gitproviderPullComments')
    .set({ lockUntil: until })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lockUntil', 'is', null), eb('lockUntil', '<', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Gives the lease `until` back, recording what the comment at GitHub now shows (when it was written). */
export async function releasePullComment(db: Db, orgId: string, id: string, until: string, synced?: { rev: number; commentId: string | null }): Promise<void> {
  await db
    .updateTable('gitproviderPullComments')
    .set({ lockUntil: null, ...(synced ? { syncedRev: synced.rev, commentId: synced.commentId, updatedAt: nowIso() } : {}) })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('lockUntil', '=', until)
    .execute();
}
