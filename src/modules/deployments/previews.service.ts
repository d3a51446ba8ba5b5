/**
 * Preview environments as build-and-run sees them (contract section 16): made (or re-pointed at a new
 * branch) through the projects area, served by the edge at their own host (edge-routes.ts), run as
 * their own app (`appKeyOf`), asleep until their first request; removed with their releases and
 * processes here. The git provider's pull-request flow calls these; so do the environment routes.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { invalid, notFound } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries, ensureEnvironment, environmentRecords, type EnvironmentRecord } from '../projects/index.js';
import { removeEnvironmentServices } from '../services/index.js';
import * as store from './deployments.store.js';
import { appKeyOf } from '../../runtime/app-key.js';
import { releaseVolumes } from '../../runtime/disk-limits.js';
import { environmentCacheDir } from '../../runtime/build-cache.js';
import { installsDir } from '../../runtime/build-reuse.js';
import { hostOf } from './host.js';
import { deploymentSettled } from './settled.js';

export { environmentUrl } from './environment-url.js';

/** How long a removal waits for this server's builds of the environment to stop after their abort. */
const BUILD_STOP_WAIT_MS = 30_000;

/**
 * Creates the preview environment `name` for `branch` if missing (env vars copied from production,
 * secrets included), or updates its branch; returns it. Never for `production` (400 name).
 */
export async function ensurePreviewEnvironment(ctx: AppContext, actor: Actor, project: { id: string; orgId: string }, input: { name: string; branch: string }): Promise<EnvironmentRecord> {
  const row = await projectQueries.findProject(ctx.db, project.orgId, project.id);
  if (!row) throw notFound('project');
  const { env } = await ensureEnvironment(ctx, actor, row, input);
  // A changed branch is a changed host: the edge reads it again.
  hostOf(ctx).invalidate(row.id);
  return (await environmentRecords(ctx, row, [env]))[0]!;
}

/**
 * Stops the environment's processes, deletes its releases (deployments, build outputs, images) and
 * the environment with its env vars, its own volume and its own instances of managed services. Idempotent (a missing environment is fine).
 * A build of it in flight is cancelled first (its listeners told), and a build output a production
 * deployment promoted from it still runs stays.
 */
export async function removePreviewEnvironment(ctx: AppContext, actor: Actor, project: { id: string; orgId: string }, name: string): Promise<void> {
  const { id: projectId, orgId } = project;
  if (name === 'production') throw invalid('env', 'the production environment cannot be removed (delete the project instead)');
  const env = await projectQueries.findEnvironment(ctx.db, orgId, projectId, name);
  if (!env) return;
  if (env.type !== 'preview') throw invalid('env', `environment "${name}" is not a preview environment`);
  const rt = hostOf(ctx);
  const app = appKeyOf(projectId, name);

  // Builds in flight end as cancelled (told to listeners), and this server's stop before their files go.
  const cancelled: string[] = [];
  for (const d of await store.inFlightDeployments(ctx.db, orgId, projectId, name)) {
    if (await store.transition(ctx.db, orgId, d.id, store.IN_FLIGHT, { status: 'cancelled', finishedAt: nowIso(), error: `cancelled: the environment ${name} was removed` })) cancelled.push(d.id);
  }
  for (const id of cancelled) {
    rt.building.get(id)?.abort();
    deploymentSettled(ctx, orgId, id);
  }
  const deadline = Date.now() + BUILD_STOP_WAIT_MS;
  while (cancelled.some((id) => rt.building.has(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));

  // Its app stops now, and again once the rows are gone (a request that woke it in between).
  const stopApp = async () => {
    rt.invalidate(projectId);
    await rt.supervisor.stop(app, 'stopped');
    rt.supervisor.forget(app);
    await rt.driver.apps?.forgetApp?.(app).catch((err) => ctx.log.warn({ projectId, environment: name, err: (err as Error).message }, "could not remove the preview's containers"));
  };
  await stopApp();

  // Rows, then files, one swap at a time with the project's deploys, rollbacks and prunes.
  await rt.releaseSwap(projectId, async () => {
    const deployments = await store.environmentDeployments(ctx.db, orgId, projectId, name);
    const shared = await store.releasesUsedOutside(ctx.db, orgId, projectId, name);
    await transaction(ctx.db, async (tx) => {
      await store.deleteEnvironmentDeployments(tx, orgId, projectId, name);
      await projectQueries.deleteEnvironmentRows(tx, orgId, projectId, name);
      await insertAuditEvent(tx, {
        orgId,
        actorId: actor.userId,
        action: 'project.environment.delete',
        resourceType: 'project',
        resourceId: projectId,
        details: { environment: name, branch: env.branch, deployments: deployments.length },
      });
    });
    const builds = path.join(ctx.config.dataDir, 'builds', path.basename(projectId));
    for (const d of deployments) {
      rt.logs.build(projectId, d.id).remove();
      if (d.releaseDir && shared.dirs.has(d.releaseDir)) continue;
      await rm(path.join(builds, path.basename(d.id)), { recursive: true, force: true }).catch((err) => ctx.log.warn({ err, deploymentId: d.id }, 'could not remove a build folder'));
    }
    const images = deployments.flatMap((d) => (d.image && !shared.images.has(d.image) ? [d.image] : []));
    if (images.length) await rt.driver.images?.remove(images).catch((err) => ctx.log.warn({ err: (err as Error).message, projectId }, "could not remove the preview's images"));
  });
  await stopApp();
  // Its own instances of the project's managed services stop and go with their data (docs/services.md).
  await removeEnvironmentServices(ctx, orgId, projectId, name).catch((err) => ctx.log.warn({ projectId, environment: name, err: (err as Error).message }, "could not remove the preview's services"));
  await releaseVolumes(rt.releases.previewVolumeDir(projectId, name)).catch((err) => ctx.log.warn({ err, projectId }, "could not unmount the preview's volume"));
  await rm(rt.releases.previewVolumeDir(projectId, name), { recursive: true, force: true }).catch((err) => ctx.log.warn({ err, projectId }, "could not remove the preview's volume"));
  for (const dir of [environmentCacheDir(ctx.config.dataDir, projectId, name), installsDir(environmentCacheDir(ctx.config.dataDir, projectId, name))]) {
    await rm(dir, { recursive: true, force: true }).catch((err) => ctx.log.warn({ err, projectId }, "could not remove the preview's build cache"));
  }
  rt.logs.removeApp(app);
  rt.requests.forget(app);
}
