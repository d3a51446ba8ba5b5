/**
 * The deployments area's surface: the only file other areas import. The module, deployments for the
 * git provider's pushes, what the cloud area needs to tell a local deployment from a cloud one, and
 * the deployment records the hosting area (this server's build-and-run host) reads and writes.
 */
export { deploymentsModule } from './deployments.routes.js';
export { createDeployment, type CreateInput, type DeploymentRecord } from './deployments.service.js';
export { pushDeploymentExists, deploymentExistsAnyOrg, findDeployment, type DeploymentRow } from './deployments.store.js';
export { ensurePreviewEnvironment, removePreviewEnvironment, environmentUrl } from './previews.service.js';

// What the hosting area (src/modules/hosting/) needs of deployment records: its build job, releases,
// restore after a restart, runtime states and the settled listeners.
export { BUILD_JOB } from './host.js';
export { deploymentSettled } from './settled.js';
export { autoRollback } from './rollback.service.js';
export type { DeploymentSettled, SettledDeployment } from './ports.js';
export {
  IN_FLIGHT,
  TERMINAL,
  findBuild,
  updateBuild,
  transition,
  markReady,
  releaseOf,
  currentRelease,
  keptReleaseIds,
  keptReleases,
  oldReleaseDirs,
  sandboxUid,
  staleInFlight,
  inFlightIdsOfProject,
  saveRuntimeState,
  runtimeStateOf,
  allRuntimeStates,
  readyProductionProjectIds,
  type DeploymentBuildRow,
  type ReleaseRow,
} from './deployments.store.js';
