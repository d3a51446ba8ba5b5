import { X509Certificate } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { isUniqueViolation } from '../../db/client.js';
import { encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { projectByDomain } from '../projects/index.js';
import { AcmeRateLimited, accountClient, forgetAccount, loadAcme } from './acme.js';
import * as store from './certificates.store.js';
import type { CertificateRow } from './certificates.store.js';

/**
 * Issuing a domain's certificate through ACME HTTP-01 (contract section 14). The challenge's key
 * authorization is written to `acme_challenges` so that whichever instance's edge Pebble or Let's
 * Encrypt reaches can answer it. The new certificate replaces the row's (a renewal keeps serving the
 * old one until then); a failure records why and when to try again, and never touches plain HTTP.
 */

export const keyAad = (domain: string) => `certificate:${domain}`;

/** How long a pending challenge's row lives (the order's own lifetime is longer; the attempt is not). */
const CHALLENGE_TTL_MS = 30 * 60_000;
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
  const now = nowIso();
  const row: CertificateRow = {
    id: newId('crt'),
    orgId,
    projectId,
    domain,
    status: 'pending',
    certPem: null,
    keySealed: null,
    issuer: null,
    expiresAt: null,
    error: null,
    attempts: 0,
    nextAttemptAt: null,
    createdAt: now,
    updatedAt: now,
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

export type IssueOutcome = { status: 'issued'; expiresAt: string } | { status: 'failed'; error: string; nextAttemptAt: string } | { status: 'skipped'; reason: string };

/**
 * Orders a certificate for `domain` (a domain some project verified) and stores it: status `issued`
 * with the chain, the sealed key, its expiry and issuer; or `failed` with the reason, one more
 * attempt counted and the next attempt's time. A domain no project verified any more has its
 * certificate removed.
 */
export async function issueCertificate(ctx: AppContext, domain: string): Promise<IssueOutcome> {
  const holder = await projectByDomain(ctx.db, domain);
  if (!holder) return { status: 'skipped', reason: `${domain} is not a verified domain of any project` };
  const row = await ensureRow(ctx, holder.orgId, holder.id, domain);
  try {
    const { chain, keyPem } = await order(ctx, domain);
    const leaf = new X509Certificate(chain);
    const expiresAt = new Date(leaf.validTo).toISOString();
    await store.updateCertificate(ctx.db, row.orgId, domain, {
      status: 'issued',
      certPem: chain,
      keySealed: encryptSecret(ctx.keyring, keyPem, keyAad(domain)),
      issuer: issuerName(leaf),
      expiresAt,
      error: null,
      attempts: 0,
      nextAttemptAt: null,
      updatedAt: nowIso(),
    });
    ctx.ports.certificates?.invalidate?.(domain);
    ctx.log.info({ domain, expiresAt }, 'certificate issued');
    return { status: 'issued', expiresAt };
  } catch (e) {
    const attempts = row.attempts + 1;
    let waitMs = backoffMs(attempts);
    if (e instanceof AcmeRateLimited) waitMs = e.retryAfterSeconds !== null ? e.retryAfterSeconds * 1000 : Math.max(waitMs, RATE_LIMIT_MIN_MS);
    const nextAttemptAt = new Date(Date.now() + waitMs).toISOString();
    const error = `the certificate for ${domain} could not be issued: ${reasonOf(e)}`;
    await store.updateCertificate(ctx.db, row.orgId, domain, { status: 'failed', error, attempts, nextAttemptAt, updatedAt: nowIso() });
    if (/account.*(does not exist|not found)|accountDoesNotExist/i.test((e as Error).message ?? '')) await forgetAccount(ctx);
    ctx.log.warn({ domain, attempts, nextAttemptAt, reason: error }, 'certificate not issued');
    return { status: 'failed', error, nextAttemptAt };
  }
}

/** An error's text for the row: acme-client's messages are the ACME problem's detail (no secrets in them). */
function reasonOf(e: unknown): string {
  const message = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').trim() || 'unknown error';
  return message.length > 500 ? `${message.slice(0, 500)}...` : message;
}

/** The order itself: HTTP-01 on every authorization, finalized with a fresh P-256 key. */
async function order(ctx: AppContext, domain: string): Promise<{ chain: string; keyPem: string }> {
  const acme = await loadAcme();
  const client = await accountClient(ctx);
  const acmeOrder = await client.createOrder({ identifiers: [{ type: 'dns', value: domain }] });
  for (const authz of await client.getAuthorizations(acmeOrder)) {
    if (authz.status === 'valid') continue;
    const challenge = authz.challenges.find((c) => c.type === 'http-01');
    if (!challenge) throw new Error(`the ACME server offered no HTTP-01 challenge (offered: ${authz.challenges.map((c) => c.type).join(', ') || 'none'})`);
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    await store.insertChallenge(ctx.db, { token: challenge.token, keyAuthorization, domain, expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS).toISOString() });
    try {
      await client.completeChallenge(challenge);
      try {
        await client.waitForValidStatus(challenge);
      } catch (e) {
        throw new Error(`the HTTP-01 challenge at http://${domain}/.well-known/acme-challenge/ failed: ${(e as Error).message}`, { cause: e });
      }
    } finally {
      await store.deleteChallenge(ctx.db, challenge.token);
    }
  }
  const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
  const [, csr] = await acme.crypto.createCsr({ altNames: [domain] }, keyPem);
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(acmeOrder, csr));
  const chain = await client.getCertificate(finalized);
  return { chain, keyPem };
}
