import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './config-error.js';
import { loadHardening, type HardeningConfig } from './config-hardening.js';

export type Mode = 'self-hosted' | 'cloud';

export interface GithubConfig {
  apiUrl: string;
  webUrl: string;
  appId?: string;
  appSlug?: string;
  appPrivateKey?: string;
  clientId?: string;
  clientSecret?: string;
  webhookSecret?: string;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  mode: Mode;
  databaseUrl?: string;
  /** base64 32-byte key from BERTH_SECRET_KEY; when unset it is generated into <dataDir>/secret.key. */
  secretKey?: Buffer;
  previousSecretKeys: Buffer[];
  publicUrl?: string;
  edgeHost: string;
  edgePort: number;
  /** The edge runs on a worker thread of its own (BERTH_EDGE_THREAD, default on; `0`: the main thread; docs/edge.md). */
  edgeThread: boolean;
  /** The built dashboard `berth serve` answers at `/` (BERTH_DASHBOARD_DIR; default: the package's dist/web). */
  dashboardDir: string;
  appsDomain: string;
  cloudUrl?: string;
  cloudToken?: string;
  localRoots: string[];
  /** The folder local backup destinations must lie under (BERTH_LOCAL_BACKUP_ROOT; default `<data-dir>/backups`). */
  localBackupRoot: string;
  github: GithubConfig;
  ghBin: string;
  webhookRateLimit: number;
  logLevel: string;
  /** Start the jobs worker and the scheduler (tests may turn them off). */
  workers: boolean;
  /** Timeouts, connection and upload caps, outbound allow-list, trusted proxies (docs/security.md). */
  hardening: HardeningConfig;
  /** How builds and apps run (contract section 10): `sandbox` (default), `docker` or `process`. */
  runtime: RuntimeName;
  /** Who may sign up (contract section 10); `first-then-invite` is the self-hosted default. */
  signup: SignupMode;
  /** Ready releases kept per project for rollback (BERTH_RELEASES_KEPT, default 5; contract section 12). */
  releasesKept: number;
  /** BERTH_BUILD_CACHE_MB: each project's build cache is cut back to it after a build (default 2048; 0: no cache; contract section 21). */
  buildCacheMb: number;
  /** BERTH_DISK_LIMITS: `auto` (default), `images` or `off` (docs/runtime.md "Disk limits"). */
  diskLimits: 'auto' | 'images' | 'off';
  /**
   * How a custom domain proves ownership (contract section 12): `none` (verified at once, the
   * self-hosted default) or `dns` (a TXT record `_berth-challenge.<domain>`, always on a cloud instance).
   */
  domainVerification: DomainVerification;
  /** DNS servers (`host[:port]`) the TXT check asks (BERTH_DNS_SERVERS, comma-separated); the system's when empty. */
  dnsServers: string[];
  /** HTTPS at the edge and ACME certificates (contract section 14). */
  https: HttpsConfig;
  /** The docker runtime (contract section 13): Swarm services (BERTH_DOCKER_SWARM=1) and the registry images go through (BERTH_REGISTRY). */
  docker: DockerConfig;
  /** This instance among several sharing one PostgreSQL and one data dir (docs/scale-out.md). */
  instance: InstanceConfig;
  /** The PostgreSQL pool (docs/decisions.md, "PostgreSQL: pool, prepared statements and round trips"). */
  pg: PgConfig;
  /** BERTH_SMTP_URL: the mail server of email notification channels (`smtp://` or `smtps://`, optional `?from=`); null: no email. */
  smtpUrl: string | null;
  /** BERTH_METRICS_INTERVAL_SECONDS: how often apps and services are sampled (docs/observability.md; 0: off; default 10). */
  metricsIntervalSeconds: number;
  /** Kept logs (docs/logs.md): BERTH_LOG_RETENTION_DAYS (default 7) and BERTH_LOG_MAX_MB per app (default 1024). */
  logs: { retentionDays: number; maxMb: number };
}

export interface PgConfig {
  /** BERTH_PG_POOL_MAX: most connections this instance opens (default 10). */
  poolMax: number;
  /** BERTH_PG_PREPARED: named prepared statements kept per connection (default 100; 0 turns them off). */
  preparePerConnection: number;
  /**
   * BERTH_PG_SYNCHRONOUS_COMMIT: `synchronous_commit` of Berth's sessions (default `off`, the
   * durability of SQLite's WAL with synchronous=NORMAL: docs/decisions.md, "PostgreSQL durability").
   */
  synchronousCommit: PgSynchronousCommit;
}

export const PG_SYNCHRONOUS_COMMIT = ['off', 'local', 'remote_write', 'on', 'remote_apply'] as const;
export type PgSynchronousCommit = (typeof PG_SYNCHRONOUS_COMMIT)[number];

export interface InstanceConfig {
  /**
   * BERTH_INSTANCE_NAME: this instance's stable name among those sharing the data dir (its lock file
   * `<data-dir>/instances/<name>.lock` on PostgreSQL, and the namespace of its boxes); null: `default`
   * (one instance per data dir, as on SQLite).
   */
  name: string | null;
  /**
   * BERTH_INSTANCE_URL: where the other instances reach this one's edge (`http://host:port`, the
   * private address), for requests of apps this instance runs; null: `http://127.0.0.1:<edge port>`.
   */
  url: string | null;
  /** BERTH_LEADER_TTL_MS: the scheduler lease; a dead leader is replaced within it (1 000 to 600 000; default 10 000). */
  leaderTtlMs: number;
  /** BERTH_APP_OWNER_TTL_SECONDS: an app's runtime lease; a dead owner's apps are taken over within it (2 to 600; default 10). */
  appOwnerTtlSeconds: number;
}

export interface HttpsConfig {
  /** BERTH_HTTPS_PORT: the edge's TLS listener; null (the default): no TLS listener, no certificates requested. */
  port: number | null;
  /** BERTH_ACME_DIRECTORY_URL (default Let's Encrypt's production directory). */
  acmeDirectoryUrl: string;
  /** BERTH_ACME_EMAIL: the ACME account's contact, when given. */
  acmeEmail: string | null;
  /** BERTH_ACME_CA_FILE: a CA (PEM file) to trust for the ACME directory (a test CA such as Pebble's). */
  acmeCaFile: string | null;
  /** BERTH_WILDCARD_CERT_FILE / _KEY_FILE: the certificate of the free domains (`*.<BERTH_APPS_DOMAIN>`). */
  wildcardCertFile: string | null;
  wildcardKeyFile: string | null;
  /** BERTH_DNS_PROVIDER: the DNS-01 plug-in (`cloudflare`), null: HTTP-01 only. */
  dnsProvider: 'cloudflare' | null;
  /** BERTH_CLOUDFLARE_API_TOKEN (a secret: never logged or answered). */
  cloudflareApiToken: string | null;
  /** BERTH_CLOUDFLARE_API_URL: the API's origin (default `https://api.cloudflare.com`; tests point it at a fake). */
  cloudflareApiUrl: string;
}

export interface DockerConfig {
  swarm: boolean;
  /** `host[:port][/path]` every Swarm node can pull from; null: images stay on the machine that built them. */
  registry: string | null;
  /** `BERTH_IMAGE_<RUNTIME>` settings: the base image of each runtime's build steps and generated images. */
  baseImages: Record<string, string>;
}

export type DomainVerification = 'none' | 'dns';

export type RuntimeName = 'sandbox' | 'docker' | 'process';
export type SignupMode = 'open' | 'invite' | 'closed' | 'first-then-invite';

export interface ServeFlags {
  host?: string;
  port?: string | number;
  dataDir?: string;
  mode?: string;
  edgePort?: string | number;
  runtime?: string;
}

export { ConfigError };

function parsePort(value: string | number | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name} must be a port number from 0 to 65535 (got "${value}")`);
  return n;
}

export function parseSecretKey(value: string, name = 'BERTH_SECRET_KEY'): Buffer {
  const trimmed = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) throw new ConfigError(`${name} must be base64 of 32 random bytes (generate one with: openssl rand -base64 32)`);
  const key = Buffer.from(trimmed, 'base64');
  if (key.length < 32) throw new ConfigError(`${name} is too short: it decodes to ${key.length} bytes, it must be 32 (generate one with: openssl rand -base64 32)`);
  if (key.length > 32) throw new ConfigError(`${name} is too long: it decodes to ${key.length} bytes, it must be 32`);
  return key;
}

/** Flags win over environment variables, which win over defaults (contract section 1). */
// Long on purpose: every BERTH_* variable read in one place, one declaration after another.
export function loadConfig(flags: ServeFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const host = flags.host ?? env.BERTH_HOST ?? '127.0.0.1';
  const port = parsePort(flags.port ?? env.BERTH_PORT, 'port', 7300);
  const dataDir = path.resolve(flags.dataDir ?? env.BERTH_DATA_DIR ?? './.berth');
  const modeRaw = flags.mode ?? env.BERTH_MODE ?? 'self-hosted';
  if (modeRaw !== 'self-hosted' && modeRaw !== 'cloud') throw new ConfigError(`mode must be "self-hosted" or "cloud" (got "${modeRaw}")`);
  const edgePort = parsePort(flags.edgePort ?? env.BERTH_EDGE_PORT, 'edge port', 7380);
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  const secretKey = env.BERTH_SECRET_KEY ? parseSecretKey(env.BERTH_SECRET_KEY) : undefined;
  const previousSecretKeys = (env.BERTH_SECRET_KEY_PREVIOUS ?? '')
    .split(',')
    .filter((s) => s.trim())
    .map((s) => parseSecretKey(s, 'BERTH_SECRET_KEY_PREVIOUS'));
  const rate = Number(env.BERTH_WEBHOOK_RATE_LIMIT ?? 30);
  if (!Number.isInteger(rate) || rate < 1) throw new ConfigError('BERTH_WEBHOOK_RATE_LIMIT must be a positive whole number');
  let appPrivateKey = env.BERTH_GITHUB_APP_PRIVATE_KEY || undefined;
  if (!appPrivateKey && env.BERTH_GITHUB_APP_PRIVATE_KEY_FILE) {
    try {
      appPrivateKey = readFileSync(env.BERTH_GITHUB_APP_PRIVATE_KEY_FILE, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read BERTH_GITHUB_APP_PRIVATE_KEY_FILE: ${(e as Error).message}`);
    }
  }
  const runtime = flags.runtime ?? env.BERTH_RUNTIME ?? 'sandbox';
  if (runtime !== 'sandbox' && runtime !== 'docker' && runtime !== 'process') throw new ConfigError(`runtime must be "sandbox", "docker" or "process" (got "${runtime}")`);
  if (runtime === 'process' && modeRaw === 'cloud') throw new ConfigError('the process runtime runs apps without isolation and is refused in cloud mode: use BERTH_RUNTIME=sandbox or docker');
  const signupRaw = env.BERTH_SIGNUP || undefined;
  if (signupRaw && signupRaw !== 'open' && signupRaw !== 'invite' && signupRaw !== 'closed') throw new ConfigError(`BERTH_SIGNUP must be "open", "invite" or "closed" (got "${signupRaw}")`);
  const signup: SignupMode = (signupRaw as SignupMode | undefined) ?? (modeRaw === 'cloud' ? 'open' : 'first-then-invite');
  const keptRaw = env.BERTH_RELEASES_KEPT;
  const releasesKept = keptRaw === undefined || keptRaw === '' ? 5 : Number(keptRaw);
  if (!Number.isInteger(releasesKept) || releasesKept < 1 || releasesKept > 100) throw new ConfigError(`BERTH_RELEASES_KEPT must be a whole number from 1 to 100 (got "${keptRaw}")`);
  const cacheRaw = env.BERTH_BUILD_CACHE_MB;
  const buildCacheMb = cacheRaw === undefined || cacheRaw === '' ? 2048 : Number(cacheRaw);
  if (!Number.isInteger(buildCacheMb) || buildCacheMb < 0) throw new ConfigError(`BERTH_BUILD_CACHE_MB must be a whole number of MB, 0 or more (got "${cacheRaw}")`);
  const diskLimits = (env.BERTH_DISK_LIMITS ?? '').trim() || 'auto';
  if (diskLimits !== 'auto' && diskLimits !== 'images' && diskLimits !== 'off') throw new ConfigError(`BERTH_DISK_LIMITS must be "auto", "images" or "off" (got "${diskLimits}")`);
  const verificationRaw = env.BERTH_DOMAIN_VERIFICATION || undefined;
  if (verificationRaw && verificationRaw !== 'none' && verificationRaw !== 'dns') throw new ConfigError(`BERTH_DOMAIN_VERIFICATION must be "none" or "dns" (got "${verificationRaw}")`);
  if (verificationRaw === 'none' && modeRaw === 'cloud') throw new ConfigError('BERTH_DOMAIN_VERIFICATION=none is refused in cloud mode: tenants sharing an instance must prove they own a domain');
  const domainVerification: DomainVerification = (verificationRaw as DomainVerification | undefined) ?? (modeRaw === 'cloud' ? 'dns' : 'none');
  const dnsServers = (env.BERTH_DNS_SERVERS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const httpsPortRaw = (env.BERTH_HTTPS_PORT ?? '').trim();
  const httpsPort = httpsPortRaw === '' ? null : Number(httpsPortRaw);
  if (httpsPort !== null && !(Number.isInteger(httpsPort) && httpsPort >= 0 && httpsPort <= 65535)) throw new ConfigError(`BERTH_HTTPS_PORT must be a port number from 0 to 65535 (got "${httpsPortRaw}")`);
  const acmeDirectoryUrl = (env.BERTH_ACME_DIRECTORY_URL ?? '').trim() || 'https://acme-v02.api.letsencrypt.org/directory';
  if (!/^https?:\/\/[^\s]+$/.test(acmeDirectoryUrl)) throw new ConfigError(`BERTH_ACME_DIRECTORY_URL must be an http(s) URL (got "${acmeDirectoryUrl}")`);
  const wildcardCertFile = (env.BERTH_WILDCARD_CERT_FILE ?? '').trim() || null;
  const wildcardKeyFile = (env.BERTH_WILDCARD_KEY_FILE ?? '').trim() || null;
  if (!!wildcardCertFile !== !!wildcardKeyFile) throw new ConfigError('BERTH_WILDCARD_CERT_FILE and BERTH_WILDCARD_KEY_FILE go together: set both or neither');
  const dnsProviderRaw = (env.BERTH_DNS_PROVIDER ?? '').trim();
  if (dnsProviderRaw && dnsProviderRaw !== 'cloudflare') throw new ConfigError(`BERTH_DNS_PROVIDER must be "cloudflare" (got "${dnsProviderRaw}")`);
  const cloudflareApiToken = (env.BERTH_CLOUDFLARE_API_TOKEN ?? '').trim() || null;
  if (dnsProviderRaw === 'cloudflare' && !cloudflareApiToken) throw new ConfigError('BERTH_DNS_PROVIDER=cloudflare needs BERTH_CLOUDFLARE_API_TOKEN (a token with Zone:Read and DNS:Edit)');
  const https: HttpsConfig = {
    port: httpsPort,
    acmeDirectoryUrl,
    acmeEmail: (env.BERTH_ACME_EMAIL ?? '').trim() || null,
    acmeCaFile: (env.BERTH_ACME_CA_FILE ?? '').trim() || null,
    wildcardCertFile,
    wildcardKeyFile,
    dnsProvider: dnsProviderRaw === 'cloudflare' ? 'cloudflare' : null,
    cloudflareApiToken,
    cloudflareApiUrl: ((env.BERTH_CLOUDFLARE_API_URL ?? '').trim() || 'https://api.cloudflare.com').replace(/\/+$/, ''),
  };
  const swarmRaw = env.BERTH_DOCKER_SWARM ?? '';
  if (!['', '0', '1', 'true', 'false'].includes(swarmRaw)) throw new ConfigError(`BERTH_DOCKER_SWARM must be 1 or 0 (got "${swarmRaw}")`);
  const swarm = swarmRaw === '1' || swarmRaw === 'true';
  if (swarm && runtime !== 'docker') throw new ConfigError('BERTH_DOCKER_SWARM=1 needs the docker runtime: set BERTH_RUNTIME=docker');
  const registry = (env.BERTH_REGISTRY ?? '').trim().replace(/\/+$/, '') || null;
  if (registry && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?(\/[a-z0-9._-]+)*$/i.test(registry)) {
    throw new ConfigError(`BERTH_REGISTRY must be a registry address like registry.example.com:5000 (host, optional port and path; no scheme) (got "${registry}")`);
  }
  for (const server of dnsServers) {
    // node:dns takes addresses only: `1.2.3.4`, `1.2.3.4:53`, `::1` or `[::1]:53`.
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(server) ?? /^([^:]+)(?::(\d+))?$/.exec(server) ?? [server, server, undefined];
    const port = m[2] === undefined ? 53 : Number(m[2]);
    if (!isIP(m[1] ?? '') || !(port >= 1 && port <= 65535)) throw new ConfigError(`BERTH_DNS_SERVERS must list IP addresses, each with an optional port (got "${server}")`);
  }
  const trimSlash = (u: string) => u.replace(/\/+$/, '');
  const instance = loadInstance(env);
  const pg = loadPg(env);
  const smtpUrl = (env.BERTH_SMTP_URL ?? '').trim() || null;
  if (smtpUrl && !/^smtps?:\/\/[^\s/]+/.test(smtpUrl)) throw new ConfigError('BERTH_SMTP_URL must be an smtp:// or smtps:// URL, e.g. smtps://user:password@mail.example.com:465?from=berth@example.com');
  return {
    host,
    port,
    dataDir,
    mode: modeRaw,
    databaseUrl,
    secretKey,
    previousSecretKeys,
    publicUrl: env.BERTH_PUBLIC_URL ? trimSlash(env.BERTH_PUBLIC_URL) : undefined,
    edgeHost: env.BERTH_EDGE_HOST ?? host,
    edgePort,
    edgeThread: env.BERTH_EDGE_THREAD !== '0',
    dashboardDir: path.resolve(env.BERTH_DASHBOARD_DIR || fileURLToPath(new URL('../dist/web', import.meta.url))),
    appsDomain: env.BERTH_APPS_DOMAIN || 'localhost',
    cloudUrl: env.BERTH_CLOUD_URL ? trimSlash(env.BERTH_CLOUD_URL) : undefined,
    cloudToken: env.BERTH_CLOUD_TOKEN || undefined,
    localRoots: (env.BERTH_LOCAL_ROOTS ? env.BERTH_LOCAL_ROOTS.split(':').filter(Boolean) : [path.join(dataDir, 'local')]).map((p) => path.resolve(p)),
    localBackupRoot: path.resolve(env.BERTH_LOCAL_BACKUP_ROOT || path.join(dataDir, 'backups')),
    github: {
      apiUrl: trimSlash(env.BERTH_GITHUB_API_URL || 'https://api.github.com'),
      webUrl: trimSlash(env.BERTH_GITHUB_WEB_URL || 'https://github.com'),
      appId: env.BERTH_GITHUB_APP_ID || undefined,
      appSlug: env.BERTH_GITHUB_APP_SLUG || undefined,
      appPrivateKey,
      clientId: env.BERTH_GITHUB_CLIENT_ID || undefined,
      clientSecret: env.BERTH_GITHUB_CLIENT_SECRET || undefined,
      webhookSecret: env.BERTH_GITHUB_WEBHOOK_SECRET || undefined,
    },
    ghBin: env.BERTH_GH_BIN || 'gh',
    webhookRateLimit: rate,
    logLevel: env.BERTH_LOG_LEVEL || 'info',
    workers: true,
    hardening: loadHardening(env),
    runtime,
    signup,
    releasesKept,
    buildCacheMb,
    diskLimits,
    domainVerification,
    dnsServers,
    https,
    docker: { swarm, registry, baseImages: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => /^BERTH_IMAGE_[A-Z0-9_]+$/.test(e[0]) && !!e[1]?.trim())) },
    instance,
    pg,
    smtpUrl,
    metricsIntervalSeconds: wholeSetting(env, 'BERTH_METRICS_INTERVAL_SECONDS', 10, 0, 3600),
    logs: { retentionDays: wholeSetting(env, 'BERTH_LOG_RETENTION_DAYS', 7, 1, 3650), maxMb: wholeSetting(env, 'BERTH_LOG_MAX_MB', 1024, 10, 1_048_576) },
  };
}

/** A whole number from the variable `name` in [min, max], else `fallback` when unset; a ConfigError naming it otherwise. */
function wholeSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  return n;
}

/** BERTH_PG_POOL_MAX, BERTH_PG_PREPARED and BERTH_PG_SYNCHRONOUS_COMMIT. */
function loadPg(env: NodeJS.ProcessEnv): PgConfig {
  const commit = env.BERTH_PG_SYNCHRONOUS_COMMIT?.trim() || 'off';
  if (!(PG_SYNCHRONOUS_COMMIT as readonly string[]).includes(commit)) throw new ConfigError(`BERTH_PG_SYNCHRONOUS_COMMIT must be one of ${PG_SYNCHRONOUS_COMMIT.join(', ')} (got "${commit}")`);
  return {
    poolMax: wholeSetting(env, 'BERTH_PG_POOL_MAX', 10, 1, 1000),
    preparePerConnection: wholeSetting(env, 'BERTH_PG_PREPARED', 100, 0, 10000),
    synchronousCommit: commit as PgSynchronousCommit,
  };
}

/** BERTH_INSTANCE_NAME, BERTH_INSTANCE_URL and the lease ttls (docs/scale-out.md, "Several Berth instances on one PostgreSQL"). */
function loadInstance(env: NodeJS.ProcessEnv): InstanceConfig {
  const name = env.BERTH_INSTANCE_NAME?.trim() || null;
  if (name !== null && !/^[a-z0-9][a-z0-9-]{0,39}$/.test(name)) throw new ConfigError(`BERTH_INSTANCE_NAME must be 1 to 40 lowercase letters, digits and dashes, starting with a letter or digit (got "${name}")`);
  const raw = env.BERTH_INSTANCE_URL?.trim() || null;
  let url: string | null = null;
  if (raw !== null) {
    let u: URL | null = null;
    try {
      u = new URL(raw);
    } catch {
      u = null;
    }
    if (!u || u.protocol !== 'http:' || !u.port || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username || u.password) {
      throw new ConfigError(`BERTH_INSTANCE_URL must be http://HOST:PORT, the address the other instances reach this instance's edge at (got "${raw}")`);
    }
    url = `http://${u.host}`;
  }
  return {
    name,
    url,
    leaderTtlMs: wholeSetting(env, 'BERTH_LEADER_TTL_MS', 10000, 1000, 600000),
    appOwnerTtlSeconds: wholeSetting(env, 'BERTH_APP_OWNER_TTL_SECONDS', 10, 2, 600),
  };
}

/** The public base URL: BERTH_PUBLIC_URL, else http://<host>:<port> of the bound server. */
export function publicUrlOf(config: Config, boundPort?: number): string {
  if (config.publicUrl) return config.publicUrl;
  const h = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const hostPart = h.includes(':') ? `[${h}]` : h;
  return `http://${hostPart}:${boundPort ?? config.port}`;
}

/**
 * Reads the secret key: from the config, else from <dataDir>/secret.key, else generates one there
 * (mode 0600). A malformed key file stops start-up with a clear message.
 */
export function resolveSecretKey(config: Config): Buffer {
  if (config.secretKey) return config.secretKey;
  mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, 'secret.key');
  if (existsSync(file)) return parseSecretKey(readFileSync(file, 'utf8'), file);
  const key = randomBytes(32);
  try {
    writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return parseSecretKey(readFileSync(file, 'utf8'), file);
    throw e;
  }
  chmodSync(file, 0o600);
  return key;
}
