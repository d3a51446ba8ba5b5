/** The meta area's surface: the module (health, the OpenAPI document). */
export { metaModule } from './meta.routes.js';
