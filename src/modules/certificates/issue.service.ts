import { X509Certificate } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Authorization, Client } from 'acme-client';
import type { AppContext } from '../../context.js';
import { isUniqueViolation } from '../../db/client.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { projectByDomain } from '../projects/index.js';
import { AcmeRateLimited, accountClient, forgetAccount, loadAcme } from './acme.js';
import * as store from './certificates.store.js';
import type { CertificateRow, InstanceCertificateRow } from './certificates.store.js';
import { dnsProviderFor, freeDomainWildcard } from './dns.js';

/**
 * Issuing a certificate through ACME (contract section 14). The challenge is chosen per authorization:
 * HTTP-01 when the ACME server offers it (the default), else TLS-ALPN-01 (answered by the edge's TLS
 * listener), else DNS-01 through the configured DNS provider; a wildcard name (the free domains'
 * `*.<apps domain>`) can only be validated by DNS-01. What the edge answers (the key authorization,
 * or the TLS-ALPN-01 certificate with its key sealed) is written to `acme_challenges` so that whichever
 * instance's edge Pebble or Let's Encrypt reaches can answer it; a DNS-01 record's provider id is kept
 * there too, so a crashed order's record is removed by the next pass. The new certificate replaces the
 * row's (a renewal keeps serving the old one until then); a failure records why and when to try
 * again, and never touches plain HTTP.
 */

export const keyAad = (domain: string) => `certificate:${domain}`;

/** How long a pending challenge's row lives (the order's own lifetime is longer; the attempt is not). */
const CHALLENGE_TTL_MS = 30 * 60_000;
const MINUTE = 60_000;
const MAX_BACKOFF_MS = 24 * 3600_000;
/** A rate limit without Retry-After waits at least this long. */
const RATE_LIMIT_MIN_MS = 3600_000;
/** How long a new DNS-01 TXT record is given to reach the provider's name servers before the ACME server looks. */
export const DNS_PROPAGATION_MS = 10_000;

export type ChallengeKind = 'http-01' | 'tls-alpn-01' | 'dns-01';

export interface IssueOptions {
  /**
   * Test-only: answer this challenge instead of the default choice (the ACME server must offer it).
   * Berth itself has no setting for it (contract section 14): HTTP-01 first, then TLS-ALPN-01, then DNS-01.
   */
  challenge?: ChallengeKind;
  /** How long a DNS-01 record is given to propagate (default DNS_PROPAGATION_MS). */
  dnsPropagationMs?: number;
}

export const challengeAad = (token: string) => `acme-challenge:${token}`;

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
    ...pendingFields(now),
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
  update(set: Partial<Omit<CertificateRow, 'id' | 'orgId' | 'projectId' | 'domain' | 'createdAt'>>): Promise<unknown>;
}

/**
 * Orders a certificate for `domain` (a domain some project verified) and stores it: status `issued`
 * with the chain, the sealed key, its expiry and issuer; or `failed` with the reason, one more
 * attempt counted and the next attempt's time. A domain no project verified any more has its
 * certificate removed.
 */
export async function issueCertificate(ctx: AppContext, domain: string, opts: IssueOptions = {}): Promise<IssueOutcome> {
  const holder = await projectByDomain(ctx.db, domain);
  if (!holder) return { status: 'skipped', reason: `${domain} is not a verified domain of any project` };
  const row = await ensureRow(ctx, holder.orgId, holder.id, domain);
  return attempt(ctx, { domain, attempts: row.attempts, update: (set) => store.updateCertificate(ctx.db, row.orgId, domain, set) }, opts);
}

/** The instance's certificate row of `domain` (the free-domain wildcard), made `pending` when it has none. */
export async function ensureInstanceRow(ctx: AppContext, domain: string): Promise<InstanceCertificateRow> {
  const existing = await store.findInstanceCertificate(ctx.db, domain);
  if (existing) return existing;
  const now = nowIso();
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
  return attempt(ctx, { domain, attempts: row.attempts, update: (set) => store.updateInstanceCertificate(ctx.db, domain, set) }, opts);
}

/** One order for the target's name and what it leaves on the row. */
async function attempt(ctx: AppContext, target: Target, opts: IssueOptions): Promise<IssueOutcome> {
  const { domain } = target;
  try {
    const { chain, keyPem } = await order(ctx, domain, opts);
    const leaf = new X509Certificate(chain);
    const expiresAt = new Date(leaf.validTo).toISOString();
    await target.update({
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
    const attempts = target.attempts + 1;
    let waitMs = backoffMs(attempts);
    if (e instanceof AcmeRateLimited) waitMs = e.retryAfterSeconds !== null ? e.retryAfterSeconds * 1000 : Math.max(waitMs, RATE_LIMIT_MIN_MS);
    const nextAttemptAt = new Date(Date.now() + waitMs).toISOString();
    const error = `the certificate for ${domain} could not be issued: ${reasonOf(e)}`;
    await target.update({ status: 'failed', error, attempts, nextAttemptAt, updatedAt: nowIso() });
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

/**
 * The challenge answered for one authorization: the test's choice when given; a wildcard's DNS-01;
 * else HTTP-01, TLS-ALPN-01, DNS-01 (with a provider) in that order among those offered.
 */
export function chooseChallenge(ctx: AppContext, authz: Authorization, forced?: ChallengeKind): Authorization['challenges'][number] {
  const offered = authz.challenges.map((c) => c.type);
  const find = (type: string) => authz.challenges.find((c) => c.type === type);
  const none = (wanted: string) => new Error(`the ACME server offered no ${wanted} challenge for ${authz.identifier.value} (offered: ${offered.join(', ') || 'none'})`);
  if (forced) return find(forced) ?? (() => { throw none(forced.toUpperCase()); })();
  const provider = dnsProviderFor(ctx);
  if (authz.wildcard) {
    if (!provider) throw new Error(`a wildcard certificate needs DNS-01, and no DNS provider is configured (BERTH_DNS_PROVIDER)`);
    return find('dns-01') ?? (() => { throw none('DNS-01'); })();
  }
  const kinds: string[] = ['http-01', 'tls-alpn-01', ...(provider ? ['dns-01'] : [])];
  for (const kind of kinds) {
    const c = find(kind);
    if (c) return c;
  }
  throw none(kinds.map((k) => k.toUpperCase()).join(' or '));
}

type Challenge = Authorization['challenges'][number];

/** Publishes what the ACME server will check for `challenge`; answers how to take it back. */
async function publish(ctx: AppContext, client: Client, authz: Authorization, challenge: Challenge, opts: IssueOptions): Promise<() => Promise<void>> {
  const acme = await loadAcme();
  const name = authz.identifier.value;
  const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
  const expiresAt = new Date(Date.now() + CHALLENGE_TTL_MS).toISOString();
  const base = { token: challenge.token, keyAuthorization, domain: name, expiresAt, certPem: null, keySealed: null, recordName: null, recordId: null };
  if (challenge.type === 'http-01') {
    await store.insertChallenge(ctx.db, { ...base, kind: 'http-01' });
    return () => store.deleteChallenge(ctx.db, challenge.token);
  }
  if ((challenge.type as string) === 'tls-alpn-01') {
    // RFC 8737: a self-signed certificate for the name alone, with the critical acmeIdentifier
    // extension holding SHA-256 of the key authorization; the edge serves it to `acme-tls/1` handshakes.
    const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
    const [, cert] = await acme.crypto.createAlpnCertificate(authz, keyAuthorization, keyPem);
    await store.insertChallenge(ctx.db, {
      ...base,
      kind: 'tls-alpn-01',
      certPem: cert.toString('utf8'),
      keySealed: encryptSecret(ctx.keyring, keyPem, challengeAad(challenge.token)),
    });
    return () => store.deleteChallenge(ctx.db, challenge.token);
  }
  // dns-01: `_acme-challenge.<base>` TXT holding the key authorization's digest (what acme-client answers for dns-01).
  const provider = dnsProviderFor(ctx);
  if (!provider) throw new Error('DNS-01 needs a DNS provider (BERTH_DNS_PROVIDER)');
  const recordName = `_acme-challenge.${name}`;
  const record = await provider.createTxt(name, recordName, keyAuthorization);
  await store.insertChallenge(ctx.db, { ...base, kind: 'dns-01', domain: name, recordName, recordId: record.id });
  const wait = opts.dnsPropagationMs ?? DNS_PROPAGATION_MS;
  if (wait > 0) await sleep(wait);
  return async () => {
    try {
      await provider.removeTxt(recordName, record.id);
      await store.deleteChallenge(ctx.db, challenge.token);
    } catch (e) {
      // Left for the next pass (the row keeps the record's id).
      ctx.log.warn({ record: recordName, reason: (e as Error).message }, 'the DNS-01 record could not be removed; the next pass retries');
      await store.expireChallenge(ctx.db, challenge.token, nowIso());
    }
  };
}

/** Where the ACME server looked, for a failed challenge's message. */
function challengePlace(type: string, name: string): string {
  if (type === 'http-01') return `the HTTP-01 challenge at http://${name}/.well-known/acme-challenge/`;
  if (type === 'tls-alpn-01') return `the TLS-ALPN-01 challenge on ${name}:443 (acme-tls/1)`;
  return `the DNS-01 challenge (TXT _acme-challenge.${name})`;
}

/** The order itself: a chosen challenge on every authorization, finalized with a fresh P-256 key. */
async function order(ctx: AppContext, domain: string, opts: IssueOptions): Promise<{ chain: string; keyPem: string }> {
  const acme = await loadAcme();
  const client = await accountClient(ctx);
  const acmeOrder = await client.createOrder({ identifiers: [{ type: 'dns', value: domain }] });
  for (const authz of await client.getAuthorizations(acmeOrder)) {
    if (authz.status === 'valid') continue;
    const challenge = chooseChallenge(ctx, authz, opts.challenge);
    const unpublish = await publish(ctx, client, authz, challenge, opts);
    try {
      await client.completeChallenge(challenge);
      try {
        await client.waitForValidStatus(challenge);
      } catch (e) {
        throw new Error(`${challengePlace(challenge.type, authz.identifier.value)} failed: ${(e as Error).message}`, { cause: e });
      }
    } finally {
      await unpublish();
    }
  }
  const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
  const [, csr] = await acme.crypto.createCsr({ altNames: [domain] }, keyPem);
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(acmeOrder, csr));
  const chain = await client.getCertificate(finalized);
  return { chain, keyPem };
}

/** The unsealed TLS-ALPN-01 pair of a challenge row. */
export function alpnPair(ctx: AppContext, row: { token: string; certPem: string | null; keySealed: string | null }): { cert: string; key: string } | null {
  if (!row.certPem || !row.keySealed) return null;
  return { cert: row.certPem, key: decryptSecret(ctx.keyring, row.keySealed, challengeAad(row.token)) };
}
