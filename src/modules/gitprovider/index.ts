/** The git provider area's public surface for other areas. */
export { gitproviderModule } from './gitprovider.routes.js';
export { cloneCredentialFor, grantableResources, projectNotice } from './gitprovider.service.js';
