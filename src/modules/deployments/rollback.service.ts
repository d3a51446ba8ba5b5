import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { redactText } from '../../runtime/redact.js';
import type { ProjectRow } from '../projects/index.js';
import { deploymentRecord, type DeploymentRecord } from './deployments.presenters.js';
import { auditDeployment } from './deployments.service.js';
import * as store from './deployments.store.js';
import type { ReleaseRow } from './deployments.store.js';
import { appKeyOf } from '../../runtime/app-key.js';
import { hostOf } from './host.js';

/**
 * Rollback (contract section 12): an environment's current release goes back to a ready deployment
 * of the same environment that is still kept, without a build. A server release is started and
 * health-checked first (the same zero-downtime swap as a deploy: the running app serves until the
 * target answers); a static release is a pointer switch (the app a server release ran stops); a
 * preview environment moves its pointer, and its app (asleep by default) starts the target on its
 * next request. No deployment row and no build log are written.
 *
 * A build in flight is left alone: when it becomes ready later it becomes current (the newest
 * event wins). The pointer moves only if the release that was current when the swap started still
 * is, so a deploy finishing meanwhile is never overwritten (409 then).
 */
export async function rollbackProject(ctx: AppContext, actor: Actor, project: ProjectRow, input: { deploymentId?: string }): Promise<DeploymentRecord> {
  if (project.status !== 'enabled') throw conflict('the project is disabled: enable it before rolling back');
  if (project.location !== 'local') throw conflict('the project lives on the cloud instance: roll it back there');
  const target = await targetOf(ctx, actor, project, input.deploymentId);
  const field = input.deploymentId ? 'deploymentId' : undefined;
  const rt = hostOf(ctx);
  return rt.releaseSwap(project.id, async () => {
    const from = await store.currentRelease(ctx.db, actor.orgId, project.id, target.environment);
    if (from?.id === target.id) return deploymentRecord(from);
    // Read again inside the swap: a prune may have run while we waited.
    const release = await store.releaseOf(ctx.db, actor.orgId, target.id);
    if (!release || release.status !== 'ready') throw conflict(`deployment ${target.id} is not ready`, field);
    if (!rt.releases.isKept(release)) {
      throw conflict(`deployment ${target.id} is no longer kept: only the newest ${ctx.config.releasesKept} releases of an environment stay on disk (BERTH_RELEASES_KEPT)`, field);
    }
    const serves = target.environment === 'production';
    const starts = serves && !release.staticSite;
    if (starts) await startRelease(ctx, project, release, from);
    const moved = await store.switchCurrent(ctx.db, { orgId: actor.orgId, projectId: project.id, environment: target.environment }, from?.id ?? null, release.id, (tx) =>
      auditDeployment(tx, actor, null, 'deployment.rollback', release.id, { projectId: project.id, environment: release.environment, from: from?.id ?? null, to: release.id }),
    );
    if (moved !== 'switched') {
      // Another release became current meanwhile (a deploy finished): it serves, not ours.
      if (starts) await putBack(ctx, project);
      throw conflict(
        moved === 'moved' ? 'another deployment became the current release while rolling back: roll back again if needed' : `deployment ${target.id} is not ready`,
        moved === 'moved' ? undefined : field,
      );
    }
    // The edge reads the new pointer from the next request on (a static site is served at once), then the app a server release ran stops.
    rt.invalidate(project.id);
    if (serves && release.staticSite) await rt.supervisor.stop(project.id).catch(() => {});
    // A preview's app (if awake) runs the release it had: it sleeps, and its next request starts this one.
    if (!serves) await rt.supervisor.stop(appKeyOf(project.id, target.environment), 'sleeping').catch(() => {});
    if (serves) rt.logs.runtime(project.id).append({ ts: nowIso(), stream: 'stderr', line: `[berth] rolled back to ${release.id}${from ? ` (from ${from.id})` : ''}` });
    return deploymentRecord((await store.findDeployment(ctx.db, actor.orgId, release.id)) ?? release);
  });
}

/** The deployment to roll back to: the one named (of this project), or the ready one before production's current release. */
async function targetOf(ctx: AppContext, actor: Actor, project: ProjectRow, deploymentId: string | undefined): Promise<ReleaseRow> {
  if (deploymentId) {
    const d = await store.releaseOf(ctx.db, actor.orgId, deploymentId);
    if (!d || d.projectId !== project.id) throw new AppError('NOT_FOUND', 'deployment not found in this project', { field: 'deploymentId' });
    if (d.status !== 'ready') throw conflict(`deployment ${d.id} is ${d.status}: only a ready deployment can serve`, 'deploymentId');
    return d;
  }
  const current = await store.currentRelease(ctx.db, actor.orgId, project.id, 'production');
  if (!current) throw conflict('nothing to roll back to: production has no current release');
  const before = await store.releaseBefore(ctx.db, actor.orgId, project.id, 'production', current);
  if (!before) throw conflict(`nothing to roll back to: no ready deployment of production finished before the current one (${current.id})`);
  return before;
}

/**
 * Starts a server release and waits for its health check; the running app keeps serving until it
 * answers. A release that does not start is a 409 and changes nothing (an app that was not running
 * is left as it was, not "failed").
 */
async function startRelease(ctx: AppContext, project: ProjectRow, release: ReleaseRow, from: ReleaseRow | undefined): Promise<void> {
  const rt = hostOf(ctx);
  const spec = await rt.releases.specOf(project.orgId, project.id, release);
  if (!spec) throw conflict(`deployment ${release.id} has no release to run`);
  const before = rt.supervisor.snapshot(project.id);
  try {
    await rt.supervisor.deploy(spec);
  } catch (e) {
    if (!before || !['running', 'starting'].includes(before.state)) await rt.supervisor.stop(project.id, before?.state === 'sleeping' ? 'sleeping' : 'stopped').catch(() => {});
    const keeps = from ? `; ${from.id} keeps serving` : '';
    throw conflict(`deployment ${release.id} did not start: ${redactText((e as Error).message, spec.secrets).slice(0, 1000)}${keeps}`);
  }
}

/** Runs what the current pointer names again (after a lost race), or stops the app when that is a static site. */
async function putBack(ctx: AppContext, project: ProjectRow): Promise<void> {
  const rt = hostOf(ctx);
  const spec = await rt.releases.specFor(project.orgId, project.id);
  if (spec) await rt.supervisor.deploy(spec).catch(() => {});
  else await rt.supervisor.stop(project.id).catch(() => {});
}
