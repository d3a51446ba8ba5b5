import type { ModuleDef } from '../../http/route.js';
import { serviceRoutes } from './services.routes.js';
import * as store from './services.store.js';

/**
 * The services area (contract section 19): managed databases of a project. Its routes, its per-server
 * runner (`ctx.state.services`), and its records under a project for the project's deletion.
 */
export const servicesModule: ModuleDef = {
  name: 'services',
  routes: serviceRoutes,
  state: () => ({ services: { runner: null, offers: null } }),
  provides: () => ({
    projectDependents: [
      {
        name: 'managedServices',
        async preview(db, orgId, projectId) {
          const rows = await store.listManaged(db, orgId, projectId);
          return { count: rows.length, names: rows.map((r) => r.name) };
        },
        remove: (tx, orgId, projectId) => store.deleteProjectManaged(tx, orgId, projectId),
      },
    ],
  }),
};
