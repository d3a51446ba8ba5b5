import { projectQueries, hostReads, type RuntimePort, type RuntimeState } from '../projects/index.js';
import * as store from '../deployments/index.js';
import { appKeyOf } from '../../runtime/app-key.js';
import type { RuntimeSnapshot } from '../../runtime/supervisor.js';
import type { BerthRuntime } from './host.js';
import { volumeDiskUsage } from '../../runtime/disk-limits.js';

/**
 * What the projects area asks of build-and-run (its RuntimePort), answered by one server's runtime:
 * the app's state and URL, enable / disable, routing re-sync, removal of a deleted project (its
 * previews' apps included), and the edge's ports (environment URLs).
 */
export function projectsRuntimePort(rt: BerthRuntime): RuntimePort {
  const { ctx, supervisor } = rt;
  return {
    state: async (_ctx, orgId, projectId) => runtimeState(rt, orgId, projectId),
    bringOnline: async (_ctx, orgId, projectId) => {
      rt.invalidate(projectId);
      const p = await hostReads.edgeProject(ctx.db, orgId, projectId);
      if (!p) return;
      const spec = await rt.releases.specFor(orgId, projectId);
      if (!spec) return;
      // always_on apps start now; auto_sleep apps start on their next request.
      if (p.sleepMode === 'always_on' || supervisor.snapshot(projectId)?.state === 'failed') {
        await supervisor.deploy(spec).catch((err) => ctx.log.warn({ projectId, err: (err as Error).message }, 'app did not start on enable'));
      }
    },
    takeOffline: async (_ctx, orgId, projectId) => {
      rt.invalidate(projectId);
      // Several instances: the one running an app of the project stops it too (its lease moves here).
      for (const app of [projectId, ...(await projectQueries.listEnvironments(ctx.db, orgId, projectId)).filter((e) => e.type === 'preview').map((e) => appKeyOf(projectId, e.name))]) await rt.evict(app);
      await supervisor.stop(projectId, 'stopped');
      // Its previews' apps too (the edge answers 503 for every host of a disabled project).
      for (const app of supervisor.appsOf(projectId)) if (app !== projectId) await supervisor.stop(app, 'sleeping');
    },
    syncRouting: async () => {
      rt.invalidate();
      return { status: 'synced' };
    },
    removeProject: async (_ctx, orgId, projectId) => {
      rt.invalidate(projectId);
      for (const id of await store.inFlightIdsOfProject(ctx.db, projectId)) rt.building.get(id)?.abort();
      // Its preview environments' apps go with it (the ones that ran here, and every one it has).
      const previews = (await projectQueries.listEnvironments(ctx.db, orgId, projectId)).filter((e) => e.type === 'preview').map((e) => appKeyOf(projectId, e.name));
      for (const app of new Set([...supervisor.appsOf(projectId), ...previews])) {
        if (app === projectId) continue;
        await supervisor.stop(app, 'stopped');
        supervisor.forget(app);
        await rt.driver.apps?.forgetApp?.(app).catch((err) => ctx.log.warn({ projectId, err: (err as Error).message }, "could not remove a preview's containers"));
        rt.logs.removeApp(app);
        rt.requests.forget(app);
      }
      await supervisor.stop(projectId, 'stopped');
      supervisor.forget(projectId);
      await rt.driver.apps?.forgetProject?.(projectId).catch((err) => ctx.log.warn({ projectId, err: (err as Error).message }, 'could not remove the project\'s containers'));
      rt.logs.removeProject(projectId);
      rt.requests.forget(projectId);
    },
    edgePorts: () => ({ http: rt.edgePort(), https: rt.httpsPort() }),
  };
}

/** The project's app as the project info shows it: state, URL on the edge, port, isolation. */
export async function runtimeState(rt: BerthRuntime, orgId: string, projectId: string): Promise<RuntimeState | null> {
  const { ctx, supervisor, driver } = rt;
  const p = await hostReads.projectRuntimeFacts(ctx.db, orgId, projectId);
  if (!p) return null;
  const domains = await projectQueries.listDomains(ctx.db, orgId, projectId);
  // The primary custom domain once verified (the edge routes nothing else), else the free domain.
  const host = domains.find((d) => d.isPrimary === 1 && d.verifiedAt !== null)?.domain ?? `${p.slug}.${ctx.config.appsDomain}`;
  const edgePort = rt.edgePort();
  const url = `http://${host}${edgePort && edgePort !== 80 ? `:${edgePort}` : ''}`;
  let snap = supervisor.snapshot(projectId);
  // Several instances: an app another live instance runs is shown as that instance recorded it.
  if ((!snap || snap.state === 'stopped') && rt.owners.heldElsewhere(projectId)) {
    const saved = await store.runtimeStateOf(ctx.db, orgId, projectId);
    if (saved) snap = { state: saved.state as RuntimeSnapshot['state'], restarts: 0, ...(saved.port ? { port: saved.port } : {}), ...(saved.pid ? { pid: saved.pid } : {}), ...(saved.startedAt ? { startedAt: saved.startedAt } : {}) };
  }
  const disk = await volumeDiskUsage(rt.releases.volumeDir(projectId), rt.releases.diskMbOf(p.resources, 'production'), rt.releases.diskLimits).catch(() => undefined);
  const limits = {
    isolation: driver.isolation,
    ...(driver.limits.enforced ? {} : { limitsEnforced: false }),
    ...(driver.limits.note ? { limitsNote: driver.limits.note } : {}),
    ...(disk ? { disk } : {}),
  };
  // A degraded app (health after go-live) that is meant to be up shows as such, with why.
  const degraded = snap && ['running', 'starting', 'crashed'].includes(snap.state) ? rt.health.degraded(projectId) : null;
  if (degraded) return { state: 'degraded', reason: degraded.reason, degradedSince: degraded.since, url, port: snap!.port ?? p.port, ...(snap!.pid ? { pid: snap!.pid } : {}), ...(snap!.startedAt ? { startedAt: snap!.startedAt } : {}), ...limits };
  if (snap && snap.state !== 'stopped') {
    return { state: snap.state, url, port: snap.port ?? p.port, ...(snap.pid ? { pid: snap.pid } : {}), ...(snap.startedAt ? { startedAt: snap.startedAt } : {}), ...limits };
  }
  const rel = await store.currentRelease(ctx.db, orgId, projectId, 'production');
  let state = 'not_deployed';
  // A static release runs no process: the edge serves its files (and it never sleeps).
  if (rel) state = p.status !== 'enabled' ? 'stopped' : rel.staticSite ? 'static' : p.sleepMode === 'auto_sleep' ? 'sleeping' : 'stopped';
  return { state, url, port: p.port, ...limits };
}
