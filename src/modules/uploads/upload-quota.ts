/**
 * The org's allowance of disk for uploads not deployed yet (contract section 17): received uploads
 * are counted from the database (`storedBytes`), uploads in flight from this process's count below.
 */
import { AppError } from '../../lib/errors.js';
import { SESSION_TTL_MS } from './upload-layout.js';

/** Seconds until `iso` (at least 1, at most an hour): the Retry-After of a quota refusal. */
export function retryAfter(iso: string | null): number {
  const ms = iso ? Date.parse(iso) - Date.now() : SESSION_TTL_MS;
  return Math.min(3600, Math.max(1, Math.ceil(ms / 1000)));
}

const MiB = 1024 * 1024;
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
 * Bytes on disk of uploads in flight in this process, per org and session (received archive bytes
 * plus extracted file bytes). Process state on purpose: it counts this process's writes to its disk,
 * which no other instance sees; session ids are unique, so servers sharing a process never collide.
 */
const inFlightBytes = new Map<string, Map<string, number>>();

export function inFlightOf(orgId: string, except?: string): number {
  let n = 0;
  for (const [id, b] of inFlightBytes.get(orgId) ?? []) if (id !== except) n += b;
  return n;
}

export function setInFlight(orgId: string, sessionId: string, bytes: number | null): void {
  let m = inFlightBytes.get(orgId);
  if (bytes === null) {
    m?.delete(sessionId);
    if (m && m.size === 0) inFlightBytes.delete(orgId);
    return;
  }
  if (!m) inFlightBytes.set(orgId, (m = new Map()));
  m.set(sessionId, bytes);
}
