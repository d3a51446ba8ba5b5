/**
 * The org's allowance of disk for uploads not deployed yet (contract section 17): received uploads
 * are counted from the database (`storedBytes`); uploads in flight from this server's exact count
 * below, plus what other instances sharing the database say theirs hold (`inFlightBytes`, reported
 * at least every REPORT_EVERY_BYTES or REPORT_EVERY_MS while bytes arrive; a report older than
 * IN_FLIGHT_STALE_MS no longer counts: its instance died or its client stalled).
 */
import type { Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { SESSION_TTL_MS, type Deps } from './upload-layout.js';
import { inFlightElsewhere } from './uploads.store.js';

/** Seconds from `now` until `iso` (at least 1, at most an hour): the Retry-After of a quota refusal. */
export function retryAfter(iso: string | null, now: number): number {
  const ms = iso ? Date.parse(iso) - now : SESSION_TTL_MS;
  return Math.min(3600, Math.max(1, Math.ceil(ms / 1000)));
}

const MiB = 1024 * 1024;

export const REPORT_EVERY_BYTES = MiB;
export const REPORT_EVERY_MS = 1000;
export const IN_FLIGHT_STALE_MS = 60_000;

/** The oldest report of another instance's upload in flight that still counts. */
function inFlightSince(now: number): string {
  return new Date(now - IN_FLIGHT_STALE_MS).toISOString();
}
/**
 * Bytes the org's uploads in flight on other instances hold, as they reported them (`except` one
 * session). Only PostgreSQL is shared by several instances: on SQLite there are none, and no query.
 */
export function othersInFlight(ctx: Pick<Deps, 'dialect' | 'instanceId' | 'clock'>, db: Db, orgId: string, except?: string): Promise<number> {
  return ctx.dialect === 'postgres' ? inFlightElsewhere(db, orgId, ctx.instanceId, inFlightSince(ctx.clock.now()), except) : Promise.resolve(0);
}

const fmtBytes = (n: number) => (n >= 1024 * MiB ? `${(n / (1024 * MiB)).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

/** 429: the org's received, unconsumed uploads hold its whole allowance of disk (the soonest expires `soonest`; it is `now`). */
export function orgFull(cap: number, soonest: string | null, now: number): AppError {
  return new AppError(
    'RATE_LIMITED',
    `this organization's uploads that are not deployed yet hold ${fmtBytes(cap)} or more of disk (the limit); deploy them or wait until they expire`,
    { retryAfterSeconds: retryAfter(soonest, now) },
  );
}

/**
 * Bytes on disk of this server's uploads in flight, per org and session (received archive bytes plus
 * extracted file bytes): exact for the server's own writes. The database has them as reported, for the
 * other instances (which never count these: two test servers in one process are two instances too).
 */
export class InFlightUploads {
  readonly #byOrg = new Map<string, Map<string, number>>();

  /** What the org's uploads in flight here hold, but `except` one session. */
  of(orgId: string, except?: string): number {
    let n = 0;
    for (const [id, b] of this.#byOrg.get(orgId) ?? []) if (id !== except) n += b;
    return n;
  }

  /** Sets what one upload holds now (null: it ended). */
  set(orgId: string, sessionId: string, bytes: number | null): void {
    let m = this.#byOrg.get(orgId);
    if (bytes === null) {
      m?.delete(sessionId);
      if (m && m.size === 0) this.#byOrg.delete(orgId);
      return;
    }
    if (!m) this.#byOrg.set(orgId, (m = new Map()));
    m.set(sessionId, bytes);
  }
}

/** The uploads area's per-server state (`ctx.state.uploads`, made by its module). */
export interface UploadsState {
  inFlight: InFlightUploads;
}

declare module '../../state.js' {
  interface AreaState {
    uploads: UploadsState;
  }
}
