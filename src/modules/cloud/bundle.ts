import { createCipheriv, createDecipheriv, createHash, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../../db/client.js';
import { invalid } from '../../lib/errors.js';
import { Obj, Str } from '../../http/schemas.js';
import { decryptSecret, encryptSecret, type Keyring } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { envAad, ENV_KEY_RE } from '../projects/env.service.js';
import { clearBundleRows, insertBundleRows, insertProjectRow, updateProjectRow, type ProjectRows } from './cloud.store.js';

/**
 * A project bundle: everything a transfer moves (config, source, env with secret values, domains,
 * route rules, resources, services, clone credential). In clear it only ever lives in memory; on
 * the wire to the cloud it rides in the body of `POST /api/projects/import-bundle` (like an env
 * PATCH, over the link's TLS); from the cloud every secret value is sealed to a one-time key of the
 * requesting instance (see sealBundle).
 */
const NStr = (max = 1024) => Type.Union([Str({ max }), Type.Null()]);

export const BundleSchema = Obj({
  version: Type.Literal(1),
  project: Obj({
    id: Str({ max: 64 }),
    name: Str({ min: 1, max: 200 }),
    slug: Str({ min: 1, max: 63, pattern: '^[a-z0-9][a-z0-9-]*$' }),
    status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
    config: Obj({
      framework: NStr(64),
      installCommand: NStr(4096),
      buildCommand: NStr(4096),
      startCommand: NStr(4096),
      outputDirectory: NStr(1024),
      rootDirectory: NStr(1024),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      packageManager: NStr(64),
      runtime: NStr(64),
      nodeVersion: NStr(64),
    }),
    source: Obj({
      type: Type.Union([Type.Literal('git'), Type.Literal('upload'), Type.Literal('none')]),
      gitProvider: NStr(64),
      gitOwner: NStr(100),
      gitRepo: NStr(200),
      gitBranch: NStr(255),
    }),
    sleepMode: Type.Union([Type.Literal('auto_sleep'), Type.Literal('always_on')]),
    autoDeploy: Type.Boolean(),
    webhookDomain: NStr(253),
    resources: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 }),
  }),
  environments: Type.Array(Obj({ name: Str({ min: 1, max: 64 }), type: Type.Union([Type.Literal('production'), Type.Literal('preview')]), branch: NStr(255) }), {
    maxItems: 100,
  }),
  env: Type.Array(
    Obj({
      environment: Str({ min: 1, max: 64 }),
      key: Str({ min: 1, max: 256, pattern: ENV_KEY_RE.source }),
      value: Str({ max: 128 * 1024 }),
      isSecret: Type.Boolean(),
    }),
    { maxItems: 20_000 },
  ),
  domains: Type.Array(Obj({ domain: Str({ min: 1, max: 253 }), primary: Type.Boolean() }), { maxItems: 500 }),
  routeRules: Type.Array(
    Obj({
      kind: Type.Union([Type.Literal('rate-limit'), Type.Literal('ban'), Type.Literal('allow-deny')]),
      enabled: Type.Boolean(),
      path: NStr(1024),
      config: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 }),
      createdAt: Str({ max: 40 }),
    }),
    { maxItems: 1000 },
  ),
  services: Type.Array(
    Obj({ kind: Type.Union([Type.Literal('volume'), Type.Literal('postgres')]), name: Str({ min: 1, max: 64 }), connectionUrl: NStr(4096) }),
    { maxItems: 100 },
  ),
  cloneCredential: Type.Union([Obj({ username: NStr(255), token: Str({ min: 1, max: 4096 }) }), Type.Null()]),
  /** The uploaded source archive's hash and size; the archive itself moves separately (source-archive routes). */
  sourceArchive: Type.Optional(Type.Union([Obj({ sha256: Str({ min: 64, max: 64, pattern: '^[0-9a-f]{64}$' }), sizeBytes: Type.Integer({ minimum: 0 }) }), Type.Null()])),
});
export type Bundle = Static<typeof BundleSchema>;

// ---------------------------------------------------------------- rows <-> bundle

/** Builds the bundle of a project from its rows, decrypting secrets in memory. */
export function bundleFromRows(keyring: Keyring, rows: ProjectRows): Bundle {
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
      config: {
        framework: p.framework,
        installCommand: p.installCommand,
        buildCommand: p.buildCommand,
        startCommand: p.startCommand,
        outputDirectory: p.outputDirectory,
        rootDirectory: p.rootDirectory,
        port: p.port,
        packageManager: p.packageManager,
        runtime: p.runtime,
        nodeVersion: p.nodeVersion,
      },
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
      value: decryptSecret(keyring, v.value, envAad(v.projectId, v.environment, v.key)),
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
 * env set (values too), domains, route rules, resources, services and clone credential have the
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
}

/** Writes a bundle's rows, encrypting every secret under this instance's key. Call inside a transaction. */
export async function writeBundle(tx: Db, keyring: Keyring, b: Bundle, o: WriteBundleOptions): Promise<void> {
  const p = b.project;
  const columns = {
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
  if (o.replace) {
    await updateProjectRow(tx, o.orgId, o.projectId, columns);
    await clearBundleRows(tx, o.orgId, o.projectId);
  } else {
    await insertProjectRow(tx, { id: o.projectId, orgId: o.orgId, slug: o.slug, webhookId: null, createdAt: o.now, ...columns });
  }
  const id = o.projectId;
  await insertBundleRows(tx, {
    environments: b.environments.map((e) => ({ id: newId('env'), orgId: o.orgId, projectId: id, name: e.name, type: e.type, branch: e.branch, envRevision: 0, createdAt: o.now })),
    envVars: b.env.map((v) => ({
      id: newId('evr'),
      orgId: o.orgId,
      projectId: id,
      environment: v.environment,
      key: v.key,
      value: encryptSecret(keyring, v.value, envAad(id, v.environment, v.key)),
      isSecret: v.isSecret ? 1 : 0,
      createdAt: o.now,
      updatedAt: o.now,
    })),
    domains: b.domains.map((d) => ({ id: newId('dom'), orgId: o.orgId, projectId: id, domain: d.domain, isPrimary: d.primary ? 1 : 0, createdAt: o.now })),
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

// ---------------------------------------------------------------- sealing (export answers)

/**
 * Secret values leave the cloud only sealed to a one-time X25519 key of the instance that asked:
 * ECDH with a one-time key of the cloud, HKDF-SHA256 (salt: both public keys), AES-256-GCM per
 * value with the value's place as AAD. A log line, proxy or cache that sees the export answer sees
 * no secret; only the process holding the private key (in memory, for one transfer) can open them.
 */
const SEAL_INFO = Buffer.from('berth-export-v1');

export interface RecipientKey {
  /** base64url raw X25519 public key, sent with the export request. */
  publicKey: string;
  privateKey: KeyObject;
}

export function newRecipientKey(): RecipientKey {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return { publicKey: publicKey.export({ format: 'jwk' }).x!, privateKey };
}

function publicKeyFromRaw(x: string): KeyObject {
  if (!/^[A-Za-z0-9_-]{43}$/.test(x)) throw invalid('recipientKey', 'recipientKey must be a base64url X25519 public key (43 characters)');
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x }, format: 'jwk' });
  } catch {
    throw invalid('recipientKey', 'recipientKey is not a valid X25519 public key');
  }
}

function sealKey(shared: Buffer, senderPub: string, recipientPub: string): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(`${senderPub}.${recipientPub}`), SEAL_INFO, 32));
}

export interface SealedBundle {
  bundle: Bundle;
  sealing: { alg: 'X25519-HKDF-SHA256-A256GCM'; senderKey: string; recipientKey: string };
}

const ENV_PLACE = (e: { environment: string; key: string }) => `env:${e.environment}:${e.key}`;

/** Returns a copy of `b` whose env values, service URLs and clone token are sealed to `recipientKey`. */
export function sealBundle(b: Bundle, recipientKey: string): SealedBundle {
  const recipient = publicKeyFromRaw(recipientKey);
  const sender = generateKeyPairSync('x25519');
  const senderPub = sender.publicKey.export({ format: 'jwk' }).x!;
  const key = sealKey(diffieHellman({ privateKey: sender.privateKey, publicKey: recipient }), senderPub, recipientKey);
  const seal = (value: string, place: string) => {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(Buffer.from(place));
    const ct = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return `s1.${iv.toString('base64url')}.${c.getAuthTag().toString('base64url')}.${ct.toString('base64url')}`;
  };
  return {
    bundle: {
      ...b,
      env: b.env.map((e) => ({ ...e, value: seal(e.value, ENV_PLACE(e)) })),
      services: b.services.map((s) => ({ ...s, connectionUrl: s.connectionUrl === null ? null : seal(s.connectionUrl, `service:${s.name}`) })),
      cloneCredential: b.cloneCredential ? { ...b.cloneCredential, token: seal(b.cloneCredential.token, 'clone-token') } : null,
    },
    sealing: { alg: 'X25519-HKDF-SHA256-A256GCM', senderKey: senderPub, recipientKey },
  };
}

/** Opens a sealed bundle with the private half of the one-time key. Throws on any tampering. */
export function openBundle(s: SealedBundle, recipient: RecipientKey): Bundle {
  if (s.sealing?.recipientKey !== recipient.publicKey) throw new Error('the export was sealed to another key');
  const sender = publicKeyFromRaw(s.sealing.senderKey);
  const key = sealKey(diffieHellman({ privateKey: recipient.privateKey, publicKey: sender }), s.sealing.senderKey, recipient.publicKey);
  const open = (sealed: string, place: string) => {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 's1') throw new Error('unrecognised sealed value');
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[1]!, 'base64url'));
    d.setAAD(Buffer.from(place));
    d.setAuthTag(Buffer.from(parts[2]!, 'base64url'));
    return Buffer.concat([d.update(Buffer.from(parts[3]!, 'base64url')), d.final()]).toString('utf8');
  };
  const b = s.bundle;
  return {
    ...b,
    env: b.env.map((e) => ({ ...e, value: open(e.value, ENV_PLACE(e)) })),
    services: b.services.map((x) => ({ ...x, connectionUrl: x.connectionUrl === null ? null : open(x.connectionUrl, `service:${x.name}`) })),
    cloneCredential: b.cloneCredential ? { ...b.cloneCredential, token: open(b.cloneCredential.token, 'clone-token') } : null,
  };
}
