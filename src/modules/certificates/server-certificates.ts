import { readFile } from 'node:fs/promises';
import type { AppContext } from '../../context.js';
import { decryptSecret } from '../../lib/crypto.js';
import { clockIso } from '../../lib/clock.js';
import * as store from './certificates.store.js';
import type { CertificatesPort, DomainTls } from './ports.js';
import { keyAad } from './issue.service.js';
import { alpnPair } from './order.js';
import { certificateRequested, certificateRemoved } from './schedule.js';

/** How long this server trusts what it read of a name (other instances' new certificates show within it). */
export const REFRESH_MS = 30_000;
/** At most this many names are cached (a flood of unknown server names must not grow the map). */
const MAX_ENTRIES = 10_000;

type Pair = { cert: string; key: string };

interface Entry {
  value: Promise<Pair | null>;
  /** `domain|updatedAt` of the row the value came from (a refresh that finds it unchanged does not unseal again). */
  source: string | null;
  checkedAt: number;
}

/** The wildcard name covering `name` (`*.<parent>`), or null for a name of fewer than three labels. */
export function wildcardOf(name: string): string | null {
  const dot = name.indexOf('.');
  const parent = dot < 0 ? '' : name.slice(dot + 1);
  return parent.includes('.') ? `*.${parent}` : null;
}

/**
 * The certificates port of one server (what the edge reads; contract section 14): certificates by
 * TLS server name from a per-server cache (`invalidate` after an issuance on this server; a 30 s
 * refresh picks up other instances' issuances), HTTP-01 answers straight from the database (any
 * instance may have made the order), and the projects area's calls.
 */
export class ServerCertificates implements CertificatesPort {
  private readonly entries = new Map<string, Entry>();
  private readonly watchers = new Set<() => void>();

  constructor(private readonly ctx: AppContext) {}

  forServerName(raw: string): Promise<Pair | null> {
    const name = raw.toLowerCase().replace(/\.$/, '');
    const now = this.ctx.clock.now();
    const cached = this.entries.get(name);
    if (cached && now - cached.checkedAt < REFRESH_MS) return cached.value;
    if (!cached && this.entries.size >= MAX_ENTRIES) this.entries.clear();
    const entry: Entry = { value: Promise.resolve(null), source: cached?.source ?? null, checkedAt: now };
    entry.value = this.load(name, cached, entry).catch((e) => {
      this.entries.delete(name);
      this.ctx.log.error({ err: e, serverName: name }, 'certificate lookup failed');
      return null;
    });
    this.entries.set(name, entry);
    return entry.value;
  }

  private async load(name: string, previous: Entry | undefined, entry: Entry): Promise<Pair | null> {
    const wildcard = wildcardOf(name);
    const rows = await store.servableCertificatesAnyOrg(this.ctx.db, wildcard ? [name, wildcard] : [name]);
    const now = clockIso(this.ctx.clock);
    const live = rows.filter((r) => r.expiresAt === null || r.expiresAt > now);
    const row = live.find((r) => r.domain === name) ?? live.find((r) => r.domain === wildcard);
    if (row) {
      const source = `${row.domain}|${row.updatedAt}`;
      entry.source = source;
      if (previous && previous.source === source) {
        const same = await previous.value;
        if (same) return same;
      }
      return { cert: row.certPem!, key: decryptSecret(this.ctx.keyring, row.keySealed!, keyAad(row.domain)) };
    }
    entry.source = null;
    return this.freeDomainPair(name);
  }

  /**
   * The free domains' certificate for one label under the apps domain: the wildcard files
   * (`BERTH_WILDCARD_CERT_FILE`/`_KEY_FILE`) when given, else the instance's own `*.<apps domain>`
   * certificate (DNS-01, kept by the leader's pass) when it holds one.
   */
  private async freeDomainPair(name: string): Promise<Pair | null> {
    const { wildcardCertFile, wildcardKeyFile } = this.ctx.config.https;
    const apps = this.ctx.config.appsDomain.toLowerCase().replace(/\.$/, '');
    if (!name.endsWith(`.${apps}`) || name.slice(0, -apps.length - 1).includes('.')) return null;
    if (wildcardCertFile && wildcardKeyFile) {
      const [cert, key] = await Promise.all([readFile(wildcardCertFile, 'utf8'), readFile(wildcardKeyFile, 'utf8')]);
      return { cert, key };
    }
    const row = await store.servableInstanceCertificate(this.ctx.db, `*.${apps}`);
    if (!row || (row.expiresAt !== null && row.expiresAt <= clockIso(this.ctx.clock))) return null;
    return { cert: row.certPem!, key: decryptSecret(this.ctx.keyring, row.keySealed!, keyAad(row.domain)) };
  }

  /**
   * The TLS-ALPN-01 challenge certificate of a name with a pending challenge (any instance's order),
   * read from the database on every `acme-tls/1` handshake (not cached: it lives for one validation).
   */
  async tlsAlpn01(raw: string): Promise<Pair | null> {
    const name = raw.toLowerCase().replace(/\.$/, '');
    if (!name || name.length > 253) return null;
    const row = await store.alpnChallengeAnyOrg(this.ctx.db, name, clockIso(this.ctx.clock));
    return row ? alpnPair(this.ctx, row) : null;
  }

  async http01(token: string): Promise<string | null> {
    if (!/^[A-Za-z0-9_-]{1,256}$/.test(token)) return null;
    return (await store.challengeAnyOrg(this.ctx.db, token, clockIso(this.ctx.clock))) ?? null;
  }

  requested(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void> {
    return certificateRequested(ctx, orgId, projectId, domain);
  }

  async removed(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void> {
    await certificateRemoved(ctx, orgId, projectId, domain);
    this.invalidate(domain);
  }

  async tls(ctx: AppContext, orgId: string, domains: readonly string[]): Promise<Map<string, DomainTls>> {
    const out = new Map<string, DomainTls>(domains.map((d) => [d, { status: 'none' }]));
    if (ctx.config.https.port === null) return out;
    for (const row of await store.certificatesOf(ctx.db, orgId, domains)) {
      out.set(row.domain, {
        status: row.status as DomainTls['status'],
        ...(row.expiresAt ? { expiresAt: row.expiresAt } : {}),
        ...(row.issuer ? { issuer: row.issuer } : {}),
        ...(row.status === 'failed' && row.error ? { error: row.error } : {}),
      });
    }
    return out;
  }

  invalidate(domain: string): void {
    const name = domain.toLowerCase();
    if (name.startsWith('*.')) {
      const suffix = name.slice(1);
      for (const key of this.entries.keys()) if (key.endsWith(suffix) && !key.slice(0, -suffix.length).includes('.')) this.entries.delete(key);
    }
    this.entries.delete(name);
    for (const fn of this.watchers) fn();
  }

  onInvalidate(fn: () => void): () => void {
    this.watchers.add(fn);
    return () => this.watchers.delete(fn);
  }
}
