import { X509Certificate } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { isUniqueViolation } from '../../db/client.js';
import { encryptSecret } from '../../lib/crypto.js';
import { clockIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { notifyEvent } from '../notifications/index.js';
import { projectQueries } from '../projects/index.js';
import { AcmeRateLimited, forgetAccount } from './acme.js';
import { ariCertificateId, renewalInfoUrl, renewalSchedule } from './ari.js';
import * as store from './certificates.store.js';
import type { CertificateRow, InstanceCertificateRow } from './certificates.store.js';
import { freeDomainWildcard } from './dns.js';
import { order, type IssueOptions } from './order.js';

export type { ChallengeKind, IssueOptions } from './order.js';

/**
 * Issuing a certificate through ACME (contract section 14): one attempt on a project's certificate row
 * or the instance's own (the order itself, its challenges and their fallback are in `order.ts`). The
 * new certificate replaces the row's (a renewal keeps serving the old one until then) with its
 * renewal time (`ari.ts`: ARI's window when the CA offers it, else two thirds of its lifetime); a
 * failure records why and when to try again, and never touches plain HTTP.
 */

export const keyAad = (domain: string) => `certificate:${domain}`;

const MINUTE = 60_000;
const MAX_BACKOFF_MS = 24 * 3600_000;
/** A rate limit without Retry-After waits at least this long. */
const RATE_LIMIT_MIN_MS = 3600_000;

/** The wait before the attempt after `failures` failed ones: 1 min * 2^(failures-1), at most 24 h. */
export function backoffMs(failures: number): number {
  return Math.min(MINUTE * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
}

/** The issuing CA's name: the issuer's O, else its CN, else the whole issuer. */
export function issuerName(cert: X509Certificate): string {
  const fields = new Map(cert.issuer.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
  return fields.get('O') ?? fields.get('CN') ?? cert.issuer.replace(/\n/g, ', ');
}

/** The certificate row of the domain's verified project, made `pending` when it has none. */
export async function ensureRow(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<CertificateRow> {
  const existing = await store.findCertificate(ctx.db, orgId, domain);
  if (existing && existing.projectId === projectId) return existing;
  if (existing) await store.deleteCertificate(ctx.db, orgId, domain);
  const now = clockIso(ctx.clock);
  const row: CertificateRow = {
    id: newId('crt'),
    orgId,
    projectId,
    domain,
    ...pendingFields(now),
    expiryNoticedFor: null,
  };
  try {
    await store.insertCertificate(ctx.db, row);
  } catch (e) {
    // Another org's leftover row on the name (its domain went away) or a concurrent insert: read what is there.
    if (!isUniqueViolation(e)) throw e;
    const again = await store.findCertificate(ctx.db, orgId, domain);
    if (again) return again;
    throw new Error(`the certificate of ${domain} is still held by another organization's project; it is removed within a minute`);
  }
  return row;
}

/** What a new certificate row (a project's or the instance's) starts with: pending, nothing issued yet. */
function pendingFields(now: string) {
  return { status: 'pending', certPem: null, keySealed: null, issuer: null, expiresAt: null, error: null, attempts: 0, nextAttemptAt: null, renewAt: null, renewalInfoAt: null, createdAt: now, updatedAt: now } as const;
}

export type IssueOutcome = { status: 'issued'; expiresAt: string } | { status: 'failed'; error: string; nextAttemptAt: string } | { status: 'skipped'; reason: string };

/** Where an attempt's outcome is written: a project's certificate row, or the instance's own. */
interface Target {
  domain: string;
  attempts: number;
  /** The certificate held now (a renewal's predecessor), or null. */
  certPem: string | null;
  update(set: Partial<Omit<CertificateRow, 'id' | 'orgId' | 'projectId' | 'domain' | 'createdAt'>>): Promise<unknown>;
}

/**
 * Orders a certificate for `domain` (a domain some project verified) and stores it: status `issued`
 * with the chain, the sealed key, its expiry and issuer; or `failed` with the reason, one more
 * attempt counted and the next attempt's time. A domain no project verified any more has its
 * certificate removed.
 */
export async function issueCertificate(ctx: AppContext, domain: string, opts: IssueOptions = {}): Promise<IssueOutcome> {
  const holder = await projectQueries.projectByDomain(ctx.db, domain);
  if (!holder) return { status: 'skipped', reason: `${domain} is not a verified domain of any project` };
  const row = await ensureRow(ctx, holder.orgId, holder.id, domain);
  const outcome = await attempt(ctx, { domain, attempts: row.attempts, certPem: row.certPem, update: (set) => store.updateCertificate(ctx.db, row.orgId, domain, set) }, opts);
  if (outcome.status === 'failed') await noticeFailure(ctx, row, row.attempts + 1, outcome);
  return outcome;
}

/**
 * `certificate.failed` to the org's notification channels: on the first failed attempt of a series and
 * on every tenth after it (the attempts back off to one a day), not on each retry.
 */
async function noticeFailure(ctx: AppContext, row: CertificateRow, attempts: number, outcome: { error: string; nextAttemptAt: string }): Promise<void> {
  if (attempts !== 1 && attempts % 10 !== 0) return;
  await notifyEvent(ctx, {
    orgId: row.orgId,
    event: 'certificate.failed',
    projectId: row.projectId,
    subject: `The HTTPS certificate for ${row.domain} could not be issued`,
    detail: `${outcome.error} (failed attempts: ${attempts}; next attempt at ${outcome.nextAttemptAt}). ${row.certPem ? 'The current certificate is served until it expires.' : 'The domain is served over plain HTTP meanwhile.'}`,
    url: `http://${row.domain}/`,
  });
}

/** The instance's certificate row of `domain` (the free-domain wildcard), made `pending` when it has none. */
export async function ensureInstanceRow(ctx: AppContext, domain: string): Promise<InstanceCertificateRow> {
  const existing = await store.findInstanceCertificate(ctx.db, domain);
  if (existing) return existing;
  const now = clockIso(ctx.clock);
  const row: InstanceCertificateRow = {
    domain,
    ...pendingFields(now),
  };
  try {
    await store.insertInstanceCertificate(ctx.db, row);
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    return (await store.findInstanceCertificate(ctx.db, domain))!;
  }
  return row;
}

/**
 * Orders the free domains' wildcard certificate (`*.<BERTH_APPS_DOMAIN>`, DNS-01 through the
 * configured provider) and stores it in the instance's own row, like a domain's. Skipped when the
 * instance keeps none (no DNS provider, the wildcard files given, no HTTPS port).
 */
export async function issueFreeDomainWildcard(ctx: AppContext, opts: IssueOptions = {}): Promise<IssueOutcome> {
  const domain = freeDomainWildcard(ctx);
  if (!domain) return { status: 'skipped', reason: 'no free-domain wildcard certificate is kept (it needs BERTH_HTTPS_PORT, BERTH_DNS_PROVIDER and no BERTH_WILDCARD_CERT_FILE)' };
  const row = await ensureInstanceRow(ctx, domain);
  return attempt(ctx, { domain, attempts: row.attempts, certPem: row.certPem, update: (set) => store.updateInstanceCertificate(ctx.db, domain, set) }, opts);
}

/** One order for the target's name and what it leaves on the row. */
async function attempt(ctx: AppContext, target: Target, opts: IssueOptions): Promise<IssueOutcome> {
  const { domain } = target;
  try {
    const { chain, keyPem, challenge } = await order(ctx, domain, opts, await replacedId(ctx, target.certPem));
    const leaf = new X509Certificate(chain);
    const expiresAt = new Date(leaf.validTo).toISOString();
    const { renewAt, renewalInfoAt } = await renewalSchedule(ctx, chain);
    await target.update({
      status: 'issued',
      certPem: chain,
      keySealed: encryptSecret(ctx.keyring, keyPem, keyAad(domain)),
      issuer: issuerName(leaf),
      expiresAt,
      error: null,
      attempts: 0,
      nextAttemptAt: null,
      renewAt,
      renewalInfoAt,
      updatedAt: clockIso(ctx.clock),
    });
    ctx.ports.certificates?.invalidate?.(domain);
    ctx.log.info({ domain, expiresAt, challenge, renewAt }, 'certificate issued');
    return { status: 'issued', expiresAt };
  } catch (e) {
    const attempts = target.attempts + 1;
    let waitMs = backoffMs(attempts);
    if (e instanceof AcmeRateLimited) waitMs = e.retryAfterSeconds !== null ? e.retryAfterSeconds * 1000 : Math.max(waitMs, RATE_LIMIT_MIN_MS);
    const nextAttemptAt = clockIso(ctx.clock, waitMs);
    const error = `the certificate for ${domain} could not be issued: ${reasonOf(e)}`;
    await target.update({ status: 'failed', error, attempts, nextAttemptAt, updatedAt: clockIso(ctx.clock) });
    if (/account.*(does not exist|not found)|accountDoesNotExist/i.test((e as Error).message ?? '')) await forgetAccount(ctx);
    ctx.log.warn({ domain, attempts, nextAttemptAt, reason: error }, 'certificate not issued');
    return { status: 'failed', error, nextAttemptAt };
  }
}

/**
 * The ARI identifier of the certificate a renewal replaces (RFC 9773 §5), when there is one that has
 * not expired and the CA offers ARI; null otherwise (also when it cannot be known: the order goes on without).
 */
async function replacedId(ctx: AppContext, certPem: string | null): Promise<string | null> {
  if (!certPem) return null;
  try {
    if (Date.parse(new X509Certificate(certPem).validTo) <= ctx.clock.now()) return null;
    return (await renewalInfoUrl(ctx)) ? ariCertificateId(certPem) : null;
  } catch {
    return null;
  }
}

/** An error's text for the row: acme-client's messages are the ACME problem's detail (no secrets in them). */
function reasonOf(e: unknown): string {
  const message = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').trim() || 'unknown error';
  return message.length > 500 ? `${message.slice(0, 500)}...` : message;
}
