// One file on purpose (about 300 lines): it is the single answer to "may Berth connect to this
// user-supplied address?" — the address classes refused, the BERTH_OUTBOUND_ALLOW list, the refusal
// error, and the policy that resolves, checks and hands sockets only checked addresses (lookup and
// agents). Its importers (backups, services, config) use these together, and the policy's guarantee
// (no rebinding between check and connect) is easiest to review when the check it relies on is beside it.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { CidrMatcher, parseCidr } from './cidr.js';

/**
 * Outbound connections to addresses a user supplied (S3 endpoints, database connection URLs, any
 * future webhook target). A host is resolved (every A/AAAA record, as the system resolver answers
 * it, so decimal, octal and hex spellings of IPv4 mean what they mean to the clients) and refused
 * when any address is loopback, link-local, private (RFC 1918, CGNAT 100.64/10, ULA fc00::/7),
 * unspecified, multicast, broadcast, reserved, a cloud metadata address, or an IPv4-mapped or
 * embedded form of one; unless the host itself, or a CIDR holding the address, is listed in
 * `BERTH_OUTBOUND_ALLOW` (comma-separated hosts and CIDRs). Address classes come from ipaddr.js
 * (docs/decisions.md, "Outbound address checks").
 */

/** Cloud metadata and control-plane addresses outside the private ranges (Azure WireServer). */
const METADATA_V4 = ['169.254.169.254', '168.63.129.16', '100.100.100.200', '192.0.0.192'];
const METADATA_V6 = ['fd00:ec2::254'];

/** Why an address is refused, in words; null when it is a public unicast address. */
export function blockedReason(address: string): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return 'not an IP address';
  }
  return ip.kind() === 'ipv4' ? v4Reason(ip as ipaddr.IPv4) : v6Reason(ip as ipaddr.IPv6);
}

function v4Reason(ip: ipaddr.IPv4): string | null {
  if (METADATA_V4.includes(ip.toString())) return 'metadata';
  const range = ip.range();
  if (range === 'unicast') return null;
  const words: Record<string, string> = {
    unspecified: 'unspecified',
    broadcast: 'broadcast',
    multicast: 'multicast',
    linkLocal: 'link-local',
    loopback: 'loopback',
    carrierGradeNat: 'carrier-grade NAT',
    private: 'private',
  };
  return words[range] ?? 'reserved';
}

/** The IPv4 address in the last 32 bits of an IPv6 address. */
function lastV4(ip: ipaddr.IPv6): ipaddr.IPv4 {
  const p = ip.parts;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

function v6Reason(ip: ipaddr.IPv6): string | null {
  if (METADATA_V6.includes(ip.toNormalizedString()) || METADATA_V6.includes(ip.toRFC5952String())) return 'metadata';
  if (ip.isIPv4MappedAddress()) return v4Reason(ip.toIPv4Address());
  const p = ip.parts;
  const range = ip.range();
  // ::ffff:0:a.b.c.d (SIIT) and the well-known NAT64 prefix 64:ff9b::/96 carry an IPv4 address that
  // a translator connects to: judge that address (a DNS64 resolver may answer a public host so).
  if (range === 'rfc6145') return v4Reason(lastV4(ip));
  if (range === 'rfc6052' && p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) return v4Reason(lastV4(ip));
  // IPv4-compatible ::a.b.c.d (deprecated) and the rest of ::/8.
  if (p[0] === 0 && range !== 'loopback' && range !== 'unspecified') return 'reserved';
  const words: Record<string, string> = {
    unspecified: 'unspecified',
    loopback: 'loopback',
    linkLocal: 'link-local',
    multicast: 'multicast',
    uniqueLocal: 'unique local (private)',
    '6to4': 'embedded IPv4 (6to4)',
    teredo: 'embedded IPv4 (Teredo)',
    rfc6052: 'embedded IPv4 (NAT64)',
  };
  if (range !== 'unicast') return words[range] ?? 'reserved';
  // Only global unicast (2000::/3) leaves the host; fec0::/10 and other unassigned space do not.
  if ((p[0]! & 0xe000) !== 0x2000) return 'reserved';
  return null;
}

/** IPv4-mapped IPv6 (`::ffff:7f00:1`) as IPv4 text; other addresses in their usual form. */
export function canonicalAddress(address: string): string {
  try {
    const ip = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
    if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) return (ip as ipaddr.IPv6).toIPv4Address().toString();
    return ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toRFC5952String() : ip.toString();
  } catch {
    return address;
  }
}

/** A host as written in a URL: brackets, case and a trailing dot do not matter. */
export function normalizeHost(host: string): string {
  return host.trim().replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

export class OutboundAllowError extends Error {
  constructor(entry: string) {
    super(`BERTH_OUTBOUND_ALLOW: "${entry}" is neither a host name nor an IP address or CIDR range`);
    this.name = 'OutboundAllowError';
  }
}

/** Splits and checks `BERTH_OUTBOUND_ALLOW` (throws OutboundAllowError on a malformed entry). */
export function parseOutboundAllow(value: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (value ?? '').split(',')) {
    const e = raw.trim();
    if (!e) continue;
    const bare = e.replace(/^\[([^\]]+)\](\/\d+)?$/, '$1$2');
    if (parseCidr(bare)) out.push(bare);
    else if (/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/i.test(e) && e.length <= 253) out.push(normalizeHost(e));
    else throw new OutboundAllowError(e);
  }
  return out;
}

/** The refusal of an outbound target; `reason` is safe to show (no upstream text). */
export class OutboundRefusedError extends Error {
  readonly code = 'BERTH_OUTBOUND_REFUSED';
  constructor(
    readonly host: string,
    readonly reason: 'blocked' | 'unresolvable' | 'invalid',
    readonly detail?: string,
  ) {
    super(
      reason === 'blocked'
        ? `${host} is a ${detail ?? 'internal'} address or resolves to one; Berth does not connect there unless BERTH_OUTBOUND_ALLOW lists it`
        : reason === 'unresolvable'
          ? `${host} does not resolve to an address`
          : `${host} is not a host Berth can connect to`,
    );
    this.name = 'OutboundRefusedError';
  }
}

export function isOutboundRefused(e: unknown): e is OutboundRefusedError {
  for (let cur = e as { code?: string; cause?: unknown } | undefined, i = 0; cur && i < 5; cur = cur.cause as typeof cur, i++) {
    if (cur instanceof OutboundRefusedError || cur.code === 'BERTH_OUTBOUND_REFUSED') return true;
  }
  return false;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address of a host name (the system resolver, with a time limit). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const RESOLVE_TIMEOUT_MS = 5000;

export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('resolve timed out')), RESOLVE_TIMEOUT_MS);
    dnsLookup(host, { all: true, verbatim: true }, (err, addrs: LookupAddress[]) => {
      clearTimeout(t);
      if (err) return reject(err);
      resolve(addrs.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

/** The checked addresses of a host: connect to these, and only these. */
export interface CheckedHost {
  host: string;
  addresses: ResolvedAddress[];
}

export class OutboundPolicy {
  private readonly hosts: Set<string>;
  private readonly ranges: CidrMatcher;

  constructor(
    readonly allow: readonly string[] = [],
    private readonly resolver: Resolver = systemResolver,
  ) {
    this.hosts = new Set(allow.filter((e) => !parseCidr(e)).map(normalizeHost));
    this.ranges = new CidrMatcher(allow.filter((e) => parseCidr(e)));
  }

  /** Refusal reason of one resolved address of `host`, or null when it may be connected to. */
  private addressReason(host: string, address: string): string | null {
    if (this.hosts.has(host)) return null;
    const a = canonicalAddress(address);
    if (this.ranges.contains(a)) return null;
    return blockedReason(a);
  }

  /** Synchronous check of an IP literal (throws OutboundRefusedError). */
  checkAddress(address: string, host = address): void {
    const reason = this.addressReason(normalizeHost(host), address);
    if (reason) throw new OutboundRefusedError(normalizeHost(host), 'blocked', reason);
  }

  /**
   * Resolves `host` and checks every address; throws OutboundRefusedError when it does not resolve
   * or any address is refused (one bad record is enough: the client might pick it).
   */
  async resolve(rawHost: string): Promise<CheckedHost> {
    const host = normalizeHost(rawHost);
    if (!host || host.includes('%') || /[\s,/\\@]/.test(host)) throw new OutboundRefusedError(host || '(no host)', 'invalid');
    let addresses: ResolvedAddress[];
    const fam = isIP(host);
    if (fam) addresses = [{ address: host, family: fam as 4 | 6 }];
    else {
      try {
        addresses = await this.resolver(host);
      } catch {
        throw new OutboundRefusedError(host, 'unresolvable');
      }
      if (!addresses.length) throw new OutboundRefusedError(host, 'unresolvable');
    }
    for (const a of addresses) {
      const reason = this.addressReason(host, a.address);
      if (reason) throw new OutboundRefusedError(host, 'blocked', reason);
    }
    return { host, addresses };
  }

  /**
   * A `lookup` for sockets (net/tls `lookup` option): resolves and checks the host at connect time,
   * and hands the socket exactly the addresses checked, so a DNS answer that changes between a check
   * and the connection (rebinding) cannot slip through.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (checked) => {
        const fam = options?.family === 4 || options?.family === 6 ? options.family : 0;
        const list = fam ? checked.addresses.filter((a) => a.family === fam) : checked.addresses;
        if (!list.length) return callback(Object.assign(new Error(`${hostname} has no address of family ${fam}`), { code: 'ENOTFOUND' }), '', 4);
        if (options?.all) (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 4),
    );
  };

  /**
   * HTTP and HTTPS agents whose every connection is checked: host names through `lookup`, IP
   * literals (which never reach a lookup) before the socket is opened. For clients like the AWS SDK.
   */
  agents(opts: http.AgentOptions = {}): { httpAgent: http.Agent; httpsAgent: https.Agent } {
    const policy = this;
    const guard = (options: { host?: string | null }, cb: (err: Error | null) => void): boolean => {
      const host = normalizeHost(String(options.host ?? ''));
      if (isIP(host)) {
        try {
          policy.checkAddress(host);
        } catch (e) {
          process.nextTick(cb, e as Error);
          return false;
        }
      }
      return true;
    };
    type CreateConnection = (this: http.Agent, o: { host?: string }, cb: (e: Error | null) => void) => unknown;
    // The agent's own createConnection (plain or TLS), run only for a host that passed the guard.
    const guarded = <A extends http.Agent>(agent: A): A => {
      const a = agent as unknown as { createConnection: CreateConnection };
      const create = a.createConnection;
      a.createConnection = function (o, cb) {
        return guard(o, cb) ? create.call(this, o, cb) : undefined;
      };
      return agent;
    };
    const base = { keepAlive: true, ...opts, lookup: this.lookup };
    return { httpAgent: guarded(new http.Agent(base)), httpsAgent: guarded(new https.Agent(base)) };
  }
}

/**
 * The one TCP host of a `postgres://` URL. Refused (OutboundRefusedError 'invalid'): no host (libpq
 * would take its default Unix socket), several hosts (`h1,h2`), and `host`/`hostaddr` parameters
 * (a socket path or a second address the check would not see).
 */
export function postgresUrlHost(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new OutboundRefusedError('(unparsable URL)', 'invalid');
  }
  const host = normalizeHost(decodeURIComponent(u.hostname));
  for (const k of u.searchParams.keys()) {
    if (k.toLowerCase() === 'host' || k.toLowerCase() === 'hostaddr') throw new OutboundRefusedError(host || '(no host)', 'invalid');
  }
  if (!host || host.startsWith('/') || host.includes(',')) throw new OutboundRefusedError(host || '(no host)', 'invalid');
  return host;
}

const policies = new WeakMap<readonly string[], OutboundPolicy>();

/** The policy of a server's `BERTH_OUTBOUND_ALLOW` list (config.hardening.outboundAllow), made once per list. */
export function outboundPolicy(allow: readonly string[]): OutboundPolicy {
  let p = policies.get(allow);
  if (!p) {
    p = new OutboundPolicy(allow);
    policies.set(allow, p);
  }
  return p;
}
