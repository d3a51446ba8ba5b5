import { readFile } from 'node:fs/promises';
import https from 'node:https';
import tls from 'node:tls';
import type { Client } from 'acme-client';
import type { AppContext } from '../../context.js';
import { isUniqueViolation } from '../../db/client.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { clockIso } from '../../lib/clock.js';
import * as store from './certificates.store.js';

/**
 * The ACME client of this instance (acme-client 5.4, imported on first use): one account per
 * directory, created once (its key sealed with the secret key) and reused by its URL on every
 * instance. Every request of a client goes through its own HTTPS agent (trusting
 * `BERTH_ACME_CA_FILE` when set, besides the system's roots), so nothing process-wide is changed.
 *
 * acme-client retries a 429 itself, sleeping as long as its Retry-After says (hours, for Let's
 * Encrypt's limits); its requests here opt out of that (Berth retries the whole order with its own
 * backoff), and a rate-limit answer becomes an `AcmeRateLimited` carrying the Retry-After.
 */

export type AcmeModule = typeof import('acme-client');

export async function loadAcme(): Promise<AcmeModule> {
  const mod = (await import('acme-client')) as AcmeModule & { default?: AcmeModule };
  return mod.default && typeof mod.default.Client === 'function' ? mod.default : mod;
}

/** An ACME rate-limit answer (`urn:ietf:params:acme:error:rateLimited` or HTTP 429) and when to come back. */
export class AcmeRateLimited extends Error {
  constructor(
    message: string,
    /** Seconds from Retry-After, when the answer had one. */
    readonly retryAfterSeconds: number | null,
  ) {
    super(message);
    this.name = 'AcmeRateLimited';
  }
}

const RATE_LIMITED = 'urn:ietf:params:acme:error:rateLimited';
/** How long one ACME request may take. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Seconds of a Retry-After header (delta-seconds or an HTTP date), null when absent or unreadable. An HTTP date is the CA's, so it is read against the machine's time, not `ctx.clock`. */
export function retryAfterSeconds(header: unknown, now = Date.now()): number | null {
  const v = Array.isArray(header) ? header[0] : header;
  if (typeof v !== 'string' || v.trim() === '') return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

interface HttpClientLike {
  request(url: string, method: string, opts?: Record<string, unknown>): Promise<{ status: number; headers: Record<string, unknown>; data: unknown }>;
}

/** Routes every request of `client` through `agent`, without acme-client's own 429/5xx retries, and turns rate limits into AcmeRateLimited. */
function adaptClient(client: Client, agent: https.Agent): Client {
  const wrap = (http: HttpClientLike) => {
    const request = http.request.bind(http);
    http.request = async (url, method, opts = {}) => {
      // acme-client's interceptor retries while `retryAttempt` stays under its maximum: start past it.
      let resp: Awaited<ReturnType<HttpClientLike['request']>>;
      try {
        resp = await request(url, method, { ...opts, httpsAgent: agent, timeout: REQUEST_TIMEOUT_MS, retryAttempt: 1_000 });
      } catch (e) {
        // No answer (refused, timed out, TLS not trusted): acme-client's interceptor hides the cause behind a TypeError.
        const err = e as NodeJS.ErrnoException;
        const why = err instanceof TypeError ? 'no answer' : (err.code ?? err.message);
        throw new Error(`the ACME server ${new URL(url).host} could not be reached (${why})`, { cause: e });
      }
      const data = resp.data as { type?: string; detail?: string } | null;
      if (resp.status === 429 || data?.type === RATE_LIMITED) {
        throw new AcmeRateLimited(`the ACME server's rate limit was reached: ${data?.detail ?? `HTTP ${resp.status}`}`, retryAfterSeconds(resp.headers['retry-after']));
      }
      return resp;
    };
  };
  const internal = client as unknown as { http: HttpClientLike };
  wrap(internal.http);
  return client;
}

/** The agent trusting the system's roots and `BERTH_ACME_CA_FILE`. */
export async function agentFor(ctx: AppContext): Promise<https.Agent> {
  const file = ctx.config.https.acmeCaFile;
  if (!file) return new https.Agent({ keepAlive: false });
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read BERTH_ACME_CA_FILE (${file}): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return new https.Agent({ keepAlive: false, ca: [...tls.rootCertificates, pem] });
}

const accountAad = (directoryUrl: string) => `acme-account:${directoryUrl}`;

/** Polling of challenges and orders: Let's Encrypt validates within seconds. */
const BACKOFF = { backoffAttempts: 12, backoffMin: 500, backoffMax: 10_000 };

/**
 * A client logged in to the configured directory's account: the stored one, else a new account
 * (terms agreed, `BERTH_ACME_EMAIL` as contact) stored for every instance. Two instances creating
 * it at once: the second keeps the first's.
 */
export async function accountClient(ctx: AppContext): Promise<Client> {
  const acme = await loadAcme();
  const directoryUrl = ctx.config.https.acmeDirectoryUrl;
  const agent = await agentFor(ctx);
  const existing = await store.findAccount(ctx.db, directoryUrl);
  if (existing) {
    const key = decryptSecret(ctx.keyring, existing.keySealed, accountAad(directoryUrl));
    return adaptClient(new acme.Client({ directoryUrl, accountKey: key, accountUrl: existing.accountUrl, ...BACKOFF }), agent);
  }
  const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
  const client = adaptClient(new acme.Client({ directoryUrl, accountKey: key, ...BACKOFF }), agent);
  const email = ctx.config.https.acmeEmail;
  await client.createAccount({ termsOfServiceAgreed: true, ...(email ? { contact: [`mailto:${email}`] } : {}) });
  try {
    await store.insertAccount(ctx.db, {
      directoryUrl,
      accountUrl: client.getAccountUrl(),
      keySealed: encryptSecret(ctx.keyring, key, accountAad(directoryUrl)),
      email,
      createdAt: clockIso(ctx.clock),
    });
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    return accountClient(ctx);
  }
  return client;
}

/** Forgets the stored account of the configured directory (the ACME server no longer knows it). */
export async function forgetAccount(ctx: AppContext): Promise<void> {
  await store.deleteAccount(ctx.db, ctx.config.https.acmeDirectoryUrl);
}
