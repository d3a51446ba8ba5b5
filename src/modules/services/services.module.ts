import type { AppContext } from '../../context.js';
import type { ModuleDef } from '../../http/route.js';
import { nowIso } from '../../lib/ids.js';
import { HostServiceRunner } from './host-runner.js';
import { imageFix, serviceImage, type ServiceKind } from './kinds.js';
import type { ServiceRunner } from './runner.js';
import { serviceRoutes } from './services.routes.js';
import { SERVICES_PORTS } from './ports.js';
import * as store from './services.store.js';

/**
 * The runner of this server's runtime: the host's binaries in the driver's boxes (sandbox, process), or
 * under docker a container per service of its kind's image (BERTH_IMAGE_POSTGRES, ...).
 */
function makeRunner(ctx: AppContext): ServiceRunner | null {
  const host = ctx.ports.runtimeHost;
  if (!host) return null;
  const images = ctx.config.docker.baseImages;
  const image = ctx.config.runtime === 'docker' ? (kind: ServiceKind) => ({ ref: serviceImage(kind, images), fix: imageFix(kind) }) : undefined;
  return new HostServiceRunner(ctx, { driver: host.driver, identityOf: (orgId, projectId) => host.releases.identityOf(orgId, projectId), ...(image ? { image } : {}) });
}

/**
 * The services area (contract section 19): managed databases of a project. Its routes, its per-server
 * runner (`ctx.state.services`), and its records under a project for the project's deletion.
 */
export const servicesModule: ModuleDef = {
  name: 'services',
  routes: serviceRoutes,
  declares: SERVICES_PORTS,
  state: () => ({ services: { runner: null, offers: null, seeding: new Map() } }),
  provides: (ctx) => ({
    // Managed services running here, for the metrics sampler.
    usageSources: [() => ctx.state.services.runner?.usageTargets() ?? []],
    // Their data folders, for the hosting area's disk watch (disk.near_limit).
    watchedVolumes: [() => ctx.state.services.runner?.volumes() ?? []],
    projectDependents: [
      {
        name: 'managedServices',
        async preview(db, orgId, projectId) {
          const rows = await store.listManaged(db, orgId, projectId);
          return { count: rows.length, names: rows.map((r) => r.name) };
        },
        remove: (tx, orgId, projectId) => store.deleteProjectManaged(tx, orgId, projectId),
        async stop(ctx, orgId, projectId) {
          const runner = ctx.state.services.runner;
          if (runner) for (const r of await store.listProjectManaged(ctx.db, orgId, projectId)) await runner.stop(r.id);
        },
      },
    ],
  }),
  /** Background work: the services that should run start again with the server (after the hosting area opened its driver). */
  async start(ctx) {
    const runner = makeRunner(ctx);
    const wanted = await store.listWanted(ctx.db);
    // Every wanted service is under way before the runner is seen: an app starting meanwhile (the
    // hosting area's restore) waits for its services rather than missing them (wiring.ts).
    if (runner) for (const row of wanted) runner.ensure(row);
    ctx.state.services.runner = runner;
    if (!runner) {
      for (const row of wanted) await store.updateManaged(ctx.db, row.orgId, row.id, { status: 'failed', lastError: `the ${ctx.config.runtime} runtime does not run managed services yet`, updatedAt: nowIso() });
    }
  },
  async stop(ctx) {
    await ctx.state.services.runner?.close();
    ctx.state.services.runner = null;
  },
};
