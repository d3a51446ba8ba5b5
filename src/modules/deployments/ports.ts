/**
 * The port the deployments area declares on src/ports.ts's `Ports`: who is told when a deployment
 * settles (the gitprovider's commit statuses and PR comments), and what they are told.
 */
import type { AppContext } from '../../context.js';

declare module '../../ports.js' {
  interface Ports {
    /** Told when a deployment settles (ready, failed, cancelled, superseded): the gitprovider's commit statuses and PR comments. */
    deploymentSettled: DeploymentSettled[];
  }
}

/** A deployment that reached a terminal status, as its listeners see it. */
export interface SettledDeployment {
  id: string;
  orgId: string;
  projectId: string;
  environment: string;
  status: 'ready' | 'failed' | 'cancelled' | 'superseded';
  commit: string | null;
  ref: string | null;
  error: string | null;
  /** The URL the environment is served at (production's primary domain, a preview's own host); null when not served. */
  url: string | null;
}

/**
 * Called after the deployment's terminal status is committed, once per deployment and instance that
 * settled it. A listener's failure is logged by the caller and never changes the deployment.
 */
export type DeploymentSettled = (ctx: AppContext, d: SettledDeployment) => Promise<void>;

/** How the providers of the deployments area's port combine (its ModuleDef's `declares`). */
export const DEPLOYMENTS_PORTS = { deploymentSettled: 'list' } as const;
