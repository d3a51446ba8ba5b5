import type { AppContext } from '../../context.js';

/**
 * What the projects area needs from build-and-run. The build-and-run (deployments) area provides it
 * as `ctx.ports.runtime`. While there is none, nothing runs: info answers state
 * `not_deployed`/`stopped`, and enable/disable/routing/delete only record.
 *
 * Hooks are called after the projects transaction committed; a failing hook is logged, never undoes
 * the recorded change.
 */
export interface RuntimeState {
  state: string; // e.g. 'running' | 'degraded' | 'sleeping' | 'stopped' | 'starting' | 'failed' | 'not_deployed' | 'static' (files served by the edge)
  /** Why the app is `degraded` (health after go-live, contract section 20), and since when. */
  reason?: string;
  degradedSince?: string;
  url: string;
  port: number;
  pid?: number;
  startedAt?: string;
  /** The runtime driver's isolation (`sandbox`, `process`), and whether resource limits are enforced (with why not). */
  isolation?: string;
  limitsEnforced?: boolean;
  limitsNote?: string;
  /** The production volume's disk limit and use (contract 18 `info.runtime.disk`). */
  disk?: { limitMb: number; usedMb: number; enforced: boolean; note?: string };
}

export interface RoutingResult {
  status: 'synced' | 'failed';
  error?: string;
}

export interface RuntimePort {
  /** Runtime state of the project's production app, or null when nothing is running. */
  state(ctx: AppContext, orgId: string, projectId: string): Promise<RuntimeState | null>;
  /** Project enabled: bring it online (deploys allowed again). */
  bringOnline(ctx: AppContext, orgId: string, projectId: string): Promise<void>;
  /** Project disabled: take it offline (stop the app; the edge answers 503). */
  takeOffline(ctx: AppContext, orgId: string, projectId: string): Promise<void>;
  /** Re-sync the edge route of the free domain without a rebuild. */
  syncRouting(ctx: AppContext, orgId: string, projectId: string, freeDomain: string): Promise<RoutingResult>;
  /** The project is being deleted: stop everything it runs (before its files are removed). */
  removeProject(ctx: AppContext, orgId: string, projectId: string): Promise<void>;
  /** The ports the edge listens on (HTTP, and HTTPS or null), once it listens: environment URLs name them. */
  edgePorts?(): { http: number; https: number | null };
}

/** Runs a runtime hook after commit; a failure is logged and does not undo the recorded change. */
export async function afterCommit(ctx: AppContext, what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    ctx.log.warn({ err: e, what }, 'runtime hook failed');
  }
}
