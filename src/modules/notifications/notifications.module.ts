import type { ModuleDef } from '../../http/route.js';
import { channelRoutes } from './channels.routes.js';
import { registerDeliveryJob } from './delivery.js';
import { onDeploymentSettled, onAppHealthChanged, onDiskNearLimit } from './listeners.js';
import { resolvers } from './notifications.resolvers.js';

/**
 * The notifications area (contract section 20, "Alerts"): an org's channels, the deliveries of the
 * events other areas report through `notifyEvent` (index.ts), the job that sends them, and its
 * listener on settled deployments.
 */
export const notificationsModule: ModuleDef = {
  name: 'notifications',
  resolvers,
  routes: channelRoutes,
  provides: () => ({ deploymentSettled: [onDeploymentSettled], appHealthChanged: [onAppHealthChanged], diskNearLimit: [onDiskNearLimit] }),
  init: registerDeliveryJob,
};
