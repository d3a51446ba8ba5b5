import { createHash } from 'node:crypto';
import type { Db } from '../../db/client.js';
import { invalid } from '../../lib/errors.js';
import { decryptSecret, encryptSecret, type Keyring } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { projectEnv, projectQueries, projectTransfers, buildConfigOf, newVerificationValue, type ProjectRows } from '../projects/index.js';
import { serviceDefinitions, type ServiceDefinition } from '../services/index.js';
import { currentForProject } from '../uploads/index.js';
import type { Bundle } from './bundle.schema.js';

/**
 * A project's rows as a bundle and back: built from the rows (secrets decrypted in memory), its
 * digest (what a transfer verifies), its summary (names only), its checks beyond the schema, and
 * written back as rows (secrets encrypted under this instance's key). The schema is
 * bundle.schema.ts; sealing secret values for the wire, seal.ts.
 */
export { BundleSchema, type Bundle } from './bundle.schema.js';

/** A project's rows and its current uploaded source archive (folder-upload projects). */
export interface BundleRows extends ProjectRows {
  sourceArchive: { sha256: string; sizeBytes: number } | null;
  /** Production's managed services (services area), definitions only. */
  managedServices: ServiceDefinition[];
}

/** Reads what a bundle is made of: the project's rows (projects area) and its source archive's hash (uploads area). */
export async function readBundleRows(db: Db, orgId: string, projectId: string): Promise<BundleRows | undefined> {
  const rows = await projectTransfers.exportProject(db, orgId, projectId);
  if (!rows) return undefined;
  const upload = await currentForProject(db, orgId, projectId);
  const managedServices = await serviceDefinitions(db, orgId, projectId);
  return { ...rows, managedServices, sourceArchive: upload?.sha256 && upload.sizeBytes != null ? { sha256: upload.sha256, sizeBytes: upload.sizeBytes } : null };
}

/** Builds the bundle of a project from its rows, decrypting secrets in memory. */
export function bundleFromRows(keyring: Keyring, rows: BundleRows): Bundle {
  const p = rows.project;
  let resources: Record<string, unknown> = {};
  try {
    resources = JSON.parse(p.resources) as Record<string, unknown>;
  } catch {
    resources = {};
  }
  return {
    version: 1,
    project: {
      id: p.id,
      name: p.name,
      slug: p.slug,
      status: p.status === 'disabled' ? 'disabled' : 'enabled',
      config: { ...buildConfigOf(p), nodeVersion: p.nodeVersion },
      source: {
        type: p.sourceType as 'git' | 'upload' | 'none',
        gitProvider: p.gitProvider,
        gitOwner: p.gitOwner,
        gitRepo: p.gitRepo,
        gitBranch: p.gitBranch,
      },
      sleepMode: p.sleepMode === 'auto_sleep' ? 'auto_sleep' : 'always_on',
      autoDeploy: p.autoDeploy === 1,
      webhookDomain: p.webhookDomain,
      resources,
    },
    environments: rows.environments.map((e) => ({ name: e.name, type: e.type === 'preview' ? 'preview' : 'production', branch: e.branch })),
    env: rows.envVars.map((v) => ({
      environment: v.environment,
      key: v.key,
      value: decryptSecret(keyring, v.value, projectEnv.envAad(v.projectId, v.environment, v.key)),
      isSecret: v.isSecret === 1,
    })),
    domains: rows.domains.map((d) => ({ domain: d.domain, primary: d.isPrimary === 1 })),
    routeRules: rows.routeRules.map((r) => ({
      kind: r.kind as 'rate-limit' | 'ban' | 'allow-deny',
      enabled: r.enabled === 1,
      path: r.path,
      config: JSON.parse(r.config) as Record<string, unknown>,
      createdAt: r.createdAt,
    })),
    services: rows.services.map((s) => ({
      kind: s.kind === 'postgres' ? 'postgres' : 'volume',
      name: s.name,
      connectionUrl: s.connectionUrl ? decryptSecret(keyring, s.connectionUrl, `service:${s.projectId}:${s.name}`) : null,
    })),
    managedServices: rows.managedServices.map((s) => ({ ...s, resources: { ...s.resources } })),
    cloneCredential: rows.cloneCredential
      ? { username: rows.cloneCredential.username, token: decryptSecret(keyring, rows.cloneCredential.token, `clone-token:${rows.cloneCredential.projectId}`) }
      : null,
    sourceArchive: rows.sourceArchive,
  };
}

/** JSON with object keys sorted at every level: the same data always gives the same text. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The digest a transfer verifies: SHA-256 of the canonical bundle, secret values included, without
 * what a copy may legitimately change (the project id and slug). Two copies with the same config,
 * env set (values too), domains, route rules, resources, services, managed services' definitions and clone credential have the
 * same digest. It is computed where the secrets are already in memory and never sent anywhere.
 */
export function bundleDigest(b: Bundle): string {
  const { id: _id, slug: _slug, ...project } = b.project;
  const doc = {
    project,
    environments: [...b.environments].sort((x, y) => byText(x.name, y.name)),
    env: [...b.env].sort((x, y) => byText(`${x.environment}\0${x.key}`, `${y.environment}\0${y.key}`)),
    domains: [...b.domains].sort((x, y) => byText(x.domain, y.domain)),
    routeRules: b.routeRules.map(canonicalJson).sort(byText),
    services: [...b.services].sort((x, y) => byText(x.name, y.name)),
    managedServices: [...(b.managedServices ?? [])].sort((x, y) => byText(x.name, y.name)),
    cloneCredential: b.cloneCredential,
    sourceArchive: b.sourceArchive ?? null,
  };
  return createHash('sha256').update(canonicalJson(doc)).digest('hex');
}

/** Names only (never values) of what a bundle carries: for audit events and transfer answers. */
export function bundleSummary(b: Bundle) {
  return {
    envVars: b.env.length,
    secrets: b.env.filter((e) => e.isSecret).length,
    domains: b.domains.map((d) => d.domain),
    routeRules: b.routeRules.length,
    services: b.services.map((s) => s.name),
    managedServices: (b.managedServices ?? []).map((s) => s.name),
    environments: b.environments.map((e) => e.name),
  };
}

/** Checks of a bundle beyond its schema (field named on error). */
export function checkBundle(b: Bundle): void {
  const envNames = new Set(b.environments.map((e) => e.name));
  if (envNames.size !== b.environments.length) throw invalid('environments', 'environment names must be unique');
  const seen = new Set<string>();
  b.env.forEach((e, i) => {
    if (!envNames.has(e.environment)) throw invalid(`env.${i}.environment`, `env.${i}.environment names an environment the bundle does not have`);
    const k = `${e.environment}\0${e.key}`;
    if (seen.has(k)) throw invalid(`env.${i}.key`, `env.${i}.key is repeated in its environment`);
    seen.add(k);
  });
  if (new Set(b.domains.map((d) => d.domain)).size !== b.domains.length) throw invalid('domains', 'domains must be unique');
  if (b.domains.filter((d) => d.primary).length > 1) throw invalid('domains', 'at most one domain can be primary');
  if (new Set(b.services.map((s) => s.name)).size !== b.services.length) throw invalid('services', 'service names must be unique');
  const managed = b.managedServices ?? [];
  if (new Set(managed.map((s) => s.name)).size !== managed.length) throw invalid('managedServices', 'managed service names must be unique');
  const attached = new Set(b.services.map((s) => s.name));
  managed.forEach((s, i) => {
    if (attached.has(s.name)) throw invalid(`managedServices.${i}.name`, `managedServices.${i}.name is also the name of an attached service`);
  });
}

// ---------------------------------------------------------------- writing a bundle

export interface WriteBundleOptions {
  orgId: string;
  projectId: string;
  slug: string;
  location: 'local' | 'cloud';
  now: string;
  /** Replace the rows of an existing project (to-self-hosted) instead of inserting a new one. */
  replace: boolean;
  /** Kept from the existing row on replace. */
  createdAt?: string;
  /**
   * This instance's domain verification: with `none` the copied domains are verified at once; with
   * `dns` they must be proven here (a proof made on another instance does not count), except the
   * claims this project already had verified on this instance (replace), which are kept.
   */
  domainVerification: 'none' | 'dns';
}

/** The project row's columns a bundle sets (kept apart from who owns it and when it was made). */
function projectColumns(p: Bundle['project'], o: WriteBundleOptions) {
  return {
    name: p.name,
    status: p.status,
    location: o.location,
    framework: p.config.framework,
    installCommand: p.config.installCommand,
    buildCommand: p.config.buildCommand,
    startCommand: p.config.startCommand,
    outputDirectory: p.config.outputDirectory,
    rootDirectory: p.config.rootDirectory,
    port: p.config.port,
    packageManager: p.config.packageManager,
    runtime: p.config.runtime,
    nodeVersion: p.config.nodeVersion,
    sourceType: p.source.type,
    gitProvider: p.source.gitProvider,
    gitOwner: p.source.gitOwner,
    gitRepo: p.source.gitRepo,
    gitBranch: p.source.gitBranch,
    localPath: null,
    sleepMode: p.sleepMode,
    autoDeploy: p.autoDeploy ? 1 : 0,
    webhookDomain: p.webhookDomain,
    resources: JSON.stringify(p.resources),
    updatedAt: o.now,
  };
}

/** Writes a bundle's rows, encrypting every secret under this instance's key. Call inside a transaction. */
export async function writeBundle(tx: Db, keyring: Keyring, b: Bundle, o: WriteBundleOptions): Promise<void> {
  const columns = projectColumns(b.project, o);
  const claims = new Map(o.replace ? (await projectQueries.listDomains(tx, o.orgId, o.projectId)).map((d) => [d.domain, d]) : []);
  const target = o.replace
    ? { replace: true as const, orgId: o.orgId, projectId: o.projectId, columns }
    : { replace: false as const, project: { id: o.projectId, orgId: o.orgId, slug: o.slug, webhookId: null, createdAt: o.now, ...columns } };
  const id = o.projectId;
  await projectTransfers.importProject(tx, target, {
    environments: b.environments.map((e) => ({ id: newId('env'), orgId: o.orgId, projectId: id, name: e.name, type: e.type, branch: e.branch, envRevision: 0, createdAt: o.now })),
    envVars: b.env.map((v) => ({
      id: newId('evr'),
      orgId: o.orgId,
      projectId: id,
      environment: v.environment,
      key: v.key,
      value: encryptSecret(keyring, v.value, projectEnv.envAad(id, v.environment, v.key)),
      isSecret: v.isSecret ? 1 : 0,
      createdAt: o.now,
      updatedAt: o.now,
    })),
    domains: b.domains.map((d) => {
      const had = claims.get(d.domain);
      return {
        id: newId('dom'),
        orgId: o.orgId,
        projectId: id,
        domain: d.domain,
        isPrimary: d.primary ? 1 : 0,
        verification: had?.verification ?? newVerificationValue(),
        verifiedAt: had?.verifiedAt ?? (o.domainVerification === 'none' ? o.now : null),
        createdAt: o.now,
      };
    }),
    routeRules: b.routeRules.map((r) => ({
      id: newId('rr'),
      orgId: o.orgId,
      projectId: id,
      kind: r.kind,
      enabled: r.enabled ? 1 : 0,
      path: r.path,
      config: JSON.stringify(r.config),
      createdAt: r.createdAt,
      updatedAt: o.now,
    })),
    services: b.services.map((s) => ({
      id: newId('svc'),
      orgId: o.orgId,
      projectId: id,
      kind: s.kind,
      name: s.name,
      connectionUrl: s.connectionUrl ? encryptSecret(keyring, s.connectionUrl, `service:${id}:${s.name}`) : null,
      createdAt: o.now,
    })),
    cloneCredential: b.cloneCredential
      ? { projectId: id, orgId: o.orgId, username: b.cloneCredential.username, token: encryptSecret(keyring, b.cloneCredential.token, `clone-token:${id}`), updatedAt: o.now }
      : null,
  });
}

