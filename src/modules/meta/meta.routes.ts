import { Answer, defineRoute, type ModuleDef } from '../../http/route.js';
import { buildOpenApi, VERSION } from './openapi.js';
import { linkStatus } from '../cloud/link.js';
import { getRuntime } from '../deployments/runtime.js';

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
        async handler(_input, ctx) {
          // `cloud`: whether this instance is linked to a cloud instance and the link answers (cached 3 s).
          // `runtime`: the driver builds and apps run with, and whether it can run them now (and why not).
          return { status: 'ok', mode: ctx.config.mode, version: VERSION, database: ctx.dialect, runtime: getRuntime(ctx).driver.status(), cloud: await linkStatus(ctx) };
        },
      }),
      defineRoute({
        method: 'GET',
        url: '/api/openapi.json',
        summary: 'The OpenAPI document: every route with its permission tag',
        access: 'public',
        handler(_input, ctx) {
          doc ??= buildOpenApi(modules(), ctx.config.mode);
          return new Answer(doc);
        },
      }),
    ],
  };
}
