/**
 * What each runtime can run (GET /api/services/kinds, contract section 19). The `sandbox` and
 * `process` runtimes run the host's Debian server binaries (postgresql-15, mariadb-server,
 * redis-server), so their versions are what is installed; MongoDB has no Debian package and runs
 * under `docker` only, from an image per kind (BERTH_IMAGE_POSTGRES, ...).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { invalid } from '../../lib/errors.js';

export const SERVICE_KINDS = ['postgres', 'mysql', 'redis', 'mongodb'] as const;
export type ServiceKind = (typeof SERVICE_KINDS)[number];
export type ServiceRuntime = 'sandbox' | 'process' | 'docker';

export interface KindOffer {
  kind: ServiceKind;
  /** What runs it: `PostgreSQL`, `MariaDB`, `Redis`, `MongoDB`. */
  engine: string;
  versions: string[];
  /** The version a create without `version` gets. */
  defaultVersion: string;
  /** The port it listens on inside the project's network. */
  port: number;
  /** The image it runs from (docker runtime only: BERTH_IMAGE_<KIND>). */
  image?: string;
}

export interface RuntimeOffer {
  runtime: ServiceRuntime;
  kinds: KindOffer[];
  /** Kinds this runtime cannot run, and why (naming what would). */
  unavailable: { kind: ServiceKind; reason: string }[];
}

export const DEFAULT_PORTS: Record<ServiceKind, number> = { postgres: 5432, mysql: 3306, redis: 6379, mongodb: 27017 };
const ENGINES: Record<ServiceKind, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB', redis: 'Redis', mongodb: 'MongoDB' };

/** The variable naming a kind's image under the docker runtime (`mysql` is MariaDB's). */
export const IMAGE_VARIABLES: Record<ServiceKind, string> = { postgres: 'BERTH_IMAGE_POSTGRES', mysql: 'BERTH_IMAGE_MYSQL', redis: 'BERTH_IMAGE_REDIS', mongodb: 'BERTH_IMAGE_MONGODB' };
/** The official images the docker runtime runs unless BERTH_IMAGE_<KIND> names another. */
export const DEFAULT_IMAGES: Record<ServiceKind, string> = { postgres: 'postgres:15', mysql: 'mariadb:11.4', redis: 'redis:7', mongodb: 'mongo:7' };

/** The image of a kind under the docker runtime. */
export function serviceImage(kind: ServiceKind, env: NodeJS.ProcessEnv): string {
  return env[IMAGE_VARIABLES[kind]]?.trim() || DEFAULT_IMAGES[kind];
}

/** What to do when a kind's image is missing and cannot be pulled (the service's error names it). */
export function imageFix(kind: ServiceKind): string {
  const local = kind === 'mongodb' ? '' : `; offline, scripts/docker-base-images.sh ${kind === 'mysql' ? 'mariadb' : kind} builds one from this host's Debian packages`;
  return `set ${IMAGE_VARIABLES[kind]} to an image of ${ENGINES[kind]} the Docker Engine has (default ${DEFAULT_IMAGES[kind]}${local})`;
}

/**
 * The version an image runs, from its tag: its leading number (`postgres:15` and `postgres:15.4-bookworm`
 * are `15`, `mariadb:11.4` is `11.4`); a tag without one (`latest`, none, a digest) is `latest`.
 */
export function imageVersion(image: string): string {
  const noDigest = image.split('@')[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  const tag = colon > slash ? noDigest.slice(colon + 1) : '';
  return /^\d+(?:\.\d+)*/.exec(tag)?.[0] ?? 'latest';
}

/** Where the host's binaries are (overridable for tests and unusual layouts). */
export function hostBinaries(env: NodeJS.ProcessEnv = process.env) {
  return {
    postgresRoot: env.BERTH_POSTGRES_LIB ?? '/usr/lib/postgresql',
    mariadbd: env.BERTH_MARIADBD_BIN ?? '/usr/sbin/mariadbd',
    mariadbInstallDb: env.BERTH_MARIADB_INSTALL_DB_BIN ?? '/usr/bin/mariadb-install-db',
    redisServer: env.BERTH_REDIS_SERVER_BIN ?? '/usr/bin/redis-server',
    /** PostgreSQL's programs look their uid up; a project's uid has no /etc/passwd entry (Debian: libnss-wrapper). */
    nssWrapper: env.BERTH_NSS_WRAPPER_LIB ?? '/usr/lib/x86_64-linux-gnu/libnss_wrapper.so',
  };
}

function versionOf(bin: string, args: string[], re: RegExp): Promise<string | null> {
  if (!existsSync(bin)) return Promise.resolve(null);
  return new Promise((resolve) => {
    execFile(bin, args, { timeout: 10_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } }, (err, stdout) => {
      const m = err ? null : re.exec(String(stdout));
      resolve(m ? m[1]! : null);
    });
  });
}

/** The PostgreSQL major versions installed the Debian way (`/usr/lib/postgresql/<major>/bin/postgres`), newest first. */
export function postgresVersions(root = hostBinaries().postgresRoot): string[] {
  let dirs: string[] = [];
  try {
    dirs = readdirSync(root);
  } catch {
    return [];
  }
  return dirs.filter((d) => /^\d+$/.test(d) && existsSync(path.join(root, d, 'bin', 'postgres')) && existsSync(path.join(root, d, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
}

async function hostOffer(runtime: 'sandbox' | 'process'): Promise<RuntimeOffer> {
  const bins = hostBinaries();
  const kinds: KindOffer[] = [];
  const unavailable: RuntimeOffer['unavailable'] = [];
  const pg = postgresVersions(bins.postgresRoot);
  if (pg.length && !existsSync(bins.nssWrapper)) unavailable.push({ kind: 'postgres', reason: 'PostgreSQL needs nss_wrapper to run under a project\'s uid (Debian: apt-get install libnss-wrapper)' });
  else if (pg.length) kinds.push(offer('postgres', pg));
  else unavailable.push({ kind: 'postgres', reason: 'PostgreSQL is not installed on this host (Debian: apt-get install postgresql-15)' });
  const maria = existsSync(bins.mariadbInstallDb) ? await versionOf(bins.mariadbd, ['--version'], /Ver (\d+\.\d+)\.\d+-MariaDB/) : null;
  if (maria) kinds.push(offer('mysql', [maria]));
  else unavailable.push({ kind: 'mysql', reason: 'MariaDB is not installed on this host (Debian: apt-get install mariadb-server)' });
  const redis = await versionOf(bins.redisServer, ['--version'], /v=(\d+\.\d+)\.\d+/);
  if (redis) kinds.push(offer('redis', [redis]));
  else unavailable.push({ kind: 'redis', reason: 'Redis is not installed on this host (Debian: apt-get install redis-server)' });
  unavailable.push({ kind: 'mongodb', reason: `MongoDB has no Debian package: it runs only under the docker runtime (BERTH_RUNTIME=docker), not ${runtime}` });
  return { runtime, kinds, unavailable };
}

function offer(kind: ServiceKind, versions: string[]): KindOffer {
  return { kind, engine: ENGINES[kind], versions, defaultVersion: versions[0]!, port: DEFAULT_PORTS[kind] };
}

/** The docker runtime offers each kind in the one version its configured image runs (BERTH_IMAGE_<KIND>). */
export function dockerOffer(env: NodeJS.ProcessEnv): RuntimeOffer {
  return { runtime: 'docker', kinds: SERVICE_KINDS.map((k) => ({ ...offer(k, [imageVersion(serviceImage(k, env))]), image: serviceImage(k, env) })), unavailable: [] };
}

/** Every runtime's offer (the host's binaries are looked at once per server: `holder` is the area's state). */
export function runtimeOffers(holder: { offers: Promise<RuntimeOffer[]> | null }, images: NodeJS.ProcessEnv = {}): Promise<RuntimeOffer[]> {
  holder.offers ??= Promise.all([hostOffer('sandbox'), hostOffer('process')]).then(([s, p]) => [s, dockerOffer(images), p]);
  return holder.offers;
}

/** The kind and version a create asks for, checked against what `runtime` offers: a 400 naming the field otherwise. */
export async function chooseVersion(holder: { offers: Promise<RuntimeOffer[]> | null }, images: NodeJS.ProcessEnv, runtime: ServiceRuntime, kind: ServiceKind, version: string | undefined): Promise<KindOffer & { version: string }> {
  const offers = (await runtimeOffers(holder, images)).find((o) => o.runtime === runtime)!;
  const k = offers.kinds.find((o) => o.kind === kind);
  if (!k) {
    const why = offers.unavailable.find((u) => u.kind === kind)?.reason ?? `${kind} is not offered by the ${runtime} runtime`;
    throw invalid('kind', `kind: ${why}`);
  }
  const v = version ?? k.defaultVersion;
  if (!k.versions.includes(v)) throw invalid('version', `version: ${ENGINES[kind]} ${v} is not offered by the ${runtime} runtime (offered: ${k.versions.join(', ')})`);
  return { ...k, version: v };
}
