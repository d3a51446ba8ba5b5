/**
 * The org's allowance of disk for uploads not deployed yet (contract section 17): received uploads
 * are counted from the database (`storedBytes`); uploads in flight from this process's exact count
 * below, plus what other instances sharing the database say theirs hold (`inFlightBytes`, reported
 * at least every REPORT_EVERY_BYTES or REPORT_EVERY_MS while bytes arrive; a report older than
 * IN_FLIGHT_STALE_MS no longer counts: its instance died or its client stalled).
 */
import type { Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { SESSION_TTL_MS, type Deps } from './upload-layout.js';
import { inFlightElsewhere } from './uploads.store.js';

/** Seconds until `iso` (at least 1, at most an hour): the Retry-After of a quota refusal. */
export function retryAfter(iso: string | null): number {
  const ms = iso ? Date.parse(iso) - Date.now() : SESSION_TTL_MS;
  return Math.min(3600, Math.max(1, Math.ceil(ms / 1000)));
}

const MiB = 1024 * 1024;

export const REPORT_EVERY_BYTES = MiB;
export const REPORT_EVERY_MS = 1000;
export const IN_FLIGHT_STALE_MS = 60_000;

/** The oldest report of another instance's upload in flight that still counts. */
function inFlightSince(now = Date.now()): string {
  return new Date(now - IN_FLIGHT_STALE_MS).toISOString();
}
/**
 * Bytes the org's uploads in flight on other instances hold, as they reported them (`except` one
 * session). Only PostgreSQL is shared by several instances: on SQLite there are none, and no query.
 */
export function othersInFlight(ctx: Pick<Deps, 'dialect' | 'instanceId'>, db: Db, orgId: string, except?: string): Promise<number> {
  return ctx.dialect === 'postgres' ? inFlightElsewhere(db, orgId, ctx.instanceId, inFlightSince(), except) : Promise.resolve(0);
}

const fmtBytes = (n: number) => (n >= 1024 * MiB ? `${(n / (1024 * MiB)).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

/** 429: the org's received, unconsumed uploads hold its whole allowance of disk. */
export function orgFull(cap: number, soonest: string | null): AppError {
  return new AppError(
    'RATE_LIMITED',
    `this organization's uploads that are not deployed yet hold ${fmtBytes(cap)} or more of disk (the limit); deploy them or wait until they expire`,
    { retryAfterSeconds: retryAfter(soonest) },
  );
}

/**
 * Bytes on disk of uploads in flight on each server of this process, per server (its instance id), org
 * and session (received archive bytes plus extracted file bytes). Exact for the server's own writes;
 * the database has them as reported, for the other instances (which never count this map: two test
 * servers in one process are two instances too).
 */
const inFlightBytes = new Map<string, Map<string, number>>();

export function inFlightOf(instanceId: string, orgId: string, except?: string): number {
  let n = 0;
  for (const [id, b] of inFlightBytes.get(`${instanceId}|${orgId}`) ?? []) if (id !== except) n += b;
  return n;
}

export function setInFlight(instanceId: string, orgId: string, sessionId: string, bytes: number | null): void {
  const key = `${instanceId}|${orgId}`;
  let m = inFlightBytes.get(key);
  if (bytes === null) {
    m?.delete(sessionId);
    if (m && m.size === 0) inFlightBytes.delete(key);
    return;
  }
  if (!m) inFlightBytes.set(key, (m = new Map()));
  m.set(sessionId, bytes);
}
