import type { ModuleDef } from '../http/route.js';
import { authModule } from './auth/index.js';
import { auditModule } from './audit/index.js';
import { backupsModule } from './backups/index.js';
import { permissionsModule } from './permissions/index.js';
import { projectsModule } from './projects/index.js';
import { uploadsModule } from './uploads/index.js';
import { gitproviderModule } from './gitprovider/index.js';
import { deploymentsModule } from './deployments/index.js';
import { hostingModule } from './hosting/index.js';
import { cloudModule } from './cloud/index.js';
import { certificatesModule } from './certificates/index.js';
import { servicesModule } from './services/index.js';
import { notificationsModule } from './notifications/index.js';
import { metricsModule } from './metrics/index.js';

/** Every area's module, in registration order. Add a new area here. */
export const areaModules: ModuleDef[] = [authModule, permissionsModule, auditModule, projectsModule, uploadsModule, gitproviderModule, deploymentsModule, hostingModule, backupsModule, cloudModule, certificatesModule, servicesModule, notificationsModule, metricsModule];
