/**
 * The ports the hosting area declares on src/ports.ts's `Ports`: this server's build-and-run host,
 * which the deployments area's routes reach (src/modules/deployments/host.ts), and who is told when a
 * running app becomes degraded or recovers (app-health-watch.ts).
 */
import type { AppContext } from '../../context.js';
import type { BerthRuntime } from './host.js';

declare module '../../ports.js' {
  interface Ports {
    /** This server's build-and-run host (hosting area): supervisor, logs, edge proxy, builds in flight. */
    runtimeHost: BerthRuntime | null;
    /** Told when a running app becomes degraded or recovers (contract section 20's `app.degraded`, `app.recovered`). */
    appHealthChanged: AppHealthChanged[];
  }
}

/** A running app's health change, as its listeners see it. */
export interface AppHealthChange {
  orgId: string;
  projectId: string;
  /** `production` or a preview environment's name. */
  environment: string;
  state: 'degraded' | 'recovered';
  /** Why (degraded: the failing check or the restarts; recovered: since when it was degraded and why). */
  reason: string;
  /** The deployment the app ran when it changed. */
  deploymentId: string | null;
  /** `config.autoRollback`: the deployment that serves again instead (degraded only, when the rollback happened). */
  rolledBackTo?: string;
}

/**
 * Called after the change is in the runtime log and the audit log, once per change and instance that
 * saw it. A listener's failure is logged by the caller and changes nothing.
 */
export type AppHealthChanged = (ctx: AppContext, change: AppHealthChange) => Promise<void>;

/** How the providers of the hosting area's ports combine (its ModuleDef's `declares`). */
export const HOSTING_PORTS = { runtimeHost: 'one', appHealthChanged: 'list' } as const;
