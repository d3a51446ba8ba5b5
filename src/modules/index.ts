import type { ModuleDef } from '../http/route.js';
import { authModule } from './auth/auth.routes.js';
import { auditModule } from './audit/audit.routes.js';
import { backupsModule } from './backups/backups.routes.js';
import { permissionsModule } from './permissions/permissions.routes.js';
import { projectsModule } from './projects/projects.routes.js';
import { uploadsModule } from './uploads/uploads.routes.js';
import { gitproviderModule } from './gitprovider/gitprovider.routes.js';
import { deploymentsModule } from './deployments/deployments.routes.js';
import { cloudModule } from './cloud/cloud.routes.js';

/** Every area's module, in registration order. Add a new area here. */
export const areaModules: ModuleDef[] = [authModule, permissionsModule, auditModule, projectsModule, uploadsModule, gitproviderModule, deploymentsModule, backupsModule, cloudModule];
