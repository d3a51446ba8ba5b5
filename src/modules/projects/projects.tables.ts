import type { Generated } from 'kysely';

/**
 * Kysely table interfaces of the projects area (migration 003_projects; the `deployments` table it also
 * creates is the deployments area's, in deployments.tables.ts). camelCase here,
 * snake_case in SQL. Booleans are 0/1 integers, timestamps ISO-8601 text, JSON is text.
 */

export interface ProjectsTable {
  id: string;
  orgId: string;
  name: string;
  /** Unique per instance; the free domain is `<slug>.<BERTH_APPS_DOMAIN>`. */
  slug: string;
  status: string; // 'enabled' | 'disabled'
  location: string; // 'local' | 'cloud'
  // config
  framework: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  outputDirectory: string | null;
  rootDirectory: string | null;
  port: number;
  packageManager: string | null;
  runtime: string | null;
  nodeVersion: string | null;
  /** config.static: 1/0, or null for the plan's default. */
  staticSpa: number | null;
  staticCleanUrls: number | null;
  /** config.dockerfile: the Dockerfile the docker runtime builds, relative to the root directory (null: `Dockerfile`). */
  dockerfile: string | null;
  /** config.httpsRedirect: 1/0, or null for the default (redirect once the project's host has a certificate). */
  httpsRedirect: number | null;
  /** config.hsts: 1/0 (null: off). */
  hsts: number | null;
  /** config.healthPath: the path a running app is checked at (null: a TCP connect to its port). */
  healthPath: string | null;
  /** config.autoRollback: 1/0 (null: off): a degraded app's previous ready release serves again. */
  autoRollback: number | null;
  // source
  sourceType: string; // 'git' | 'local' | 'upload' | 'none'
  gitProvider: string | null;
  gitOwner: string | null;
  gitRepo: string | null;
  gitBranch: string | null;
  localPath: string | null;
  // behaviour
  sleepMode: string; // 'auto_sleep' | 'always_on'
  autoDeploy: number;
  webhookDomain: string | null;
  /** Id of the push webhook registered at the git provider (set by the git port). */
  webhookId: string | null;
  /** JSON `{ production: { cpuCores, memoryMb, diskMb }, build: { ... } }` (sleepMode and port live in their own columns). */
  resources: string;
  createdAt: string;
  updatedAt: string;
}

export interface EnvironmentsTable {
  id: string;
  orgId: string;
  projectId: string;
  name: string;
  type: string; // 'production' | 'preview'
  branch: string | null;
  /** Bumped by every env PATCH of this environment; the env ETag. */
  envRevision: number;
  /**
   * A preview's part of its host label, `<slug>--<project-slug>.<BERTH_APPS_DOMAIN>` (022): its branch
   * (else its name) slugged, cut to fit the label, with a hash suffix when another environment of the
   * project has it. Unique per project; null for production.
   */
  slug: Generated<string | null>;
  createdAt: string;
}

export interface EnvVarsTable {
  id: string;
  orgId: string;
  projectId: string;
  /** Environment name (`production`, a preview's name). */
  environment: string;
  key: string;
  /** Always AES-256-GCM sealed (secret or not); AAD `env:<projectId>:<environment>:<key>`. */
  value: string;
  isSecret: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * A project's claim on a custom domain (migration 015). A project holds a domain at most once; a
 * domain is verified by at most one project on the instance (unique index over verified rows), so
 * unverified claims of different orgs may coexist. The edge routes only verified rows.
 */
export interface DomainsTable {
  id: string;
  orgId: string;
  projectId: string;
  /** ASCII (punycode) lowercase hostname. */
  domain: string;
  isPrimary: number;
  /** The TXT value of `_berth-challenge.<domain>` that proves the claim (`berth-verify=<32 chars>`). */
  verification: string;
  /** When the claim was proven (or added on an instance without verification); null while unverified. */
  verifiedAt: string | null;
  createdAt: string;
}

export interface RouteRulesTable {
  id: string;
  orgId: string;
  projectId: string;
  kind: string; // 'rate-limit' | 'ban' | 'allow-deny'
  enabled: number;
  path: string | null;
  /** JSON of the kind's fields: `{ limit, windowSeconds }`, `{ ips, expiresAt }`, `{ action, cidrs }`. */
  config: string;
  createdAt: string;
  updatedAt: string;
}

export interface ServicesTable {
  id: string;
  orgId: string;
  projectId: string;
  kind: string; // 'volume' | 'postgres'
  name: string;
  /** Sealed (AAD `service:<projectId>:<name>`); null for volumes. Never returned. */
  connectionUrl: string | null;
  createdAt: string;
}

export interface CloneCredentialsTable {
  projectId: string;
  orgId: string;
  username: string | null;
  /** Sealed (AAD `clone-token:<projectId>`). */
  token: string;
  updatedAt: string;
}

export interface RoutingAttemptsTable {
  id: string;
  orgId: string;
  projectId: string;
  domain: string;
  status: string; // 'recorded' | 'synced' | 'failed'
  error: string | null;
  createdAt: string;
}

export interface ProjectTables {
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  envVars: EnvVarsTable;
  domains: DomainsTable;
  routeRules: RouteRulesTable;
  services: ServicesTable;
  cloneCredentials: CloneCredentialsTable;
  routingAttempts: RoutingAttemptsTable;
}
