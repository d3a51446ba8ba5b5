import { CidrMatcher } from '../lib/cidr.js';
import { compileGlob, isGlob } from './glob.js';
import { normalizePath } from './normalize.js';

/** A route rule row as the projects area stores it (config is the kind's JSON). */
export interface RuleRow {
  id: string;
  kind: string;
  enabled: number | boolean;
  path: string | null;
  config: string;
}

interface Base {
  id: string;
  covers(path: string): boolean;
}
interface BanRule extends Base {
  kind: 'ban';
  ips: CidrMatcher;
  expiresAt: number | null;
}
interface AllowDenyRule extends Base {
  kind: 'allow-deny';
  action: 'allow' | 'deny';
  cidrs: CidrMatcher;
}
interface RateRule extends Base {
  kind: 'rate-limit';
  limit: number;
  windowMs: number;
}
export type CompiledRule = BanRule | AllowDenyRule | RateRule;

export type Verdict = { status: 403; reason: string; ruleId: string } | { status: 429; retryAfter: number; ruleId: string } | null;

/**
 * A rule's `path`: none covers every path; a pattern with `*` or `?` is a glob over the whole path
 * (`*` any run of characters, `/` included; `?` one character; matched in linear time, glob.ts);
 * anything else is a prefix on segment boundaries (`/api` covers `/api`, `/api/x` and `/api;v=1`,
 * not `/apix`; `/` covers everything). The pattern is normalised like a request path (normalize.ts)
 * and always matched against the normalised request path, case-sensitively.
 */
export function pathMatcher(pattern: string | null | undefined): (path: string) => boolean {
  if (!pattern || pattern === '/' || pattern === '*' || pattern === '/*') return () => true;
  const norm = normalizePath(pattern) ?? pattern;
  if (isGlob(norm)) return compileGlob(norm);
  const prefix = norm.endsWith('/') ? norm.slice(0, -1) : norm;
  if (prefix === '') return () => true;
  const len = prefix.length;
  return (p) => {
    if (!p.startsWith(prefix)) return false;
    if (p.length === len) return true;
    const c = p.charCodeAt(len);
    return c === 0x2f || c === 0x3b;
  };
}

export function compileRules(rows: RuleRow[]): CompiledRule[] {
  const out: CompiledRule[] = [];
  for (const r of rows) {
    if (!r.enabled) continue;
    let cfg: Record<string, unknown>;
    try {
      cfg = JSON.parse(r.config) as Record<string, unknown>;
    } catch {
      continue;
    }
    const covers = pathMatcher(r.path);
    if (r.kind === 'ban') {
      const exp = typeof cfg.expiresAt === 'string' ? Date.parse(cfg.expiresAt) : NaN;
      out.push({ id: r.id, kind: 'ban', covers, ips: new CidrMatcher(Array.isArray(cfg.ips) ? (cfg.ips as string[]) : []), expiresAt: Number.isFinite(exp) ? exp : null });
    } else if (r.kind === 'allow-deny') {
      out.push({
        id: r.id,
        kind: 'allow-deny',
        covers,
        action: cfg.action === 'allow' ? 'allow' : 'deny',
        cidrs: new CidrMatcher(Array.isArray(cfg.cidrs) ? (cfg.cidrs as string[]) : []),
      });
    } else if (r.kind === 'rate-limit') {
      const limit = Number(cfg.limit);
      const windowSeconds = Number(cfg.windowSeconds);
      if (!(limit >= 0) || !(windowSeconds > 0)) continue;
      out.push({ id: r.id, kind: 'rate-limit', covers, limit, windowMs: windowSeconds * 1000 });
    }
  }
  return out;
}

/**
 * Per-client fixed-window counters of rate-limit rules, keyed by rule and client address. Entries of
 * ended windows are swept so the map stays bounded by the active clients.
 */
export class RateCounter {
  private readonly windows = new Map<string, { start: number; count: number; windowMs: number }>();
  private lastSweep = Date.now();

  /** Counts one request; answers the seconds to wait when it is over the limit, else 0. */
  hit(ruleId: string, ip: string, limit: number, windowMs: number, now = Date.now()): number {
    if (now - this.lastSweep > 10000) this.sweep(now);
    const key = `${ruleId}|${ip}`;
    let w = this.windows.get(key);
    if (!w || now - w.start >= windowMs || w.windowMs !== windowMs) {
      w = { start: now, count: 0, windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    if (w.count > limit) return Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    return 0;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [k, w] of this.windows) if (now - w.start >= w.windowMs) this.windows.delete(k);
  }
}

/**
 * Applies a project's rules to one request: bans, then deny and allow lists (when an allow rule
 * covers the path, only its addresses pass), then every covering rate limit counts the request.
 */
export function evaluateRules(rules: CompiledRule[], path: string, ip: string, counter: RateCounter, now = Date.now()): Verdict {
  if (rules.length === 0) return null;
  let allowCovering = false;
  let allowed = false;
  for (const r of rules) {
    if (!r.covers(path)) continue;
    if (r.kind === 'ban') {
      if ((r.expiresAt === null || r.expiresAt > now) && r.ips.contains(ip)) return { status: 403, reason: 'banned', ruleId: r.id };
    } else if (r.kind === 'allow-deny') {
      if (r.action === 'deny') {
        if (r.cidrs.contains(ip)) return { status: 403, reason: 'denied', ruleId: r.id };
      } else {
        allowCovering = true;
        if (r.cidrs.contains(ip)) allowed = true;
      }
    }
  }
  if (allowCovering && !allowed) return { status: 403, reason: 'not allowed', ruleId: 'allow-list' };
  let wait = 0;
  let waitRule = '';
  for (const r of rules) {
    if (r.kind !== 'rate-limit' || !r.covers(path)) continue;
    const w = counter.hit(r.id, ip, r.limit, r.windowMs, now);
    if (w > wait) {
      wait = w;
      waitRule = r.id;
    }
  }
  if (wait > 0) return { status: 429, retryAfter: wait, ruleId: waitRule };
  return null;
}
