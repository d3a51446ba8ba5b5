import { setTimeout as sleep } from 'node:timers/promises';
import type { Authorization, Client } from 'acme-client';
import type { AppContext } from '../../context.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { clockIso } from '../../lib/clock.js';
import { AcmeRateLimited, accountClient, loadAcme } from './acme.js';
import * as store from './certificates.store.js';
import { dnsProviderFor } from './dns.js';

/**
 * One ACME order for a name (contract section 14): a challenge chosen per authorization, published
 * where the ACME server looks (the key authorization or the TLS-ALPN-01 certificate in
 * `acme_challenges`, so whichever instance's edge the CA reaches answers it; a DNS-01 record through
 * the provider), validated, and the order finalized with a fresh P-256 key.
 *
 * A failed challenge invalidates its authorization and so the order: when HTTP-01 fails (the CA could
 * not reach the edge's HTTP port, or got a wrong answer), a new order tries the next kind the CA
 * offers, TLS-ALPN-01 on the HTTPS port (then DNS-01 when a DNS provider is configured), before the
 * attempt counts as failed; the reasons of every kind tried make up its error. A renewal of a
 * certificate the CA gave ARI for names it in `replaces` (RFC 9773 §5); a CA that refuses that gets
 * the order again without it.
 */

/** How long a pending challenge's row lives (the order's own lifetime is longer; the attempt is not). */
const CHALLENGE_TTL_MS = 30 * 60_000;
/** How long a new DNS-01 TXT record is given to reach the provider's name servers before the ACME server looks. */
export const DNS_PROPAGATION_MS = 10_000;

export type ChallengeKind = 'http-01' | 'tls-alpn-01' | 'dns-01';

export interface IssueOptions {
  /**
   * Test-only: answer this challenge instead of the default choice (the ACME server must offer it), with
   * no fallback. Berth itself has no setting for it (contract section 14): HTTP-01 first, then
   * TLS-ALPN-01, then DNS-01.
   */
  challenge?: ChallengeKind;
  /** How long a DNS-01 record is given to propagate (default DNS_PROPAGATION_MS). */
  dnsPropagationMs?: number;
}

export const challengeAad = (token: string) => `acme-challenge:${token}`;

/** The kinds tried for a name that is not a wildcard, in order. */
function fallbackKinds(ctx: AppContext): ChallengeKind[] {
  return ['http-01', 'tls-alpn-01', ...(dnsProviderFor(ctx) ? (['dns-01'] as const) : [])];
}

/** A challenge the ACME server checked and found invalid (the order is spent). */
export class ChallengeFailed extends Error {
  constructor(
    message: string,
    readonly kind: string,
    /** The kinds the authorization offered. */
    readonly offered: string[],
    readonly wildcard: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ChallengeFailed';
  }
}

/**
 * The challenge answered for one authorization: the test's choice when given; a wildcard's DNS-01;
 * else HTTP-01, TLS-ALPN-01, DNS-01 (with a provider) in that order among those offered, less the
 * kinds in `skip` (those that already failed for this name in this attempt).
 */
export function chooseChallenge(ctx: AppContext, authz: Authorization, forced?: ChallengeKind, skip: readonly string[] = []): Authorization['challenges'][number] {
  const offered = authz.challenges.map((c) => c.type);
  const find = (type: string) => authz.challenges.find((c) => c.type === type);
  const none = (wanted: string) => new Error(`the ACME server offered no ${wanted} challenge for ${authz.identifier.value} (offered: ${offered.join(', ') || 'none'})`);
  if (forced) return find(forced) ?? (() => { throw none(forced.toUpperCase()); })();
  const provider = dnsProviderFor(ctx);
  if (authz.wildcard) {
    if (!provider) throw new Error(`a wildcard certificate needs DNS-01, and no DNS provider is configured (BERTH_DNS_PROVIDER)`);
    return find('dns-01') ?? (() => { throw none('DNS-01'); })();
  }
  const kinds = fallbackKinds(ctx).filter((k) => !skip.includes(k));
  for (const kind of kinds) {
    const c = find(kind);
    if (c) return c;
  }
  throw none(kinds.map((k) => k.toUpperCase()).join(' or ') || 'other');
}

type Challenge = Authorization['challenges'][number];

/** Publishes what the ACME server will check for `challenge`; answers how to take it back. */
async function publish(ctx: AppContext, client: Client, authz: Authorization, challenge: Challenge, opts: IssueOptions): Promise<() => Promise<void>> {
  const acme = await loadAcme();
  const name = authz.identifier.value;
  const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
  const expiresAt = clockIso(ctx.clock, CHALLENGE_TTL_MS);
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
      await store.expireChallenge(ctx.db, challenge.token, clockIso(ctx.clock));
    }
  };
}

/** Where the ACME server looked, for a failed challenge's message. */
function challengePlace(type: string, name: string): string {
  if (type === 'http-01') return `the HTTP-01 challenge at http://${name}/.well-known/acme-challenge/`;
  if (type === 'tls-alpn-01') return `the TLS-ALPN-01 challenge on ${name}:443 (acme-tls/1)`;
  return `the DNS-01 challenge (TXT _acme-challenge.${name})`;
}

/** What an order brings back: the chain, its key, and the challenge kind that validated the name. */
export interface OrderResult {
  chain: string;
  keyPem: string;
  challenge: string | null;
}

/**
 * Orders a certificate for `domain`, falling back from a failed challenge to the next kind offered
 * (a new order each time, see the file's comment). `replaces`: the ARI identifier of the certificate
 * this one renews, or null.
 */
export async function order(ctx: AppContext, domain: string, opts: IssueOptions, replaces: string | null): Promise<OrderResult> {
  const client = await accountClient(ctx);
  const skip: string[] = [];
  const reasons: string[] = [];
  for (;;) {
    try {
      return await orderOnce(ctx, client, domain, opts, replaces, skip);
    } catch (e) {
      if (e instanceof ChallengeFailed && !opts.challenge && !e.wildcard) {
        const left = fallbackKinds(ctx).filter((k) => k !== e.kind && !skip.includes(k) && e.offered.includes(k));
        if (left.length > 0) {
          ctx.log.info({ domain, failed: e.kind, next: left[0], reason: e.message }, 'ACME challenge failed; trying the next kind in a new order');
          reasons.push(e.message);
          skip.push(e.kind);
          continue;
        }
      }
      if (reasons.length === 0 || e instanceof AcmeRateLimited) throw e;
      throw new Error([...reasons, (e as Error).message].join('; then '), { cause: e });
    }
  }
}

/** Creates the order, with `replaces` when given; a CA that refuses the order with it gets it again without. */
async function createOrder(ctx: AppContext, client: Client, domain: string, replaces: string | null) {
  const identifiers = [{ type: 'dns', value: domain }];
  if (replaces === null) return client.createOrder({ identifiers });
  try {
    // acme-client passes the payload through; its type does not know RFC 9773's field.
    return await client.createOrder({ identifiers, replaces } as Parameters<Client['createOrder']>[0]);
  } catch (e) {
    if (e instanceof AcmeRateLimited) throw e;
    ctx.log.warn({ domain, replaces, reason: (e as Error).message }, 'the ACME server refused the order naming the certificate it replaces; ordering without it');
    return client.createOrder({ identifiers });
  }
}

/** One order: a chosen challenge (not one of `skip`) on every authorization, finalized with a fresh P-256 key. */
async function orderOnce(ctx: AppContext, client: Client, domain: string, opts: IssueOptions, replaces: string | null, skip: readonly string[]): Promise<OrderResult> {
  const acme = await loadAcme();
  const acmeOrder = await createOrder(ctx, client, domain, replaces);
  let used: string | null = null;
  for (const authz of await client.getAuthorizations(acmeOrder)) {
    if (authz.status === 'valid') continue;
    const challenge = chooseChallenge(ctx, authz, opts.challenge, skip);
    const unpublish = await publish(ctx, client, authz, challenge, opts);
    try {
      await client.completeChallenge(challenge);
      try {
        await client.waitForValidStatus(challenge);
      } catch (e) {
        const message = `${challengePlace(challenge.type, authz.identifier.value)} failed: ${(e as Error).message}`;
        throw new ChallengeFailed(message, challenge.type, authz.challenges.map((c) => c.type), Boolean(authz.wildcard), { cause: e });
      }
      used = challenge.type;
    } finally {
      await unpublish();
    }
  }
  const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
  const [, csr] = await acme.crypto.createCsr({ altNames: [domain] }, keyPem);
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(acmeOrder, csr));
  const chain = await client.getCertificate(finalized);
  return { chain, keyPem, challenge: used };
}

/** The unsealed TLS-ALPN-01 pair of a challenge row. */
export function alpnPair(ctx: AppContext, row: { token: string; certPem: string | null; keySealed: string | null }): { cert: string; key: string } | null {
  if (!row.certPem || !row.keySealed) return null;
  return { cert: row.certPem, key: decryptSecret(ctx.keyring, row.keySealed, challengeAad(row.token)) };
}
