import { serviceSeeds } from './service-seeds.js';
import type { ModuleDef } from '../../http/route.js';
import { recoverAtStart, registerBackupJobs } from './backups.jobs.js';
import { resolvers } from './backups.resolvers.js';
import { createBackupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import { destinationRoutes } from './destinations.routes.js';
import { policyRoutes } from './policies.routes.js';
import { restoreRoutes } from './restores.routes.js';
import { runRoutes } from './runs.routes.js';
import { webhookRoutes } from './webhook.routes.js';

/**
 * The backups area as the app registers it: its routes, the resolvers of its record kinds, its
 * per-server state (`ctx.state.backups`), what it offers other areas (the `backup_destination` grant
 * catalog, its records under a project for the project's deletion), and its background work.
 */
export const backupsModule: ModuleDef = {
  name: 'backups',
  resolvers,
  routes: [...destinationRoutes, ...policyRoutes, ...runRoutes, ...restoreRoutes, ...webhookRoutes],

  state: (ctx) => ({ backups: createBackupsRuntime(ctx) }),
  provides: () => ({
    // A preview's instance of a managed service seeded from production's last backup (services area).
    serviceSeeds,
    // The `backup_destination` resources of grants (catalog and RESOURCE_NOT_IN_ORG checks).
    catalogs: {
      backup_destination: {
        async list(c, orgId) {
          const rows = await store.listDestinations(c.db, orgId);
          return rows.map((r) => ({ id: r.id, label: r.name, meta: { kind: r.kind } }));
        },
        async has(c, orgId, id) {
          return !!(await store.findDestination(c.db, orgId, id));
        },
      },
    },
    projectDependents: [
      {
        name: 'backupPolicies',
        async preview(db, orgId, projectId) {
          const rows = await store.listPolicies(db, orgId, projectId);
          return { count: rows.length, names: rows.map((r) => r.id) };
        },
        remove: (tx, orgId, projectId) => store.deleteProjectBackups(tx, orgId, projectId),
      },
      {
        name: 'backupRuns',
        async preview(db, orgId, projectId) {
          const rows = await store.listRuns(db, orgId, projectId, { limit: 1000 });
          return { count: rows.length, names: rows.map((r) => r.id) };
        },
        async remove() {
          /* removed with the policies above */
        },
      },
    ],
  }),

  init: registerBackupJobs,
  start: recoverAtStart,
};
