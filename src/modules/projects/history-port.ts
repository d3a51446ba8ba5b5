import type { Db } from '../../db/client.js';

/**
 * What the projects area reads of a project's deployments: its info (the last build, whether one was
 * ever ready) and its commit status (the commit production serves). The deployments area owns the
 * records and provides this as `ctx.ports.deploymentHistory`, so that projects never reads the
 * deployments table nor imports that area (which imports projects). While there is none, a project
 * has no deployments.
 */
export interface DeploymentHistoryPort {
  /** The project's newest deployment, narrowed to one environment, one status or the current ones. */
  latest(db: Db, orgId: string, projectId: string, opts?: { environment?: string; status?: string; current?: boolean }): Promise<HistoryDeployment | undefined>;
}

/** A deployment as the projects area reads it. */
export interface HistoryDeployment {
  id: string;
  status: string;
  commit: string | null;
}
