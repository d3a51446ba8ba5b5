/** The meta area's surface: the module (health, the OpenAPI document) and the document builder (tests). */
export { metaModule } from './meta.routes.js';
export { buildOpenApi, operationIdOf, VERSION } from './openapi.js';
