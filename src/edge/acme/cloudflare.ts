/**
 * The Cloudflare DNS-01 provider (`BERTH_DNS_PROVIDER=cloudflare`, `BERTH_CLOUDFLARE_API_TOKEN`): API v4
 * with a bearer API token (scopes Zone:Read and DNS:Edit on the zones), its documented envelope
 * `{ success, errors: [{ code, message }], result }`, and three calls:
 *
 * - `GET /client/v4/zones?name=<zone>`: the zone of a name, found by walking up its labels;
 * - `POST /client/v4/zones/:zone_id/dns_records` `{ type: 'TXT', name, content, ttl: 60 }`
 *   (an identical record already there, code 81058, is looked up with
 *   `GET /client/v4/zones/:zone_id/dns_records?type=TXT&name=&content=` and reused);
 * - `DELETE /client/v4/zones/:zone_id/dns_records/:id` (a record already gone is fine).
 *
 * The id `createTxt` answers is `<zone_id>/<record_id>`. Every call has a timeout; errors are
 * `DnsProviderError`s in Berth's words and never hold the token.
 */
import { baseName, DnsProviderError, zoneCandidates, type DnsProvider, type DnsProviderOperation } from './dns-providers.js';

export const CLOUDFLARE_API_BASE = 'https://api.cloudflare.com';
const DEFAULT_TIMEOUT_MS = 15_000;
/** Cloudflare's codes: "An identical record already exists", "Record does not exist". */
const CODE_IDENTICAL_RECORD = 81058;
const CODE_RECORD_NOT_FOUND = 81044;

export interface CloudflareOptions {
  apiToken: string;
  /** The API's origin (tests point it at a fake); `/client/v4` is appended. Default Cloudflare's. */
  baseUrl?: string;
  /** Per request, including reading the answer. Default 15 s. */
  timeoutMs?: number;
}

interface Envelope<T> {
  success: boolean;
  errors?: Array<{ code: number; message: string }>;
  result: T;
}

interface CloudflareZone {
  id: string;
  name: string;
}

interface CloudflareRecord {
  id: string;
  type: string;
  name: string;
  content: string;
}

export class CloudflareDnsProvider implements DnsProvider {
  readonly name = 'cloudflare';
  readonly #token: string;
  readonly #api: string;
  readonly #timeoutMs: number;
  /** name -> its zone, for names already looked up (zones rarely move). */
  readonly #zoneOf = new Map<string, CloudflareZone>();

  constructor(opts: CloudflareOptions) {
    if (!opts.apiToken || !opts.apiToken.trim()) throw new Error('the Cloudflare DNS provider needs an API token (BERTH_CLOUDFLARE_API_TOKEN)');
    this.#token = opts.apiToken.trim();
    this.#api = `${(opts.baseUrl ?? CLOUDFLARE_API_BASE).replace(/\/+$/, '')}/client/v4`;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The zone (id and name) holding `name`: the longest of its parent names Cloudflare hosts. */
  async findZone(name: string): Promise<CloudflareZone> {
    const known = this.#zoneOf.get(baseName(name));
    if (known) return known;
    for (const candidate of zoneCandidates(name)) {
      const zones = await this.#call<CloudflareZone[]>('find-zone', name, 'GET', `/zones?name=${encodeURIComponent(candidate)}`);
      const zone = Array.isArray(zones) ? zones.find((z) => z.name?.toLowerCase() === candidate) : undefined;
      if (zone) {
        const found = { id: zone.id, name: candidate };
        if (this.#zoneOf.size >= 10_000) this.#zoneOf.clear();
        this.#zoneOf.set(baseName(name), found);
        return found;
      }
    }
    throw new DnsProviderError(
      this.name,
      'find-zone',
      `Cloudflare has no zone for ${baseName(name)} or any of its parent domains that the API token can see (it needs Zone:Read and DNS:Edit on the zone)`,
      { retryable: false },
    );
  }

  async createTxt(zoneHint: string, fqdn: string, value: string): Promise<{ id: string }> {
    const name = baseName(fqdn);
    const zone = await this.findZone(zoneHint);
    if (name !== zone.name && !name.endsWith(`.${zone.name}`)) {
      throw new DnsProviderError(this.name, 'create-txt', `the TXT record ${name} is not inside the Cloudflare zone ${zone.name} found for ${baseName(zoneHint)}`, {
        retryable: false,
      });
    }
    const body = { type: 'TXT', name, content: value, ttl: 60 };
    try {
      const record = await this.#call<CloudflareRecord>('create-txt', name, 'POST', `/zones/${encodeURIComponent(zone.id)}/dns_records`, body);
      return { id: `${zone.id}/${record.id}` };
    } catch (e) {
      if (!codesOf(e).includes(CODE_IDENTICAL_RECORD)) throw e;
      const query = `type=TXT&name=${encodeURIComponent(name)}&content=${encodeURIComponent(value)}`;
      const found = await this.#call<CloudflareRecord[]>('create-txt', name, 'GET', `/zones/${encodeURIComponent(zone.id)}/dns_records?${query}`);
      const same = Array.isArray(found) ? found.find((r) => r.type === 'TXT' && r.content === value) : undefined;
      if (!same) throw e;
      return { id: `${zone.id}/${same.id}` };
    }
  }

  async removeTxt(fqdn: string, id: string): Promise<void> {
    const name = baseName(fqdn);
    const [zoneId, recordId, ...rest] = id.split('/');
    if (!zoneId || !recordId || rest.length) {
      throw new DnsProviderError(this.name, 'remove-txt', `cannot remove the TXT record ${name}: "${id}" is not an id the Cloudflare provider gave out`, { retryable: false });
    }
    try {
      await this.#call<unknown>('remove-txt', name, 'DELETE', `/zones/${encodeURIComponent(zoneId)}/dns_records/${encodeURIComponent(recordId)}`);
    } catch (e) {
      if (codesOf(e).includes(CODE_RECORD_NOT_FOUND) || (e instanceof DnsProviderError && e.status === 404)) return;
      throw e;
    }
  }

  /**
   * One API call: answers `result` of a successful envelope; a failed one throws a DnsProviderError
   * (Cloudflare's error codes kept aside in `callCodes`, for the callers that expect some).
   */
  async #call<T>(operation: DnsProviderOperation, subject: string, method: string, path: string, body?: unknown): Promise<T> {
    const what = describe(operation, subject);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.#api}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      text = await response.text();
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
      const reason = timedOut ? `no answer within ${this.#timeoutMs >= 1000 ? `${Math.round(this.#timeoutMs / 1000)} s` : `${this.#timeoutMs} ms`}` : (err.cause?.code ?? err.message);
      throw new DnsProviderError(this.name, operation, this.#redact(`could not reach Cloudflare while ${what}: ${reason}`), { retryable: true });
    }
    let envelope: Envelope<T> | undefined;
    try {
      envelope = JSON.parse(text) as Envelope<T>;
    } catch {
      envelope = undefined;
    }
    if (!envelope || typeof envelope !== 'object' || typeof envelope.success !== 'boolean') {
      throw new DnsProviderError(this.name, operation, `Cloudflare answered HTTP ${response.status} without its JSON envelope while ${what}`, {
        retryable: response.status >= 500 || response.status === 429,
        status: response.status,
      });
    }
    if (envelope.success && response.ok) return envelope.result;
    const errors = Array.isArray(envelope.errors) ? envelope.errors : [];
    const codes = errors.map((e) => Number(e.code));
    const detail = errors.length ? errors.map((e) => `${e.message} (code ${e.code})`).join('; ') : `HTTP ${response.status}`;
    const refused = response.status === 401 || response.status === 403 || codes.some((c) => c === 10000 || c === 9109 || c === 6003 || c === 6111 || c === 1000);
    const message = refused
      ? `Cloudflare refused the API token (BERTH_CLOUDFLARE_API_TOKEN) while ${what}: ${detail}; it needs Zone:Read and DNS:Edit on the zone`
      : `Cloudflare failed ${what}: ${detail}`;
    const error = new DnsProviderError(this.name, operation, this.#redact(message), {
      retryable: !refused && (response.status >= 500 || response.status === 429),
      status: response.status,
    });
    callCodes.set(error, codes);
    throw error;
  }

  /** Belt and braces: no message ever carries the token, even if an answer echoed it. */
  #redact(message: string): string {
    return message.split(this.#token).join('[token]');
  }
}

/** Cloudflare's error codes of a failed call, by the error thrown. */
const callCodes = new WeakMap<object, number[]>();

function codesOf(e: unknown): number[] {
  return (typeof e === 'object' && e !== null && callCodes.get(e)) || [];
}

function describe(operation: DnsProviderOperation, subject: string): string {
  switch (operation) {
    case 'find-zone':
      return `looking up the zone of ${subject}`;
    case 'create-txt':
      return `creating the TXT record ${subject}`;
    case 'remove-txt':
      return `removing the TXT record ${subject}`;
  }
}
