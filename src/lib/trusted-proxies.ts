import { isIP } from 'node:net';
import { CidrMatcher, formatCidr, normalizeIp, parseCidr } from './cidr.js';

/**
 * `BERTH_TRUSTED_PROXIES`: the reverse proxies (comma-separated addresses and CIDRs) whose
 * `X-Forwarded-For` is believed, on the API and the edge. A request from any other address is its
 * own client, whatever it writes in the header. Default: none (the header is never believed).
 */
export interface TrustedProxies {
  /** Number of ranges listed (0: no proxy is trusted). */
  readonly size: number;
  /** The ranges as written (normalized), for logs and docs. */
  readonly ranges: readonly string[];
  /** Is `address` (a socket's remote address) one of the trusted proxies? */
  trusts(address: string | undefined | null): boolean;
}

export class TrustedProxiesError extends Error {
  constructor(entry: string) {
    super(`BERTH_TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.10, fd00::/8)`);
    this.name = 'TrustedProxiesError';
  }
}

/** Parses the comma-separated list (or an array of entries); a malformed entry throws TrustedProxiesError. */
export function parseTrustedProxies(value: string | readonly string[] | undefined | null): TrustedProxies {
  const entries = (typeof value === 'string' ? value.split(',') : (value ?? [])).map((s) => s.trim()).filter(Boolean);
  const ranges: string[] = [];
  for (const e of entries) {
    const c = parseCidr(e);
    if (!c) throw new TrustedProxiesError(e);
    ranges.push(formatCidr(c));
  }
  const matcher = new CidrMatcher(ranges);
  return {
    size: ranges.length,
    ranges,
    trusts(address) {
      if (!address || ranges.length === 0) return false;
      return matcher.contains(address);
    },
  };
}

/** One `X-Forwarded-For` entry as an address, or null (ports and brackets are stripped; junk is null). */
function forwardedEntry(raw: string): string | null {
  let s = raw.trim();
  if (!s) return null;
  // `[v6]:port` or `[v6]`
  const br = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (br) s = br[1]!;
  // `v4:port`
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(s)) s = s.slice(0, s.lastIndexOf(':'));
  const ip = normalizeIp(s);
  return isIP(ip) ? ip : null;
}

/**
 * The client address of a request: the socket's address, unless that is a trusted proxy, in which
 * case `X-Forwarded-For` is walked from the right (the entry the nearest proxy appended) past every
 * trusted proxy; the first untrusted address is the client. A malformed entry stops the walk at the
 * last trusted hop (that proxy is then taken as the client). Several headers count as one list.
 */
export function clientAddress(socketAddress: string | undefined | null, forwardedFor: string | readonly string[] | undefined | null, trusted: TrustedProxies): string {
  let current = normalizeIp(socketAddress ?? '');
  if (!trusted.trusts(current) || forwardedFor == null) return current;
  const list = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor).join(',').split(',');
  for (let i = list.length - 1; i >= 0; i--) {
    if (!list[i]!.trim()) continue;
    const hop = forwardedEntry(list[i]!);
    if (!hop) return current;
    current = hop;
    if (!trusted.trusts(current)) return current;
  }
  return current;
}
