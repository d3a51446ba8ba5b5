/**
 * The port the hosting area declares on src/ports.ts's `Ports`: this server's build-and-run host,
 * which the deployments area's routes reach (src/modules/deployments/host.ts).
 */
import type { BerthRuntime } from './host.js';

declare module '../../ports.js' {
  interface Ports {
    /** This server's build-and-run host (hosting area): supervisor, logs, edge proxy, builds in flight. */
    runtimeHost: BerthRuntime | null;
  }
}

/** How the providers of the hosting area's port combine (its ModuleDef's `declares`). */
export const HOSTING_PORTS = { runtimeHost: 'one' } as const;
