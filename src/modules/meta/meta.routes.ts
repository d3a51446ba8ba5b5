import { defineRoute, type ModuleDef } from '../../http/route.js';
import { linkStatus } from '../cloud/index.js';
import { getRuntime } from '../hosting/index.js';
import { buildOpenApi, VERSION } from './openapi.js';
import { HealthView, OpenApiDocument } from './meta.presenters.js';

/** Health and the self-description of the API. `modules` is read when a request comes in. */
export function metaModule(modules: () => ModuleDef[]): ModuleDef {
  let doc: Record<string, unknown> | undefined;
  return {
    name: 'meta',
    routes: [
      defineRoute({
        method: 'GET',
        url: '/api/health',
        summary: 'Liveness and what this instance is',
        access: 'public',
        schema: { response: HealthView },
        async handler(_input, ctx) {
          return { status: 'ok' as const, mode: ctx.config.mode, version: VERSION, database: ctx.dialect, runtime: getRuntime(ctx).status(), cloud: await linkStatus(ctx) };
        },
      }),
      defineRoute({
        method: 'GET',
        url: '/api/openapi.json',
        summary: 'The OpenAPI document: every route with what it requires',
        access: 'public',
        envelope: false,
        schema: { response: OpenApiDocument },
        handler(_input, ctx) {
          doc ??= buildOpenApi(modules(), ctx.config.mode);
          return doc;
        },
      }),
    ],
  };
}
