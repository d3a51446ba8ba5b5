import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type * as X509 from '@peculiar/x509';
import type { AppContext } from '../../context.js';
import { clockIso } from '../../lib/clock.js';
import { agentFor, retryAfterSeconds } from './acme.js';

/**
 * @peculiar/x509 (with its ASN.1 schema and reflect-metadata) is about 5 MB of heap and 15 MB of
 * resident memory: required only when a certificate's ARI identifier is first needed.
 */
const requireCjs = createRequire(import.meta.url);

/**
 * When an issued certificate is renewed (contract section 14 as amended, issue 32 point 8).
 *
 * - **ACME Renewal Information** (RFC 9773) when the CA's directory has `renewalInfo`: right after
 *   issuance and again whenever its `Retry-After` has passed, `GET <renewalInfo>/<certificate id>`
 *   answers a `suggestedWindow { start, end }`; the renewal time is a uniform random time inside it
 *   (§4.2; a window in the past renews at once). A time picked earlier is kept while it still lies
 *   inside the window the CA answers (re-drawing on every poll would pull renewals early); a moved
 *   window draws again. `Retry-After` is clamped to one minute .. one day, six hours without one; an
 *   error asks again in an hour and keeps the time it had (two thirds at first).
 * - **Without ARI**, two thirds of the certificate's lifetime (notBefore -> notAfter): a 90-day
 *   certificate 30 days before it expires, a 6-day one two days before.
 */

const MINUTE = 60_000;
const HOUR = 3600_000;
/** Retry-After's bounds and its default (RFC 9773 §4.3.2 suggests clamping; Let's Encrypt answers six hours). */
const POLL_MIN_MS = MINUTE;
const POLL_MAX_MS = 24 * HOUR;
const POLL_DEFAULT_MS = 6 * HOUR;
/** How soon renewal information is asked again after an error (no answer, 5xx, an unreadable body). */
const POLL_AFTER_ERROR_MS = HOUR;
/** How long the directory's `renewalInfo` (or its absence) is trusted. */
const DIRECTORY_TTL_MS = HOUR;
const REQUEST_TIMEOUT_MS = 15_000;
const MAX_BODY = 64 * 1024;

const b64url = (bytes: Buffer) => bytes.toString('base64url');

/** The DER content octets of a non-negative INTEGER given in hex (`serialNumber`): minimal, with a leading 00 when the top bit is set. */
export function serialDerBytes(hex: string): Buffer {
  let h = hex.replace(/[^0-9a-f]/gi, '').replace(/^(00)+(?=[0-9a-f]{2})/i, '');
  if (h.length % 2 === 1) h = `0${h}`;
  const bytes = Buffer.from(h || '00', 'hex');
  return bytes[0]! >= 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes;
}

/**
 * The ARI certificate identifier (RFC 9773 §4.1): base64url of the leaf's Authority Key Identifier
 * keyIdentifier, ".", base64url of its serial number's DER content octets (no padding). Throws when
 * the leaf has no keyIdentifier (every publicly trusted certificate has one).
 */
export function ariCertificateId(chainPem: string): string {
  const leaf = new X509Certificate(chainPem);
  const { AuthorityKeyIdentifierExtension, X509Certificate: PeculiarCertificate } = requireCjs('@peculiar/x509') as typeof X509;
  const aki = new PeculiarCertificate(leaf.raw).getExtension(AuthorityKeyIdentifierExtension);
  if (!aki?.keyId) throw new Error('the certificate has no authority key identifier');
  return `${b64url(Buffer.from(aki.keyId, 'hex'))}.${b64url(serialDerBytes(leaf.serialNumber))}`;
}

/** Two thirds of the way from notBefore to notAfter. */
export function twoThirdsOfLifetime(chainPem: string): Date {
  const leaf = new X509Certificate(chainPem);
  const from = Date.parse(leaf.validFrom);
  const to = Date.parse(leaf.validTo);
  return new Date(from + Math.floor(((to - from) * 2) / 3));
}

export interface RenewalWindow {
  start: Date;
  end: Date;
}

/** A uniform random time inside the window (RFC 9773 §4.2). */
export function pickInWindow(window: RenewalWindow, random: () => number = Math.random): Date {
  const span = window.end.getTime() - window.start.getTime();
  return new Date(window.start.getTime() + Math.floor(random() * span));
}

/** Retry-After in ms, clamped to one minute .. one day; six hours when absent or unreadable. */
export function pollDelayMs(retryAfter: unknown): number {
  const seconds = retryAfterSeconds(retryAfter);
  if (seconds === null) return POLL_DEFAULT_MS;
  return Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, seconds * 1000));
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A GET through the ACME agent (trusting BERTH_ACME_CA_FILE), bounded in time and size. */
async function get(ctx: AppContext, url: string): Promise<Answer> {
  const agent = await agentFor(ctx);
  const target = new URL(url);
  const client = target.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = client.get(target, { ...(client === https ? { agent } : {}), timeout: REQUEST_TIMEOUT_MS, headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy(new Error('the answer is too large'));
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
  });
}

/** The directory's `renewalInfo` URL, or null when the CA offers no ARI. Cached for an hour per directory (`ctx.state.certificates`). */
export async function renewalInfoUrl(ctx: AppContext): Promise<string | null> {
  const directoryUrl = ctx.config.https.acmeDirectoryUrl;
  const { directories } = ctx.state.certificates;
  const cached = directories.get(directoryUrl);
  if (cached && ctx.clock.now() - cached.at < DIRECTORY_TTL_MS) return cached.renewalInfo;
  const answer = await get(ctx, directoryUrl);
  if (answer.status !== 200) throw new Error(`the ACME directory answered HTTP ${answer.status}`);
  const doc = JSON.parse(answer.body) as { renewalInfo?: unknown };
  const renewalInfo = typeof doc.renewalInfo === 'string' && doc.renewalInfo !== '' ? doc.renewalInfo : null;
  directories.set(directoryUrl, { renewalInfo, at: ctx.clock.now() });
  return renewalInfo;
}

/** The CA's suggested window for the certificate and when to ask again. Throws on any error (no answer, not 200, unreadable). */
export async function fetchRenewalInfo(ctx: AppContext, baseUrl: string, chainPem: string): Promise<{ window: RenewalWindow; pollAfterMs: number }> {
  const url = `${baseUrl.replace(/\/+$/, '')}/${ariCertificateId(chainPem)}`;
  const answer = await get(ctx, url);
  if (answer.status !== 200) throw new Error(`the renewal information answered HTTP ${answer.status}`);
  const doc = JSON.parse(answer.body) as { suggestedWindow?: { start?: unknown; end?: unknown } };
  const start = new Date(String(doc.suggestedWindow?.start));
  const end = new Date(String(doc.suggestedWindow?.end));
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || end <= start) throw new Error('the renewal information has no valid suggestedWindow');
  return { window: { start, end }, pollAfterMs: pollDelayMs(answer.headers['retry-after']) };
}

export interface RenewalSchedule {
  /** When to renew (ISO-8601). */
  renewAt: string;
  /** When to ask the CA's renewal information again; null when the CA offers none (or the certificate expires first). */
  renewalInfoAt: string | null;
}

/**
 * The renewal schedule of an issued certificate: ARI's window when the CA offers it, else two thirds
 * of its lifetime. `current` is the renewal time picked before (kept while inside the new window; the
 * fallback on errors).
 */
export async function renewalSchedule(ctx: AppContext, chainPem: string, current: string | null = null): Promise<RenewalSchedule> {
  const fallback = current ?? twoThirdsOfLifetime(chainPem).toISOString();
  const expiresAt = Date.parse(new X509Certificate(chainPem).validTo);
  const pollAt = (ms: number) => (ctx.clock.now() + ms < expiresAt ? clockIso(ctx.clock, ms) : null);
  let baseUrl: string | null;
  try {
    baseUrl = await renewalInfoUrl(ctx);
  } catch (e) {
    ctx.log.warn({ reason: (e as Error).message }, 'the ACME directory could not be read for renewal information; asking again in an hour');
    return { renewAt: fallback, renewalInfoAt: pollAt(POLL_AFTER_ERROR_MS) };
  }
  if (!baseUrl) return { renewAt: twoThirdsOfLifetime(chainPem).toISOString(), renewalInfoAt: null };
  try {
    const { window, pollAfterMs } = await fetchRenewalInfo(ctx, baseUrl, chainPem);
    const keep = current !== null && Date.parse(current) >= window.start.getTime() && Date.parse(current) <= window.end.getTime();
    return { renewAt: keep ? current : pickInWindow(window).toISOString(), renewalInfoAt: pollAt(pollAfterMs) };
  } catch (e) {
    ctx.log.warn({ reason: (e as Error).message }, 'the CA\'s renewal information could not be read; asking again in an hour');
    return { renewAt: fallback, renewalInfoAt: pollAt(POLL_AFTER_ERROR_MS) };
  }
}
