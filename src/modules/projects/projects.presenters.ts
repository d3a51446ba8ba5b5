/**
 * Projects area presenters: project and environment rows to their API shapes, and the
 * TypeBox schemas of the core project routes' success payloads (the `data` of `{ data }`). The
 * server serialises each answer by its schema: a field not listed here is not sent.
 */
import { Type, type Static } from '@sinclair/typebox';
import { NullableStr } from '../../http/schemas.js';
import type { AppContext } from '../../context.js';
import { branchSlug, edgeUrlOf, previewHost } from './preview-domains.js';
import type { DomainRow } from './domains.store.js';
import type { EnvironmentRow } from './environments.store.js';
import type { ProjectRow } from './projects.store.js';

// ---------------------------------------------------------------- schema helpers (this area's presenters)

/** string | null, as one JSON type list (fast to serialise, valid OpenAPI 3.1). */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });

// ---------------------------------------------------------------- project (contract section 5)

export const ProjectConfigSchema = Type.Object({
  framework: NullableStr(),
  installCommand: NullableStr(),
  buildCommand: NullableStr(),
  startCommand: NullableStr(),
  outputDirectory: NullableStr(),
  rootDirectory: NullableStr(),
  port: Type.Integer(),
  packageManager: NullableStr(),
  runtime: NullableStr(),
  /** The Dockerfile the docker runtime builds, relative to the root directory (contract section 13); null: `Dockerfile`. */
  dockerfile: NullableStr(),
  /** Plain HTTP answers 308 to https:// (contract section 14); null: the default, on once the project's host has a certificate. */
  httpsRedirect: Type.Union([Type.Boolean(), Type.Null()]),
  /** Responses over TLS carry `Strict-Transport-Security` (contract section 14). */
  hsts: Type.Boolean(),
  /** The path a running app is checked at every 30 s (contract section 20); null: a TCP connect to its port. */
  healthPath: NullableStr(),
  /** A degraded app's previous ready release serves again (contract section 20). */
  autoRollback: Type.Boolean(),
  /** How the edge serves the project's static releases (contract section 11); `spa: null` is the plan's default. */
  static: Type.Object({ outputDirectory: NullableStr(), spa: Type.Union([Type.Boolean(), Type.Null()]), cleanUrls: Type.Boolean() }),
});

export const ProjectSourceSchema = Type.Object({
  type: OneOf(['git', 'local', 'upload', 'none'] as const),
  gitProvider: NullableStr(),
  gitOwner: NullableStr(),
  gitRepo: NullableStr(),
  gitBranch: NullableStr(),
  localPath: NullableStr(),
});

const projectFields = {
  id: Type.String(),
  orgId: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  status: OneOf(['enabled', 'disabled'] as const),
  location: OneOf(['local', 'cloud'] as const),
  config: ProjectConfigSchema,
  source: ProjectSourceSchema,
  routes: Type.Object({
    freeDomain: Type.String(),
    /** The host the project is served at: its primary custom domain once verified, else the free domain. */
    primaryDomain: Type.String(),
    domains: Type.Array(Type.Object({ domain: Type.String(), primary: Type.Boolean(), verified: Type.Boolean(), createdAt: Type.String() })),
    /** The hosts of the project's preview environments (`<branch-slug>--<project-slug>.<apps domain>`, contract section 16), oldest first. */
    previewDomains: Type.Array(Type.String()),
  }),
  sleepMode: OneOf(['auto_sleep', 'always_on'] as const),
  autoDeploy: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
};

/** GET /api/projects/:id and every route that answers the project. */
export const ProjectSchema = Type.Object(projectFields);
export type ProjectRecord = Static<typeof ProjectSchema>;

/** The home feed: a cloud project's live record also names its id on the cloud. */
export const HomeSchema = Type.Object({
  projects: Type.Array(Type.Object({ ...projectFields, cloudId: Type.Optional(Type.String()) })),
  cloudUnreachable: Type.Boolean(),
});

export function freeDomainOf(ctx: AppContext, slug: string): string {
  return `${slug}.${ctx.config.appsDomain}`;
}

/**
 * The host a project is served at: its primary custom domain once verified (the edge routes only
 * verified domains), else its free domain. The info URL and the record's `primaryDomain` use it.
 */
export function servingDomain(ctx: AppContext, slug: string, domains: readonly DomainRow[]): string {
  return domains.find((d) => d.isPrimary === 1 && d.verifiedAt !== null)?.domain ?? freeDomainOf(ctx, slug);
}

/** `previewSlugs`: the slugs of the project's preview environments (`environments.slug`), oldest first. */
/**
 * A project's build settings as every answer that shows them writes them: the project record's
 * `config` (with its serving options) and a transfer's bundle (with the Node version).
 */
export function buildConfigOf(p: ProjectRow) {
  return {
    framework: p.framework,
    installCommand: p.installCommand,
    buildCommand: p.buildCommand,
    startCommand: p.startCommand,
    outputDirectory: p.outputDirectory,
    rootDirectory: p.rootDirectory,
    port: p.port,
    packageManager: p.packageManager,
    runtime: p.runtime,
  };
}

/**
 * The record's `config`: the build settings with the serving options added to the same object. Not
 * `{ ...buildConfigOf(p), dockerfile, ... }`: a spread followed by more properties cost 15-20 µs per
 * record on Node 20's V8 (docs/decisions.md, "Object spread on request paths").
 */
function projectConfigOf(p: ProjectRow): ProjectRecord['config'] {
  const c = buildConfigOf(p) as ProjectRecord['config'];
  c.dockerfile = p.dockerfile;
  c.httpsRedirect = p.httpsRedirect === null ? null : p.httpsRedirect === 1;
  c.hsts = p.hsts === 1;
  c.healthPath = p.healthPath;
  c.autoRollback = p.autoRollback === 1;
  c.static = { outputDirectory: p.outputDirectory, spa: p.staticSpa === null ? null : p.staticSpa === 1, cleanUrls: p.staticCleanUrls === 1 };
  return c;
}

export function projectRecord(ctx: AppContext, p: ProjectRow, domains: DomainRow[], previewSlugs: readonly string[] = []): ProjectRecord {
  const freeDomain = freeDomainOf(ctx, p.slug);
  return {
    id: p.id,
    orgId: p.orgId,
    name: p.name,
    slug: p.slug,
    status: p.status as ProjectRecord['status'],
    location: p.location as ProjectRecord['location'],
    config: projectConfigOf(p),
    source: {
      type: p.sourceType as ProjectRecord['source']['type'],
      gitProvider: p.gitProvider,
      gitOwner: p.gitOwner,
      gitRepo: p.gitRepo,
      gitBranch: p.gitBranch,
      localPath: p.localPath,
    },
    routes: {
      freeDomain,
      primaryDomain: servingDomain(ctx, p.slug, domains),
      domains: domains.map((d) => ({ domain: d.domain, primary: d.isPrimary === 1, verified: d.verifiedAt !== null, createdAt: d.createdAt })),
      previewDomains: previewSlugs.map((slug) => previewHost(ctx, p.slug, slug)),
    },
    sleepMode: p.sleepMode as ProjectRecord['sleepMode'],
    autoDeploy: p.autoDeploy === 1,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

// ---------------------------------------------------------------- domains (contract section 12)

/** The DNS name whose TXT record proves a claim on `domain`. */
export const challengeName = (domain: string): string => `_berth-challenge.${domain}`;

export const DomainSchema = Type.Object({
  domain: Type.String(),
  primary: Type.Boolean(),
  verified: Type.Boolean(),
  /** While unverified: the TXT record that proves the claim (`POST .../verify` checks it). */
  verification: Type.Optional(Type.Object({ type: Type.Literal('TXT'), name: Type.String(), value: Type.String() })),
  /**
   * The domain's certificate (contract section 14), from the certificates area: `none` without one (or
   * without an HTTPS port); `expiresAt` and `issuer` of the certificate held; `error` of the last failure.
   */
  tls: Type.Object({
    status: OneOf(['none', 'pending', 'issued', 'failed'] as const),
    expiresAt: Type.Optional(Type.String()),
    issuer: Type.Optional(Type.String()),
    error: Type.Optional(Type.String()),
  }),
  createdAt: Type.String(),
});
export type DomainRecord = Static<typeof DomainSchema>;

export function domainRecord(d: DomainRow, tls: DomainRecord['tls'] = { status: 'none' }): DomainRecord {
  return {
    domain: d.domain,
    primary: d.isPrimary === 1,
    verified: d.verifiedAt !== null,
    ...(d.verifiedAt === null ? { verification: { type: 'TXT' as const, name: challengeName(d.domain), value: d.verification } } : {}),
    tls,
    createdAt: d.createdAt,
  };
}

/** DELETE answer: the domain removed, and what the project is served at now (its free domain when the primary went). */
export const DomainDeletedSchema = Type.Object({
  domain: Type.String(),
  deleted: Type.Literal(true),
  /** `routes.primaryDomain` after the removal. */
  primaryDomain: Type.String(),
});
export type DomainDeleted = Static<typeof DomainDeletedSchema>;

// ---------------------------------------------------------------- environments

export const EnvironmentSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: OneOf(['production', 'preview'] as const),
  branch: NullableStr(),
  /** A preview's own host, `<branch-slug>--<project-slug>.<apps domain>` (contract section 16); null for production. */
  domain: NullableStr(),
  /** Where the environment is served: production's primary domain, a preview's own host (scheme and edge port included). */
  url: Type.String(),
  createdAt: Type.String(),
});
export type EnvironmentRecord = Static<typeof EnvironmentSchema>;

/** `productionHost`: the host production is served at (its primary domain once verified, else the free domain). */
export function environmentRecord(ctx: AppContext, project: { slug: string }, e: EnvironmentRow, productionHost: string): EnvironmentRecord {
  const domain = e.type === 'preview' && e.slug ? previewHost(ctx, project.slug, e.slug) : null;
  // A preview without a stored host (copied by a transfer) gets one on its next ensure; until then its URL is the one it would get.
  const host = e.type !== 'preview' ? productionHost : (domain ?? previewHost(ctx, project.slug, branchSlug(e.branch ?? e.name, project.slug)));
  return {
    id: e.id,
    name: e.name,
    type: e.type as EnvironmentRecord['type'],
    branch: e.branch,
    domain,
    url: edgeUrlOf(ctx, host, e.type === 'preview'),
    createdAt: e.createdAt,
  };
}

// ---------------------------------------------------------------- lifecycle answers

export const OptionsSchema = Type.Object({
  installCommand: NullableStr(),
  buildCommand: NullableStr(),
  startCommand: NullableStr(),
  outputDirectory: NullableStr(),
  rootDirectory: NullableStr(),
  nodeVersion: NullableStr(),
});
export type OptionsRecord = Static<typeof OptionsSchema>;

export const RoutingAttemptSchema = Type.Object({
  attemptId: Type.String(),
  domain: Type.String(),
  status: OneOf(['recorded', 'synced', 'failed'] as const),
  error: NullableStr(),
  attemptedAt: Type.String(),
});
export type RoutingAttemptRecord = Static<typeof RoutingAttemptSchema>;

export const InfoSchema = Type.Object({
  runtime: Type.Object({
    state: Type.String({ description: 'running, degraded, starting, crashed, sleeping, stopped, failed, not_deployed or static' }),
    /** Why the app is `degraded` (its health checks fail, or it keeps restarting: contract section 20), and since when. */
    reason: Type.Optional(Type.String()),
    degradedSince: Type.Optional(Type.String()),
    url: Type.String(),
    port: Type.Integer(),
    pid: Type.Optional(Type.Integer()),
    startedAt: Type.Optional(Type.String()),
    /** How the app is isolated (the runtime driver: `sandbox`, `process`), and whether its limits are enforced. */
    isolation: Type.Optional(Type.String()),
    limitsEnforced: Type.Optional(Type.Boolean()),
    limitsNote: Type.Optional(Type.String()),
    disk: Type.Optional(
      Type.Object(
        {
          limitMb: Type.Number(),
          usedMb: Type.Number(),
          enforced: Type.Boolean(),
          note: Type.Optional(Type.String({ description: 'why the limit is not enforced, naming the fix' })),
        },
        { description: "the production volume's disk limit (resources.production.diskMb) and what it holds; `enforced` says whether writes past the limit are refused (docs/runtime.md \"Disk limits\")" },
      ),
    ),
  }),
  build: Type.Object({ lastDeploymentId: NullableStr(), status: NullableStr(), commit: NullableStr() }),
  source: ProjectSourceSchema,
  /** Whether this instance is linked to a cloud instance and the link answers. */
  cloud: Type.Object({ linked: Type.Boolean(), reachable: Type.Boolean() }),
});
export type InfoRecord = Static<typeof InfoSchema>;

// ---------------------------------------------------------------- deletion

export const CountNamesSchema = Type.Object({ count: Type.Integer(), names: Type.Array(Type.String()) });
export type CountNames = Static<typeof CountNamesSchema>;

/** The preview's groups; other areas' dependents (upload sessions, ...) add keys of the same shape. */
export const DeletionPreviewSchema = Type.Object(
  {
    deployments: CountNamesSchema,
    envVars: CountNamesSchema,
    domains: CountNamesSchema,
    environments: CountNamesSchema,
    backupPolicies: CountNamesSchema,
    backupRuns: CountNamesSchema,
    services: CountNamesSchema,
    routeRules: CountNamesSchema,
  },
  { additionalProperties: CountNamesSchema },
);
export type DeletionPreview = Static<typeof DeletionPreviewSchema> & { [other: string]: CountNames };

export const DeletedProjectSchema = Type.Object({ id: Type.String(), deleted: Type.Literal(true), removed: DeletionPreviewSchema });
