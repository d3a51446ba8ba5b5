import { BlockList, isIP } from 'node:net';

/**
 * IP addresses and CIDR ranges, v4 and v6 (route rules; the edge proxy matches client addresses
 * with `CidrMatcher`). A bare address is a /32 (v4) or /128 (v6) range.
 */
export interface Cidr {
  family: 4 | 6;
  /** The address as written (normalized: lowercase, v4-mapped v6 folded to v4). */
  address: string;
  prefix: number;
}

/** `::ffff:1.2.3.4` -> `1.2.3.4`; everything else unchanged (lowercased). */
export function normalizeIp(ip: string): string {
  const s = ip.trim().toLowerCase();
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(s);
  return m && isIP(m[1]!) === 4 ? m[1]! : s;
}

/** Parses `1.2.3.4`, `10.0.0.0/8`, `2001:db8::/32`, `::1`; null when it is neither an address nor a range. */
export function parseCidr(input: string): Cidr | null {
  // No zone ids (fe80::1%eth0): a rule cannot name an interface.
  if (typeof input !== 'string' || input.length > 64 || input.includes('%')) return null;
  const [addrRaw, prefixRaw, extra] = input.trim().split('/');
  if (extra !== undefined || !addrRaw) return null;
  const address = normalizeIp(addrRaw);
  const fam = isIP(address);
  if (fam !== 4 && fam !== 6) return null;
  const max = fam === 4 ? 32 : 128;
  let prefix = max;
  if (prefixRaw !== undefined) {
    if (!/^\d{1,3}$/.test(prefixRaw)) return null;
    prefix = Number(prefixRaw);
    // A v4-mapped v6 range written with a v6 prefix (::ffff:10.0.0.0/104) folds to v4.
    if (fam === 4 && addrRaw.toLowerCase().startsWith('::ffff:')) prefix -= 96;
    if (prefix < 0 || prefix > max) return null;
  }
  return { family: fam, address, prefix };
}

/** The canonical text of a range: `1.2.3.4` for a single address, `10.0.0.0/8` otherwise. */
export function formatCidr(c: Cidr): string {
  return c.prefix === (c.family === 4 ? 32 : 128) ? c.address : `${c.address}/${c.prefix}`;
}

/** A set of ranges that answers "does it contain this address?" (v4 and v6; v4-mapped v6 clients match v4 ranges). */
export class CidrMatcher {
  private readonly list = new BlockList();
  readonly size: number;

  constructor(ranges: Iterable<string | Cidr>) {
    let n = 0;
    for (const r of ranges) {
      const c = typeof r === 'string' ? parseCidr(r) : r;
      if (!c) continue;
      this.list.addSubnet(c.address, c.prefix, c.family === 4 ? 'ipv4' : 'ipv6');
      n++;
    }
    this.size = n;
  }

  contains(ip: string): boolean {
    const a = normalizeIp(ip);
    const fam = isIP(a);
    if (fam === 0) return false;
    return this.list.check(a, fam === 4 ? 'ipv4' : 'ipv6');
  }
}

/** Does `range` (address or CIDR) contain `ip`? False when either does not parse. */
export function cidrContains(range: string, ip: string): boolean {
  return new CidrMatcher([range]).contains(ip);
}
