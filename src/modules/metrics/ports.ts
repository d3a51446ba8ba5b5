/**
 * The port and the per-server state the metrics area declares: other areas list what they run on this
 * server for the sampler (the services area: its managed services); apps come from the hosting area's
 * supervisor (`runtimeHost`).
 */
import type { UsageCounters, UsageTarget } from '../../runtime/usage.js';

/** What one area runs on this server now, to be sampled. */
export type UsageSource = () => UsageTarget[];

declare module '../../ports.js' {
  interface Ports {
    /** Targets of the metrics sampler besides the apps (managed services). */
    usageSources: UsageSource[];
  }
}

export interface MetricsState {
  /** The last reading of each target (`kind:name`), for rates. */
  last: Map<string, { at: number; counters: UsageCounters }>;
  /** Target ids by `kind:name`, once written. */
  ids: Map<string, number>;
  timer: NodeJS.Timeout | null;
  /** The sample in flight (a slow one is not overlapped). */
  running: Promise<void> | null;
}

declare module '../../state.js' {
  interface AreaState {
    metrics: MetricsState;
  }
}

export const METRICS_PORTS = { usageSources: 'list' } as const;
