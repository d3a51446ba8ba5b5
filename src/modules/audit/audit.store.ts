import type { RawBuilder } from 'kysely';
import type { Db } from '../../db/client.js';
import { sql } from '../../db/kysely.js';
import { randomString } from '../../lib/ids.js';
import { inOrg } from '../../db/scope.js';

export interface AuditInput {
  orgId: string;
  actorId: string | null;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  /** Never values of secrets: names and ids only. */
  details?: Record<string, unknown>;
}

export interface AuditEvent {
  id: string;
  at: string;
  actorId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  details: Record<string, unknown>;
}

let lastMs = 0;
let seq = 0;

/**
 * Audit ids sort in the order events were written (time, then a per-process counter), so events of
 * one millisecond (one transaction) still list newest first.
 */
function auditId(ms: number): string {
  if (ms === lastMs) seq++;
  else {
    lastMs = ms;
    seq = 0;
  }
  return `aud_${ms.toString(36).padStart(9, '0')}${seq.toString(36).padStart(4, '0')}${randomString(8)}`;
}

/** The row `insertAuditEvent` writes, for a store that writes it in a statement of its own (a whole change in one). */
export function auditEventRow(e: AuditInput) {
  const ms = Date.now();
  return {
    id: auditId(ms),
    orgId: e.orgId,
    at: new Date(ms).toISOString(),
    actorId: e.actorId,
    action: e.action,
    resourceType: e.resourceType,
    resourceId: e.resourceId ?? null,
    details: JSON.stringify(e.details ?? {}),
  };
}

export type AuditRow = ReturnType<typeof auditEventRow>;

export async function insertAuditEvent(db: Db, e: AuditInput): Promise<void> {
  await insertAuditRow(db, auditEventRow(e));
}

/** Writes a row made by `auditEventRow` (inside the transaction of the change it describes). */
export async function insertAuditRow(db: Db, row: AuditRow): Promise<void> {
  await db.insertInto('auditEvents').values(row).execute();
}

/**
 * The same insert as one step of a larger PostgreSQL statement (a data-modifying CTE): the row is
 * written only when `when` holds, so it commits with the change it describes or not at all.
 */
export function auditInsertStep(row: AuditRow, when: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`insert into audit_events (id, org_id, at, actor_id, action, resource_type, resource_id, details)
    select ${row.id}, ${row.orgId}, ${row.at}, ${row.actorId}, ${row.action}, ${row.resourceType}, ${row.resourceId}, ${row.details} where ${when}`;
}

/** Newest first; `cursor` is the id of the last event of the previous page. */
export async function listAuditEvents(db: Db, orgId: string, limit: number, cursor?: { at: string; id: string }): Promise<AuditEvent[]> {
  let q = db.selectFrom('auditEvents').selectAll().where(inOrg(orgId));
  if (cursor) {
    q = q.where((eb) => eb.or([eb('at', '<', cursor.at), eb.and([eb('at', '=', cursor.at), eb('id', '<', cursor.id)])]));
  }
  const rows = await q.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    id: r.id,
    at: r.at,
    actorId: r.actorId,
    action: r.action,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    details: JSON.parse(r.details) as Record<string, unknown>,
  }));
}

export async function findAuditEvent(db: Db, orgId: string, id: string): Promise<{ at: string; id: string } | undefined> {
  return db.selectFrom('auditEvents').select(['at', 'id']).where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}
