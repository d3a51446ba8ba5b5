/**
 * The metrics area's surface (contract section 20): its module. Other areas offer it what they run
 * through the `usageSources` port (ports.ts); they import nothing from here.
 */
export { metricsModule } from './metrics.module.js';
export type { MetricsTables } from './metrics.tables.js';
export type { UsageSource } from './ports.js';
