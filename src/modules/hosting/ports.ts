/**
 * The ports the hosting area declares on src/ports.ts's `Ports`: this server's build-and-run host,
 * which the deployments area's routes reach (src/modules/deployments/host.ts), and who is told when a
 * running app becomes degraded or recovers (app-health-watch.ts) or its volume nears its limit (disk-watch.ts).
 */
import type { AppContext } from '../../context.js';
import type { BerthRuntime } from './host.js';

declare module '../../ports.js' {
  interface Ports {
    /** This server's build-and-run host (hosting area): supervisor, logs, edge proxy, builds in flight. */
    runtimeHost: BerthRuntime | null;
    /** Told when a running app becomes degraded or recovers (contract section 20's `app.degraded`, `app.recovered`). */
    appHealthChanged: AppHealthChanged[];
    /** Told when an app's volume reaches 90% of its diskMb (contract section 20's `disk.near_limit`; disk-watch.ts). */
    diskNearLimit: DiskNearLimitListener[];
    /** Volumes besides the apps' that the disk watch measures (the services area: its managed services' data). */
    watchedVolumes: WatchedVolumes[];
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

/** An app's volume at 90% of its limit or more, as its listeners see it (once, until it went below 80%). */
export interface DiskNearLimit {
  orgId: string;
  projectId: string;
  /** `production` or a preview environment's name. */
  environment: string;
  /** The managed service whose data it is; absent for the app's own volume. */
  service?: string;
  usedMb: number;
  /** `resources.production.diskMb` (a managed service's `resources.diskMb`). */
  limitMb: number;
  /** Whether writes past the limit are refused on this server (the volume is on its size-limited image). */
  enforced: boolean;
  /** How full it is, 0.9 to 1 (of what its image holds when that is a little less than limitMb). */
  share: number;
}

/** A volume another area has on this server, for the disk watch (`key` is stable while it exists). */
export interface WatchedVolume {
  key: string;
  orgId: string;
  projectId: string;
  environment: string;
  service: string;
  dir: string;
  limitMb: number;
  /** Writes a line (without the `[berth]` its log adds) to its own log when it is told. */
  note(line: string): void;
}

/** What one area has on this server now. */
export type WatchedVolumes = () => WatchedVolume[];

/** Called after the runtime-log line and the audit entry; a listener's failure is logged by the caller. */
export type DiskNearLimitListener = (ctx: AppContext, near: DiskNearLimit) => Promise<void>;

/** How the providers of the hosting area's ports combine (its ModuleDef's `declares`). */
export const HOSTING_PORTS = { runtimeHost: 'one', appHealthChanged: 'list', diskNearLimit: 'list', watchedVolumes: 'list' } as const;
