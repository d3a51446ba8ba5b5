import type { AppContext } from '../../context.js';
import type { SettledDeployment } from './ports.js';
import { projectHosts, projectQueries } from '../projects/index.js';
import * as store from './deployments.store.js';
import { environmentUrl } from './environment-url.js';

/**
 * Tells `ctx.ports.deploymentSettled` that a deployment reached its terminal status (ready, failed,
 * cancelled, superseded). Called by whoever committed that status (the build job, a cancel, a newer
 * deployment superseding it, a promotion, the removal of a preview, the restart sweep), once, after
 * the commit. It reads the row as committed and runs the listeners in the background (tracked by the
 * runtime, so a server stop waits for them briefly); a listener's failure is logged and changes nothing.
 */
export function deploymentSettled(ctx: AppContext, orgId: string, deploymentId: string): void {
  if (ctx.ports.deploymentSettled.length === 0) return;
  const run = (async () => {
    const d = await settledOf(ctx, orgId, deploymentId);
    if (!d) return;
    for (const listener of ctx.ports.deploymentSettled) {
      try {
        await listener(ctx, d);
      } catch (err) {
        ctx.log.warn({ deploymentId, err: (err as Error).message }, 'a deployment-settled listener failed');
      }
    }
  })().catch((err) => ctx.log.warn({ deploymentId, err: (err as Error).message }, 'could not tell the listeners that a deployment settled'));
  const pending = ctx.ports.runtimeHost?.settling;
  if (pending) {
    pending.add(run);
    void run.finally(() => pending.delete(run));
  }
}

/** The deployment as listeners see it, or null when it is gone or not settled. */
async function settledOf(ctx: AppContext, orgId: string, id: string): Promise<SettledDeployment | null> {
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d || !(store.TERMINAL as readonly string[]).includes(d.status)) return null;
  return {
    id: d.id,
    orgId: d.orgId,
    projectId: d.projectId,
    environment: d.environment,
    status: d.status as SettledDeployment['status'],
    commit: d.commit,
    ref: d.ref,
    error: d.error,
    url: await servedUrl(ctx, orgId, d.projectId, d.environment),
  };
}

/**
 * The URL the environment is served at when it serves (it has a current ready release): production's
 * primary domain (as the project's info answers it), a preview's own host; else null.
 */
async function servedUrl(ctx: AppContext, orgId: string, projectId: string, environment: string): Promise<string | null> {
  if (!(await store.currentRelease(ctx.db, orgId, projectId, environment))) return null;
  const project = await projectQueries.findProject(ctx.db, orgId, projectId);
  if (!project) return null;
  if (environment === 'production') return projectHosts.edgeUrlOf(ctx, projectHosts.servingDomain(ctx, project.slug, await projectQueries.listDomains(ctx.db, orgId, projectId)), false);
  const env = await projectQueries.findEnvironment(ctx.db, orgId, projectId, environment);
  return env ? environmentUrl(ctx, project, env) : null;
}
