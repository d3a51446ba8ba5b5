import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { redactText } from '../../runtime/redact.js';
import type { ProjectRow } from '../projects/index.js';
import { deploymentRecord, type DeploymentRecord } from './deployments.presenters.js';
import { insertAuditEvent } from '../audit/index.js';
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
  const target = await targetOf(ctx, actor.orgId, project, input.deploymentId);
  return swapTo(ctx, { orgId: actor.orgId, userId: actor.userId, action: 'deployment.rollback' }, project, target, input.deploymentId ? 'deploymentId' : undefined);
}

/**
 * `config.autoRollback` (contract section 20): production's previous ready release serves again
 * because the current one is degraded (hosting's health watch), as a rollback without an actor
 * (audit `deployment.auto_rollback` with the reason). The degraded deployment's build log and the
 * app's runtime log say so. Answers the deployments it went from and to; throws (409) when there is
 * nothing to roll back to.
 */
export async function autoRollback(ctx: AppContext, project: ProjectRow, reason: string): Promise<{ from: string | null; to: string }> {
  if (project.status !== 'enabled') throw conflict('the project is disabled');
  const target = await targetOf(ctx, project.orgId, project, undefined);
  const from = await store.currentRelease(ctx.db, project.orgId, project.id, 'production');
  await swapTo(ctx, { orgId: project.orgId, userId: null, action: 'deployment.auto_rollback', reason }, project, target, undefined);
  if (from) hostOf(ctx).logs.build(project.id, from.id).append({ ts: nowIso(), stream: 'stderr', line: `[berth] automatic rollback to ${target.id}: ${reason}` });
  return { from: from?.id ?? null, to: target.id };
}

/** Who rolls back: a member (`deployment.rollback`), or Berth itself (`deployment.auto_rollback`, with why). */
interface RollbackBy {
  orgId: string;
  userId: string | null;
  action: 'deployment.rollback' | 'deployment.auto_rollback';
  reason?: string;
}

/** Makes `target` the environment's current release (started first when it runs a process). */
async function swapTo(ctx: AppContext, by: RollbackBy, project: ProjectRow, target: ReleaseRow, field: string | undefined): Promise<DeploymentRecord> {
  const rt = hostOf(ctx);
  return rt.releaseSwap(project.id, async () => {
    const from = await store.currentRelease(ctx.db, by.orgId, project.id, target.environment);
    if (from?.id === target.id) return deploymentRecord(from);
    // Read again inside the swap: a prune may have run while we waited.
    const release = await store.releaseOf(ctx.db, by.orgId, target.id);
    if (!release || release.status !== 'ready') throw conflict(`deployment ${target.id} is not ready`, field);
    if (!rt.releases.isKept(release)) {
      throw conflict(`deployment ${target.id} is no longer kept: only the newest ${ctx.config.releasesKept} releases of an environment stay on disk (BERTH_RELEASES_KEPT)`, field);
    }
    const serves = target.environment === 'production';
    const starts = serves && !release.staticSite;
    if (starts) await startRelease(ctx, project, release, from);
    const details = { projectId: project.id, environment: release.environment, from: from?.id ?? null, to: release.id, ...(by.reason ? { reason: by.reason } : {}) };
    const moved = await store.switchCurrent(ctx.db, { orgId: by.orgId, projectId: project.id, environment: target.environment }, from?.id ?? null, release.id, (tx) =>
      insertAuditEvent(tx, { orgId: by.orgId, actorId: by.userId, action: by.action, resourceType: 'deployment', resourceId: release.id, details }),
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
    const how = by.action === 'deployment.auto_rollback' ? `automatically rolled back (${by.reason})` : 'rolled back';
    if (serves) rt.logs.runtime(project.id).append({ ts: nowIso(), stream: 'stderr', line: `[berth] ${how} to ${release.id}${from ? ` (from ${from.id})` : ''}` });
    return deploymentRecord((await store.findDeployment(ctx.db, by.orgId, release.id)) ?? release);
  });
}

/** The deployment to roll back to: the one named (of this project), or the ready one before production's current release. */
async function targetOf(ctx: AppContext, orgId: string, project: ProjectRow, deploymentId: string | undefined): Promise<ReleaseRow> {
  if (deploymentId) {
    const d = await store.releaseOf(ctx.db, orgId, deploymentId);
    if (!d || d.projectId !== project.id) throw new AppError('NOT_FOUND', 'deployment not found in this project', { field: 'deploymentId' });
    if (d.status !== 'ready') throw conflict(`deployment ${d.id} is ${d.status}: only a ready deployment can serve`, 'deploymentId');
    return d;
  }
  const current = await store.currentRelease(ctx.db, orgId, project.id, 'production');
  if (!current) throw conflict('nothing to roll back to: production has no current release');
  const before = await store.releaseBefore(ctx.db, orgId, project.id, 'production', current);
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
