import type { AppContext } from '../../context.js';
import type { BerthRuntime } from '../hosting/index.js';

/**
 * What the deployments area asks of this server's build-and-run host (the hosting area). It reaches
 * the host only through its port (`ctx.ports.runtimeHost`) and names its build job by kind, so the
 * hosting area, which reads and writes deployment records through this area's index, is never
 * imported back (no cycle between the areas).
 */

/** The kind of the job that builds and releases one deployment (the hosting area registers its handler). */
export const BUILD_JOB = 'deployment.build';

/** This server's host (`ctx.ports.runtimeHost`, provided by the hosting module). */
export function hostOf(ctx: Pick<AppContext, 'ports'>): BerthRuntime {
  const rt = ctx.ports.runtimeHost;
  if (!rt) throw new Error('this server has no runtime (the hosting module provides it)');
  return rt;
}
