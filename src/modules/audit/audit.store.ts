import type { Db } from '../../db/client.js';
import { randomString } from '../../lib/ids.js';

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

export async function insertAuditEvent(db: Db, e: AuditInput): Promise<void> {
  const ms = Date.now();
  await db
    .insertInto('auditEvents')
    .values({
      id: auditId(ms),
      orgId: e.orgId,
      at: new Date(ms).toISOString(),
      actorId: e.actorId,
      action: e.action,
      resourceType: e.resourceType,
      resourceId: e.resourceId ?? null,
      details: JSON.stringify(e.details ?? {}),
    })
    .execute();
}

/** Newest first; `cursor` is the id of the last event of the previous page. */
export async function listAuditEvents(db: Db, orgId: string, limit: number, cursor?: { at: string; id: string }): Promise<AuditEvent[]> {
  let q = db.selectFrom('auditEvents').selectAll().where('orgId', '=', orgId);
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
  return db.selectFrom('auditEvents').select(['at', 'id']).where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
}
