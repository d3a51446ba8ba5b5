import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import type { UploadSessionsTable } from './uploads.tables.js';
import { inOrg, inProject } from '../../db/scope.js';

export type UploadSessionRow = Selectable<UploadSessionsTable>;

export async function insertSession(db: Db, row: Insertable<UploadSessionsTable>): Promise<void> {
  await db.insertInto('uploadSessions').values(row).execute();
}

/** One session of `orgId`. */
export async function findSession(db: Db, orgId: string, id: string): Promise<UploadSessionRow | undefined> {
  return db.selectFrom('uploadSessions').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/**
 * A session by id alone: only for the relay, whose credential is the session's upload token
 * (checked by the caller in constant time before anything else is done with the row).
 */
export async function findSessionForToken(db: Db, id: string): Promise<UploadSessionRow | undefined> {
  return db.selectFrom('uploadSessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** open -> uploading, only when still open and unexpired; false when another request got it. */
export async function claimForUpload(db: Db, orgId: string, id: string, now: string): Promise<boolean> {
  const r = await db
    .updateTable('uploadSessions')
    .set({ status: 'uploading' })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('status', '=', 'open')
    .where('expiresAt', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function releaseUpload(db: Db, orgId: string, id: string): Promise<void> {
  await db.updateTable('uploadSessions').set({ status: 'open' }).where(inOrg(orgId)).where('id', '=', id).where('status', '=', 'uploading').execute();
}

export async function markUploaded(
  db: Db,
  orgId: string,
  id: string,
  v: { sizeBytes: number; sha256: string; files: number; uploadedAt: string; expiresAt: string; storedBytes: number },
): Promise<void> {
  await db
    .updateTable('uploadSessions')
    .set({ status: 'uploaded', ...v })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('status', '=', 'uploading')
    .execute();
}

export async function saveScan(db: Db, orgId: string, id: string, scan: string): Promise<void> {
  await db.updateTable('uploadSessions').set({ scan }).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** uploaded -> consumed by `projectId`; false when the session was not (or no longer) uploaded. */
export async function consume(db: Db, orgId: string, id: string, projectId: string, now: string): Promise<boolean> {
  const r = await db
    .updateTable('uploadSessions')
    .set({ status: 'consumed', projectId, consumedAt: now })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('status', '=', 'uploaded')
    .where('expiresAt', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The session whose upload is the project's current source (the latest consumed one). */
export async function currentForProject(db: Db, orgId: string, projectId: string): Promise<UploadSessionRow | undefined> {
  return db
    .selectFrom('uploadSessions')
    .selectAll()
    .where(inProject(orgId, projectId))
    .where('status', '=', 'consumed')
    .orderBy('consumedAt', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

export async function countForProject(db: Db, orgId: string, projectId: string): Promise<{ count: number; names: string[] }> {
  const rows = await db.selectFrom('uploadSessions').select('id').where(inProject(orgId, projectId)).orderBy('createdAt', 'asc').execute();
  return { count: rows.length, names: rows.map((r) => r.id) };
}

export async function deleteForProject(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('uploadSessions').where(inProject(orgId, projectId)).execute();
}

// ---------------------------------------------------------------- quotas (issue 15: upload disk exhaustion)

/** A user's open sessions (not consumed, not expired), in any org: count and the soonest expiry. */
/** PostgreSQL: locks the user's row, so that one user's concurrent session opens are counted one after another. */
export async function lockUser(db: Db, userId: string): Promise<void> {
  await db.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
}

export async function openSessionsOfUser(db: Db, userId: string, now: string): Promise<{ n: number; soonest: string | null }> {
  const r = await db
    .selectFrom('uploadSessions')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string>('expiresAt').as('soonest')])
    .where('createdBy', '=', userId)
    .where('status', '!=', 'consumed')
    .where('expiresAt', '>', now)
    .executeTakeFirst();
  return { n: Number(r?.n ?? 0), soonest: r?.soonest ?? null };
}

/** Bytes an org's received, unconsumed uploads hold on disk, and the soonest of their expiries. */
export async function storedBytesOfOrg(db: Db, orgId: string, now: string): Promise<{ bytes: number; soonest: string | null }> {
  const r = await db
    .selectFrom('uploadSessions')
    .select((eb) => [eb.fn.sum<number>('storedBytes').as('bytes'), eb.fn.min<string>('expiresAt').as('soonest')])
    .where(inOrg(orgId))
    .where('status', '=', 'uploaded')
    .where('expiresAt', '>', now)
    .executeTakeFirst();
  return { bytes: Number(r?.bytes ?? 0), soonest: r?.soonest ?? null };
}

/**
 * What an upload being received holds on disk so far, said by the instance receiving it (the org's
 * allowance is shared by every instance: issue 23).
 */
export async function reportInFlight(db: Db, orgId: string, id: string, instanceId: string, bytes: number, at: string): Promise<void> {
  await db
    .updateTable('uploadSessions')
    .set({ inFlightBytes: bytes, inFlightBy: instanceId, inFlightAt: at })
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('status', '=', 'uploading')
    .execute();
}

/** Bytes the org's uploads being received by other instances hold (said since `since`), `except` one session. */
export async function inFlightElsewhere(db: Db, orgId: string, instanceId: string, since: string, except?: string): Promise<number> {
  let q = db
    .selectFrom('uploadSessions')
    .select((eb) => eb.fn.sum<number>('inFlightBytes').as('bytes'))
    .where(inOrg(orgId))
    .where('status', '=', 'uploading')
    .where('inFlightBy', '!=', instanceId)
    .where('inFlightAt', '>', since);
  if (except) q = q.where('id', '!=', except);
  const r = await q.executeTakeFirst();
  return Number(r?.bytes ?? 0);
}

// ---------------------------------------------------------------- sweep (instance-wide, by design)

/** Sessions never consumed whose time ran out (any org: the sweeper cleans the whole instance). */
export async function listExpired(db: Db, now: string, limit = 500): Promise<{ id: string; orgId: string }[]> {
  return db
    .selectFrom('uploadSessions')
    .select(['id', 'orgId'])
    .where('status', '!=', 'consumed')
    .where('expiresAt', '<=', now)
    .limit(limit)
    .execute();
}

export async function deleteSession(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('uploadSessions').where(inOrg(orgId)).where('id', '=', id).where('status', '!=', 'consumed').execute();
}

/** Consumed sessions that a newer upload of the same project replaced (their rows are history only). */
export async function deleteSuperseded(db: Db, olderThan: string): Promise<number> {
  const r = await db
    .deleteFrom('uploadSessions as s')
    .where('s.status', '=', 'consumed')
    .where('s.consumedAt', '<', olderThan)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('uploadSessions as n')
          .select('n.id')
          .whereRef('n.orgId', '=', 's.orgId')
          .whereRef('n.projectId', '=', 's.projectId')
          .where('n.status', '=', 'consumed')
          .whereRef('n.consumedAt', '>', 's.consumedAt'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function knownSessionIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await db.selectFrom('uploadSessions').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}
