import type { Generated } from 'kysely';
import type { HostingTables } from '../hosting/index.js';

/**
 * Tables of the build-and-run area (migration 005_deployments). The `deployments` table itself is
 * created by 003_projects, and is this area's: it writes it; what the build pipeline records per
 * deployment lives in `deployment_builds`.
 */

export interface DeploymentsTable {
  id: string;
  orgId: string;
  projectId: string;
  environment: string;
  status: string; // queued | building | deploying | ready | failed | cancelled | superseded
  trigger: string; // manual | push | upload | api | promote
  commit: string | null;
  ref: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  updatedAt: string;
  /**
   * 1 on the ready deployment that serves its (project, environment): the current release
   * (014_current_releases; at most one per environment, a partial unique index). A deploy that
   * becomes ready and a rollback move it.
   */
  current: Generated<number>;
  /** A production deployment promoted from a preview deployment (022): that deployment's id; its build is that one's. */
  promotedFrom: Generated<string | null>;
}

export interface DeploymentBuildsTable {
  deploymentId: string;
  orgId: string;
  projectId: string;
  /** git | local | upload */
  sourceType: string | null;
  /** The extracted upload the deployment builds (when sourceType is upload). */
  uploadDir: string | null;
  /** Where the built release lives once the build succeeded. */
  releaseDir: string | null;
  /** The start command the release runs with. */
  startCommand: string | null;
  /** JSON `{ spa, cleanUrls }` when the release is a static site served from `releaseDir`. */
  staticSite: string | null;
  /** JSON of the variables the build plan set (railpack.json); the project's own variables win over them. */
  planVariables: string | null;
  /** The image the release runs from under the docker runtime (016_images); null: it runs from `releaseDir`. */
  image: string | null;
  /** 1 when the image's own ENTRYPOINT/CMD runs (a Dockerfile build without a project start command). */
  imageCommand: number | null;
  createdBy: string | null;
}

export interface DeploymentTokensTable {
  id: string;
  /** sha256 of the token; the token itself is shown once. */
  tokenHash: string;
  orgId: string;
  projectId: string;
  deploymentId: string | null;
  /** 'build' (one deployment's build logs) | 'server_logs' (one project's request log stream). */
  kind: string;
  createdBy: string | null;
  /** The credential (`tok_...` or `ses_...`) that minted it; its streams end with that credential. */
  credentialId: string | null;
  expiresAt: string;
  createdAt: string;
}

export interface RuntimeStatesTable {
  projectId: string;
  orgId: string;
  deploymentId: string | null;
  /** starting | running | sleeping | stopped | crashed | failed */
  state: string;
  port: number | null;
  pid: number | null;
  startedAt: string | null;
  updatedAt: string;
}

/** The uid/gid a project's builds and apps run as under the sandbox driver (010_sandbox_identities). */
export interface SandboxIdentitiesTable {
  projectId: string;
  orgId: string;
  uid: number;
  createdAt: string;
}

/**
 * The deployments area's tables. It extends the hosting area's (app owners, live instances) only so
 * that src/db/schema.ts, which composes the database from this interface, still sees them; the
 * deployments area queries none of them (test/architecture/tables.test.ts reads the keys written here).
 */
export interface DeploymentsTables extends HostingTables {
  deployments: DeploymentsTable;
  sandboxIdentities: SandboxIdentitiesTable;
  deploymentBuilds: DeploymentBuildsTable;
  deploymentTokens: DeploymentTokensTable;
  runtimeStates: RuntimeStatesTable;
}
