import type { Db } from '../../db/client.js';
import type { AppOwnersTable, BerthInstancesTable } from './hosting.tables.js';

/**
 * SQL on `app_owners` (026_app_owners): the runtime owner of each app among the instances sharing one
 * PostgreSQL. Instance-wide records, like the runtime states: every instance reads them all (its edge
 * forwards by them), so they are not scoped by org; no API route reads them.
 */

export type AppOwnerRow = AppOwnersTable;

/** Every owner row (one query per ownership tick). */
export async function listOwners(db: Db): Promise<AppOwnerRow[]> {
  return db.selectFrom('appOwners').selectAll().execute();
}

/** Renews every lease the instance holds; answers the app keys it still holds. */
export async function renewOwned(db: Db, instanceId: string, expiresAt: string): Promise<string[]> {
  const rows = await db.updateTable('appOwners').set({ expiresAt }).where('instanceId', '=', instanceId).returning('appKey').execute();
  return rows.map((r) => r.appKey);
}

/**
 * Takes the lease of one app: when nobody holds it, when it ran out, when the holder is this instance
 * (by process, or by name: an instance's name is held by one live process at a time, so a row of the
 * same name is a previous run's), or always with `force` (this instance now runs the app: the previous
 * owner sees it lost and stops its copy). Answers whether this instance holds it now.
 */
export async function claimOwner(db: Db, row: AppOwnerRow, now: string, force: boolean): Promise<boolean> {
  const { appKey: _key, projectId: _project, ...update } = row;
  const out = await db
    .insertInto('appOwners')
    .values(row)
    .onConflict((oc) => {
      const set = oc.column('appKey').doUpdateSet(update);
      return force
        ? set
        : set.where((eb) => eb.or([eb('appOwners.instanceId', '=', row.instanceId), eb('appOwners.instanceName', '=', row.instanceName), eb('appOwners.expiresAt', '<', now)]));
    })
    .returning('instanceId')
    .executeTakeFirst();
  return out?.instanceId === row.instanceId;
}

/** One app's owner row, if any. */
export async function ownerRow(db: Db, appKey: string): Promise<AppOwnerRow | undefined> {
  return db.selectFrom('appOwners').selectAll().where('appKey', '=', appKey).executeTakeFirst();
}

/** Lets every lease of the instance run out now (a clean stop: the other instances take over at their next tick). */
export async function expireOwned(db: Db, instanceId: string, now: string): Promise<void> {
  await db.updateTable('appOwners').set({ expiresAt: now }).where('instanceId', '=', instanceId).execute();
}

/** Says this instance is alive until `row.expiresAt` (every tick). */
export async function heartbeat(db: Db, row: BerthInstancesTable): Promise<void> {
  await db
    .insertInto('berthInstances')
    .values(row)
    .onConflict((oc) => oc.column('instanceId').doUpdateSet({ address: row.address, expiresAt: row.expiresAt }))
    .execute();
}

/** The other live instances (another process id and name, not expired); expired rows are dropped. */
export async function otherLiveInstances(db: Db, instanceId: string, instanceName: string, now: string): Promise<BerthInstancesTable[]> {
  await db.deleteFrom('berthInstances').where('expiresAt', '<', now).execute();
  return db.selectFrom('berthInstances').selectAll().where('instanceId', '!=', instanceId).where('instanceName', '!=', instanceName).execute();
}

/** A clean stop: this instance is gone. */
export async function leave(db: Db, instanceId: string): Promise<void> {
  await db.deleteFrom('berthInstances').where('instanceId', '=', instanceId).execute();
}
