/**
 * The services area's surface (contract section 19): managed databases a project runs beside its
 * app. Other areas import only this file.
 */
export { servicesModule } from './services.module.js';
export type { ServicesTables } from './services.tables.js';
/** The variables a project's app and builds get for its running managed services (for the hosting area to wire in). */
export { managedServiceEnv, serviceVariables, urlVariableOf } from './wiring.js';
/** Native dumps and restores of managed services, for the backups area. */
export { managedBackups } from './backup-surface.js';
/** The port this area declares (./ports.ts): the backups area provides it. */
export type { ServiceSeedPort } from './ports.js';
/** A preview environment's own instances of the project's managed services, removed with it. */
export { removeEnvironmentServices } from './previews.js';
/** Managed services in a project's transfer to and from the cloud: definitions (never credentials), and their data. */
export { serviceDefinitions, planServices, newServiceRows, writeServices, startServices, parkServices, type ServiceDefinition, type PlannedServices, type WrittenServices } from './transfer.js';
export { transferFile, whyNoData, dumpServiceData, loadServiceData, prepareServiceData, discardServiceRows, serviceDataLimit } from './transfer-data.js';
