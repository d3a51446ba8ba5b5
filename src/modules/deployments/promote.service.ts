/**
 * Promotion (contract section 16): a ready preview deployment's build becomes production's release
 * without a rebuild, through the same zero-downtime swap as a production deploy or rollback (the
 * running app serves until the promoted release answers its health check; a static build is a pointer
 * switch, then the app a server release ran stops).
 *
 * It makes a new production deployment (trigger `promote`, `promotedFrom` the preview deployment,
 * the preview's commit and ref) whose build row names the same build output (release folder, image,
 * start command, plan variables): production's deployment list, rollback and the `current` pointer
 * then work as for any deploy, and the preview keeps its own history. At start the app gets
 * production's env vars (over the build's plan variables); what the build baked in (a static site's
 * files, a bundle's inlined variables) is the preview's. A build in flight is left alone, as for a
 * rollback: when it becomes ready later, it is current.
 */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { redactText } from '../../runtime/redact.js';
import { projectQueries, type ProjectRow } from '../projects/index.js';
import { deploymentRecord, type DeploymentRecord } from './deployments.presenters.js';
import { auditDeployment } from './deployments.service.js';
import * as store from './deployments.store.js';
import type { ReleaseRow } from './deployments.store.js';
import { hostOf } from './host.js';
import { deploymentSettled } from './settled.js';

export async function promoteEnvironment(ctx: AppContext, actor: Actor, project: ProjectRow, envName: string, input: { deploymentId?: string }): Promise<DeploymentRecord> {
  if (envName === 'production') throw invalid('env', 'production cannot be promoted to itself: name a preview environment');
  const env = await projectQueries.findEnvironment(ctx.db, project.orgId, project.id, envName);
  if (!env) throw new AppError('NOT_FOUND', `this project has no environment named "${envName}"`, { field: 'env' });
  if (env.type !== 'preview') throw invalid('env', `environment "${envName}" is not a preview environment`);
  if (project.status !== 'enabled') throw conflict('the project is disabled: enable it before promoting');
  if (project.location !== 'local') throw conflict('the project lives on the cloud instance: promote it there');
  const sourceId = (await sourceOf(ctx, project, envName, input.deploymentId)).id;
  const rt = hostOf(ctx);
  const promoted = await rt.releaseSwap(project.id, async () => {
    // Read again inside the swap: a prune or a removal may have run while we waited.
    const source = await sourceOf(ctx, project, envName, sourceId);
    if (!rt.releases.isKept(source)) {
      throw invalid('deploymentId', `the build of deployment ${source.id} was pruned: only the newest ${ctx.config.releasesKept} releases of an environment stay on disk (BERTH_RELEASES_KEPT); deploy ${envName} again`);
    }
    const from = await store.currentRelease(ctx.db, project.orgId, project.id, 'production');
    const id = newId('dpl');
    const at = nowIso();
    // The release as production will run it: this deployment's id, production's env and volume.
    const asProduction: ReleaseRow = { ...source, id, environment: 'production' };
    const spec = source.staticSite ? null : await rt.releases.specOf(project.orgId, project.id, asProduction);
    if (!source.staticSite && !spec) throw invalid('deploymentId', `deployment ${source.id} has no release to run`);
    if (spec) {
      const before = rt.supervisor.snapshot(project.id);
      try {
        await rt.supervisor.deploy(spec);
      } catch (e) {
        if (!before || !['running', 'starting'].includes(before.state)) await rt.supervisor.stop(project.id, before?.state === 'sleeping' ? 'sleeping' : 'stopped').catch(() => {});
        throw conflict(`deployment ${source.id} did not start as production: ${redactText((e as Error).message, spec.secrets).slice(0, 1000)}${from ? `; ${from.id} keeps serving` : ''}`);
      }
    }
    const build = await store.findBuild(ctx.db, project.orgId, source.id);
    const moved = await store.insertPromotion(
      ctx.db,
      from?.id ?? null,
      { id, orgId: project.orgId, projectId: project.id, environment: 'production', status: 'ready', trigger: 'promote', commit: source.commit, ref: source.ref, createdAt: at, startedAt: at, finishedAt: at, error: null, updatedAt: at, promotedFrom: source.id },
      {
        deploymentId: id,
        orgId: project.orgId,
        projectId: project.id,
        sourceType: build?.sourceType ?? null,
        uploadDir: null,
        releaseDir: source.releaseDir,
        startCommand: source.startCommand,
        staticSite: source.staticSite,
        planVariables: source.planVariables,
        image: source.image,
        imageCommand: source.imageCommand,
        createdBy: actor.userId,
      },
      (tx) => auditDeployment(tx, actor, null, 'deployment.promote', id, { projectId: project.id, environment: 'production', from: from?.id ?? null, promotedFrom: source.id, sourceEnvironment: envName }),
    );
    if (moved !== 'switched') {
      // Another release became production's current one meanwhile (a deploy finished): it serves, not ours.
      if (spec) {
        const back = await rt.releases.specFor(project.orgId, project.id);
        if (back) await rt.supervisor.deploy(back).catch(() => {});
        else await rt.supervisor.stop(project.id).catch(() => {});
      }
      throw conflict('another deployment became the current production release while promoting: promote again if needed');
    }
    // The edge reads the new pointer from the next request on (a static site is served at once), then the app a server release ran stops.
    rt.invalidate(project.id);
    if (!spec) await rt.supervisor.stop(project.id).catch(() => {});
    const line = `[berth] promoted ${source.id} of ${envName} to production as ${id} (no build: its build output runs with production's variables)`;
    rt.logs.build(project.id, id).append({ ts: at, stream: 'stdout', line });
    rt.logs.runtime(project.id).append({ ts: nowIso(), stream: 'stderr', line });
    return id;
  });
  deploymentSettled(ctx, project.orgId, promoted);
  await rt.releaseSwap(project.id, () => rt.releases.pruneReleases(project.orgId, project.id)).catch(() => {});
  return deploymentRecord((await store.findDeployment(ctx.db, project.orgId, promoted))!);
}

/**
 * The preview deployment to promote: the one named (a ready deployment of this environment), or the
 * environment's current release. Every refusal is a 400 naming `deploymentId`, the same for a
 * deployment of another environment, project or org, and for none.
 */
async function sourceOf(ctx: AppContext, project: ProjectRow, envName: string, deploymentId: string | undefined): Promise<ReleaseRow> {
  if (!deploymentId) {
    const current = await store.currentRelease(ctx.db, project.orgId, project.id, envName);
    if (!current) throw invalid('deploymentId', `environment ${envName} has no ready release to promote: deploy it first`);
    return current;
  }
  const d = await store.releaseOf(ctx.db, project.orgId, deploymentId);
  if (!d || d.projectId !== project.id || d.environment !== envName) throw invalid('deploymentId', `deployment ${deploymentId} is not a deployment of environment ${envName}`);
  if (d.status !== 'ready') throw invalid('deploymentId', `deployment ${d.id} is ${d.status}: only a ready deployment can be promoted`);
  return d;
}
