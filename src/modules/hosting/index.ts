/**
 * The hosting area's surface: the only file other areas import. This server's build-and-run host
 * (`BerthRuntime`, reached as `ctx.ports.runtimeHost`): the supervisor of apps, the edge proxy, logs,
 * builds, releases and which instance runs each app; its module provides the `runtime` and
 * `runtimeHost` ports.
 */
export { hostingModule } from './hosting.module.js';
export { BerthRuntime, runtimeOf, getRuntime, edgeUrlOf } from './host.js';
export type { LogRelay } from './log-relay.js';
export type { HostingTables } from './hosting.tables.js';
export type { AppHealthChange, AppHealthChanged, DiskNearLimit, DiskNearLimitListener, WatchedVolume, WatchedVolumes } from './ports.js';
