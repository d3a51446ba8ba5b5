import type { Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import { cloudProjectIds } from './project-link.js';
import type { BackupDestinationsTable, BackupPoliciesTable, BackupRestoresTable, BackupRunsTable } from './backups.tables.js';
import { inOrg, inProject } from '../../db/scope.js';

/** SQL of the backups area. Every query a request can reach is scoped by org. */

export type DestinationRow = Selectable<BackupDestinationsTable>;
export type PolicyRow = Selectable<BackupPoliciesTable>;
export type RunRow = Selectable<BackupRunsTable>;
export type RestoreRow = Selectable<BackupRestoresTable>;

export const RUN_IN_FLIGHT = ['queued', 'running', 'uploading', 'verifying'];
export const RESTORE_ACTIVE = ['staged', 'applying'];

// ---------------------------------------------------------------- destinations

export function findDestination(db: Db, orgId: string, id: string): Promise<DestinationRow | undefined> {
  return db.selectFrom('backupDestinations').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export function listDestinations(db: Db, orgId: string): Promise<DestinationRow[]> {
  return db.selectFrom('backupDestinations').selectAll().where(inOrg(orgId)).orderBy('createdAt').orderBy('id').execute();
}

export async function insertDestination(db: Db, row: DestinationRow): Promise<void> {
  await db.insertInto('backupDestinations').values(row).execute();
}

export async function updateDestination(db: Db, orgId: string, id: string, set: Updateable<BackupDestinationsTable>): Promise<void> {
  await db.updateTable('backupDestinations').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deleteDestination(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('backupDestinations').where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Policies and kept runs that still use the destination. */
export async function destinationUsage(db: Db, orgId: string, id: string): Promise<{ policies: number; runs: number }> {
  const p = await db.selectFrom('backupPolicies').select((eb) => eb.fn.countAll<number>().as('n')).where(inOrg(orgId)).where('destinationId', '=', id).executeTakeFirst();
  const r = await db
    .selectFrom('backupRuns')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(inOrg(orgId))
    .where('destinationId', '=', id)
    .where('status', 'in', ['succeeded', ...RUN_IN_FLIGHT])
    .executeTakeFirst();
  return { policies: Number(p?.n ?? 0), runs: Number(r?.n ?? 0) };
}

// ---------------------------------------------------------------- policies

export function findPolicy(db: Db, orgId: string, id: string): Promise<PolicyRow | undefined> {
  return db.selectFrom('backupPolicies').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** The webhook route's lookup: by token hash, whatever the org (the token is the credential). */
export function findPolicyByWebhookHash(db: Db, hash: string): Promise<PolicyRow | undefined> {
  return db.selectFrom('backupPolicies').selectAll().where('webhookTokenHash', '=', hash).executeTakeFirst();
}

export function listPolicies(db: Db, orgId: string, projectId: string): Promise<PolicyRow[]> {
  return db.selectFrom('backupPolicies').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt').orderBy('id').execute();
}

export async function insertPolicy(db: Db, row: PolicyRow): Promise<void> {
  await db.insertInto('backupPolicies').values(row).execute();
}

export async function updatePolicy(db: Db, orgId: string, id: string, set: Updateable<BackupPoliciesTable>): Promise<void> {
  await db.updateTable('backupPolicies').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deletePolicy(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('backupPolicies').where(inOrg(orgId)).where('id', '=', id).execute();
}

/**
 * Enabled cron policies that are due, across orgs (the scheduler's query). Policies of a project that
 * moved to the cloud (`location: "cloud"`) are left out: its data lives there now, so a local schedule
 * would back up a stale copy; they run again if the project comes back.
 */
export function duePolicies(db: Db, nowIso: string): Promise<PolicyRow[]> {
  return db
    .selectFrom('backupPolicies')
    .selectAll()
    .where('enabled', '=', 1)
    .where('projectId', 'not in', cloudProjectIds(db))
    .where('cronExpression', 'is not', null)
    .where('nextRunAt', 'is not', null)
    .where('nextRunAt', '<=', nowIso)
    .orderBy('nextRunAt')
    .limit(100)
    .execute();
}

export async function setLastSuccess(db: Db, orgId: string, id: string, at: string): Promise<void> {
  await db.updateTable('backupPolicies').set({ lastSuccessAt: at }).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Moves a policy's next run time, only if nobody else did (several instances). */
export async function claimNextRun(db: Db, id: string, expected: string, next: string | null): Promise<boolean> {
  const res = await db.updateTable('backupPolicies').set({ nextRunAt: next }).where('id', '=', id).where('nextRunAt', '=', expected).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

// ---------------------------------------------------------------- runs

export function findRun(db: Db, orgId: string, id: string): Promise<RunRow | undefined> {
  return db.selectFrom('backupRuns').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export function findActiveRun(db: Db, orgId: string, policyId: string): Promise<RunRow | undefined> {
  return db.selectFrom('backupRuns').selectAll().where(inOrg(orgId)).where('activeKey', '=', policyId).executeTakeFirst();
}

export function listRuns(db: Db, orgId: string, projectId: string, opts: { policyId?: string; status?: string; limit: number }): Promise<RunRow[]> {
  let q = db.selectFrom('backupRuns').selectAll().where(inProject(orgId, projectId));
  if (opts.policyId) q = q.where('policyId', '=', opts.policyId);
  if (opts.status) q = q.where('status', '=', opts.status);
  return q.orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
}

export function policyRuns(db: Db, orgId: string, policyId: string): Promise<RunRow[]> {
  return db.selectFrom('backupRuns').selectAll().where(inOrg(orgId)).where('policyId', '=', policyId).execute();
}

export async function insertRun(db: Db, row: RunRow): Promise<void> {
  await db.insertInto('backupRuns').values(row).execute();
}

export async function updateRun(db: Db, orgId: string, id: string, set: Updateable<BackupRunsTable>): Promise<void> {
  await db.updateTable('backupRuns').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Moves a run from one status to the next only if it still is in `from`; true when it moved. */
export async function moveRun(db: Db, orgId: string, id: string, from: string[], set: Updateable<BackupRunsTable> & { status: string }): Promise<boolean> {
  const res = await db.updateTable('backupRuns').set(set).where(inOrg(orgId)).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * Deletes a pruned run, only if it still may be pruned: terminal, unprotected, no restore staged or
 * applying from it. True when deleted.
 */
export async function deletePrunableRun(db: Db, orgId: string, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom('backupRuns')
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('protected', '=', 0)
    .where('status', 'in', ['succeeded', 'failed', 'cancelled', 'server_error'])
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('backupRestores')
            .select('backupRestores.id')
            .whereRef('backupRestores.runId', '=', 'backupRuns.id')
            .where('backupRestores.status', 'in', RESTORE_ACTIVE),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** Runs left in flight (crash recovery; every org). */
export function inFlightRuns(db: Db): Promise<RunRow[]> {
  return db.selectFrom('backupRuns').selectAll().where('status', 'in', RUN_IN_FLIGHT).execute();
}

// ---------------------------------------------------------------- restores

export function findRestore(db: Db, orgId: string, id: string): Promise<RestoreRow | undefined> {
  return db.selectFrom('backupRestores').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export async function insertRestore(db: Db, row: RestoreRow): Promise<void> {
  await db.insertInto('backupRestores').values(row).execute();
}

export async function moveRestore(db: Db, orgId: string, id: string, from: string[], set: Updateable<BackupRestoresTable> & { status: string }): Promise<boolean> {
  const res = await db.updateTable('backupRestores').set(set).where(inOrg(orgId)).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function updateRestore(db: Db, orgId: string, id: string, set: Updateable<BackupRestoresTable>): Promise<void> {
  await db.updateTable('backupRestores').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Run ids with a restore staged or applying (retention keeps them). */
export async function restoringRunIds(db: Db, orgId: string, runIds: string[]): Promise<Set<string>> {
  if (runIds.length === 0) return new Set();
  const rows = await db.selectFrom('backupRestores').select('runId').where(inOrg(orgId)).where('runId', 'in', runIds).where('status', 'in', RESTORE_ACTIVE).execute();
  return new Set(rows.map((r) => r.runId));
}

export function applyingRestoreOfService(db: Db, orgId: string, serviceId: string): Promise<RestoreRow | undefined> {
  return db.selectFrom('backupRestores').selectAll().where(inOrg(orgId)).where('serviceId', '=', serviceId).where('status', '=', 'applying').executeTakeFirst();
}

/** Restores left applying (crash recovery; every org). */
export function applyingRestores(db: Db): Promise<RestoreRow[]> {
  return db.selectFrom('backupRestores').selectAll().where('status', '=', 'applying').execute();
}

// ---------------------------------------------------------------- both

const TABLE = { run: 'backupRuns', restore: 'backupRestores' } as const;

/**
 * The heartbeat of a run or restore executing here (its updatedAt, so a sweep can tell a dead one
 * from a live one); answers whether it should stop (cancel requested by any instance, or gone).
 */
export async function heartbeat(db: Db, kind: 'run' | 'restore', orgId: string, id: string, at: string): Promise<boolean> {
  const table = TABLE[kind];
  // Named: the table is one of two, which the scope's types cannot tell from a join of both.
  await db.updateTable(table).set({ updatedAt: at }).where(inOrg(orgId, table)).where('id', '=', id).execute();
  const row = await db.selectFrom(table).select('cancelRequested').where(inOrg(orgId, table)).where('id', '=', id).executeTakeFirst();
  return !row || row.cancelRequested === 1;
}

/** Every backup record of a project (the project is being deleted): restores, runs, policies. */
export async function deleteProjectBackups(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('backupRestores').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('backupRuns').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('backupPolicies').where(inProject(orgId, projectId)).execute();
}

/** Size of the newest succeeded run of a policy, or null. */
export async function lastSucceededSize(db: Db, orgId: string, policyId: string): Promise<number | null> {
  const row = await db
    .selectFrom('backupRuns')
    .select('sizeBytes')
    .where(inOrg(orgId))
    .where('policyId', '=', policyId)
    .where('status', '=', 'succeeded')
    .orderBy('createdAt', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.sizeBytes ?? null;
}

/** The newest succeeded run of a service with an artifact (a preview's seed; services' `seedFrom`). */
export function lastSucceededRunOfService(db: Db, orgId: string, projectId: string, serviceId: string): Promise<RunRow | undefined> {
  return db
    .selectFrom('backupRuns')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('serviceId', '=', serviceId)
    .where('status', '=', 'succeeded')
    .where('artifactKey', 'is not', null)
    .orderBy('finishedAt', 'desc')
    .orderBy('createdAt', 'desc')
    .limit(1)
    .executeTakeFirst();
}
