/**
 * The deployments (build-and-run) area's surface: the only file other areas import. The module,
 * deployments for the git provider's pushes, the runtime of a server (reached as
 * `ctx.ports.runtimeHost`), and what the cloud area needs to tell a local deployment from a cloud one.
 */
export { deploymentsModule } from './deployments.routes.js';
export { createDeployment, type CreateInput, type DeploymentRecord } from './deployments.service.js';
export { pushDeploymentExists, deploymentExistsAnyOrg, findDeployment, type DeploymentRow } from './deployments.store.js';
export { BerthRuntime, runtimeOf, getRuntime, edgeUrlOf } from './runtime.js';
export { ensurePreviewEnvironment, removePreviewEnvironment, environmentUrl } from './previews.service.js';
