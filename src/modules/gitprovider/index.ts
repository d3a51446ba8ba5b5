/**
 * The git provider area's surface: the only file other areas import. Its work for other areas
 * (projects' git port, the build's clone tokens, the grant catalog) is offered as ports
 * (`provides`, provided-ports.ts), not imported.
 */
export { gitproviderModule } from './gitprovider.routes.js';
/** The port this area declares (./ports.ts). */
export type { CloneTokenPort } from './ports.js';
