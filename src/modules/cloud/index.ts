/**
 * The cloud area's surface: the only file other areas import. The module, the per-server link
 * (`ctx.ports.cloud`: its status, the home feed's cloud half, whether the cloud's GitHub App is out
 * of reach), and the same three as functions of the context.
 */
export { cloudModule } from './cloud.routes.js';
export { CloudHost } from './cloud-host.js';
export { cloudGithubUnreachable, cloudReachable, linkStatus, type LinkStatus } from './link.js';
export { mergeCloudHome, HOME_CLOUD_TIMEOUT_MS } from './home.js';
