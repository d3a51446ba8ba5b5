import type { ModuleDef, RouteDef } from '../../http/route.js';
import { routeInfo } from '../../http/route.js';

const VERSION = '0.1.0';

function toOpenApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parametersOf(def: RouteDef<any>): unknown[] {
  const out: unknown[] = [];
  const params = def.schema?.params as { properties?: Record<string, unknown> } | undefined;
  for (const name of (def.url.match(/:([A-Za-z0-9_]+)/g) ?? []).map((s) => s.slice(1))) {
    out.push({ name, in: 'path', required: true, schema: params?.properties?.[name] ?? { type: 'string' } });
  }
  const q = def.schema?.querystring as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(q?.properties ?? {})) {
    out.push({ name, in: 'query', required: q?.required?.includes(name) ?? false, schema });
  }
  return out;
}

/**
 * The OpenAPI 3.1 document, made from the same route definitions and TypeBox schemas that the
 * server validates with. Each operation names its permission tag in `x-permission`.
 */
export function buildOpenApi(modules: ModuleDef[], mode: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const m of modules) {
    for (const def of m.routes) {
      const info = routeInfo(def);
      const p = (paths[toOpenApiPath(def.url)] ??= {});
      const status = String(def.status ?? 200);
      p[def.method.toLowerCase()] = {
        summary: def.summary,
        tags: [m.name],
        operationId: `${def.method.toLowerCase()} ${def.url}`,
        'x-permission': info.tag,
        'x-access': info.access,
        'x-role-gate': info.gate,
        'x-resource': info.resource,
        'x-self-hosted-only': info.selfHostedOnly,
        security: info.access === 'public' ? [] : [{ bearer: [] }, { cookie: [] }],
        parameters: parametersOf(def),
        ...(def.schema?.body ? { requestBody: { required: true, content: { 'application/json': { schema: def.schema.body } } } } : {}),
        responses: {
          [status]: {
            description: 'success',
            ...(def.schema?.response
              ? { content: { 'application/json': { schema: { type: 'object', properties: { data: def.schema.response } } } } }
              : {}),
          },
          default: { description: 'error envelope', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Berth API', version: VERSION, description: `Berth deployment platform (${mode} mode)` },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'personal access token (berth_pat_...)' },
        cookie: { type: 'apiKey', in: 'cookie', name: 'berth_session' },
      },
      schemas: {
        Error: {
          type: 'object',
          properties: {
            error: {
              type: 'object',
              properties: { code: { type: 'string' }, message: { type: 'string' }, field: { type: 'string' }, requestId: { type: 'string' } },
              required: ['code', 'message'],
            },
          },
        },
      },
    },
  };
}

export { VERSION };
