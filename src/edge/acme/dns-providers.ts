/**
 * DNS-01 through a provider plug-in (contract section 14): the ACME client asks a provider to publish
 * `_acme-challenge.<name>` TXT records and to remove them once the order is done. A provider knows one
 * DNS host's API; Cloudflare (`cloudflare.ts`) is the first. Adding one: implement `DnsProvider`, throw
 * `DnsProviderError` (never echoing a credential), and name it in the configuration's
 * `BERTH_DNS_PROVIDER` switch.
 */

export interface DnsProvider {
  /** The provider's name as `BERTH_DNS_PROVIDER` spells it (`cloudflare`). */
  readonly name: string;
  /**
   * Publishes one TXT record `fqdn` (e.g. `_acme-challenge.example.com`) holding `value`, with a short
   * TTL. `zoneHint` is the name being certified (a wildcard's base name, e.g. `example.com` for
   * `*.example.com`): the provider finds the zone that holds it by walking up its labels. Publishing a
   * record that already exists with the same value answers the existing one (a retried order).
   * Answers an opaque id that `removeTxt` takes back (it carries whatever the provider needs to find
   * the record again, so it can be stored and used after a restart).
   */
  createTxt(zoneHint: string, fqdn: string, value: string): Promise<{ id: string }>;
  /** Removes a record `createTxt` published; a record already gone is not an error. */
  removeTxt(fqdn: string, id: string): Promise<void>;
}

export type DnsProviderOperation = 'find-zone' | 'create-txt' | 'remove-txt';

/**
 * What a provider throws: a message in Berth's words naming the provider, the operation and the name
 * (safe to show on a domain's `tls.error`: it never holds a credential), and whether retrying later
 * can help (a timeout, a 5xx, a rate limit) or not (a refused token, no zone for the name).
 */
export class DnsProviderError extends Error {
  readonly provider: string;
  readonly operation: DnsProviderOperation;
  readonly retryable: boolean;
  /** The provider's HTTP status, when it answered. */
  readonly status?: number;

  constructor(provider: string, operation: DnsProviderOperation, message: string, opts: { retryable: boolean; status?: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'DnsProviderError';
    this.provider = provider;
    this.operation = operation;
    this.retryable = opts.retryable;
    this.status = opts.status;
  }
}

/** `*.Example.com.` -> `example.com`: the name a zone is searched for. */
export function baseName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '').replace(/^\*\./, '');
}

/**
 * The candidate zones of a name, longest first: `a.b.example.com` -> `a.b.example.com`,
 * `b.example.com`, `example.com` (never a single label: no provider hosts a top-level domain).
 */
export function zoneCandidates(name: string): string[] {
  const labels = baseName(name).split('.').filter(Boolean);
  const out: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join('.'));
  return out;
}
