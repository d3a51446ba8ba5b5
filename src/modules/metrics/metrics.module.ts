import type { ModuleDef } from '../../http/route.js';
import { metricsRoutes } from './metrics.routes.js';
import { METRICS_PORTS } from './ports.js';
import { rollupAndPrune } from './rollup.js';
import { startSampler, stopSampler } from './sampler.js';

/** How often the leader makes the coarser points and prunes (rollup.ts). */
const ROLLUP_EVERY_MS = 60_000;

/**
 * The metrics area (contract section 20, issue 38 point 1): the per-server sampler of apps, managed
 * services and the edge's requests, the rollup and prune ticker, and the two routes. docs/observability.md.
 */
export const metricsModule: ModuleDef = {
  name: 'metrics',
  routes: metricsRoutes,
  declares: METRICS_PORTS,
  state: () => ({ metrics: { last: new Map(), ids: new Map(), timer: null, running: null } }),
  init(ctx) {
    ctx.scheduler.add({ name: 'metrics.rollup', everyMs: ROLLUP_EVERY_MS, run: async () => void (await rollupAndPrune(ctx)) });
  },
  start(ctx) {
    startSampler(ctx);
  },
  stop: (ctx) => stopSampler(ctx),
};
