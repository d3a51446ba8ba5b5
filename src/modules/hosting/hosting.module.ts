import type { ModuleDef } from '../../http/route.js';
import { BUILD_JOB } from '../deployments/index.js';
import { runDeploymentJob } from './build-job.js';
import { BerthRuntime, runtimeOf } from './host.js';
import { HOSTING_PORTS } from './ports.js';
import { projectsRuntimePort } from './runtime-port.js';

/**
 * This server's build-and-run host: the supervisor of apps, the edge proxy, logs and their relay,
 * the build job, and which instance runs each app. No routes: the deployments area's routes reach it
 * through the ports this module provides (`runtimeHost`, and `runtime` for the projects area).
 */
export const hostingModule: ModuleDef = {
  name: 'hosting',
  declares: HOSTING_PORTS,
  provides(ctx) {
    const runtime = new BerthRuntime(ctx);
    return { runtimeHost: runtime, runtime: projectsRuntimePort(runtime) };
  },
  init(ctx) {
    ctx.jobs.register<{ deploymentId: string; orgId: string; noCache?: boolean }>(BUILD_JOB, (payload, job, signal) => runDeploymentJob(ctx, payload, signal, job.attempts), { maxAttempts: 1 });
  },
  async start(ctx) {
    // Before any stream: other instances' streams ask for the logs this one writes (log-relay.ts).
    void runtimeOf(ctx).logRelay;
    await runtimeOf(ctx).start();
  },
  async stop(ctx) {
    await runtimeOf(ctx).stop();
  },
  routes: [],
};
