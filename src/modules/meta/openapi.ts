import { TypeGuard, type TSchema } from '@sinclair/typebox';
import { SESSION_COOKIE } from '../../http/auth.js';
import { routeInfo, type AnyRoute, type ModuleDef, type RouteInfo } from '../../http/route.js';

/**
 * The OpenAPI 3.1 document, made from the same route definitions and TypeBox schemas the server
 * validates and serialises with. Each operation states everything its route requires, as the gate
 * checks it: `x-access` (tag, member, authenticated, stream-token, public), `x-permission` (the tag),
 * `x-requires` (further checks, each on the record or its parent project), `x-role-gate`, `x-resource`
 * (the record's kind and where its id comes from), `x-stream-token`, `x-self-hosted-only`,
 * `x-cloud-only`. It lints clean with Redocly's recommended rules (test/meta/openapi-lint.test.ts).
 */

export const VERSION = '0.1.0';

type Json = Record<string, unknown>;

/** What each area's routes are about (the document's tag descriptions). */
const AREA_DESCRIPTIONS: Record<string, string> = {
  meta: 'Health and the self-description of the API',
  auth: 'Accounts, sessions and personal access tokens',
  permissions: 'Members, roles, grants, invitations and team organizations',
  audit: "The organization's audit log",
  projects: 'Projects: configuration, environment variables, resources, domains, route rules and services',
  uploads: 'Folder uploads and local imports',
  gitprovider: 'The git provider connection (GitHub), its repositories and webhooks',
  deployments: 'Deployments, their build logs and the runtime logs of projects',
  backups: 'Backup destinations, policies, runs and restores',
  cloud: 'The link between a self-hosted instance and the cloud, and project transfers',
};

function toOpenApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const cap = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
const camel = (s: string) => s.split(/[^A-Za-z0-9]+/).filter(Boolean).map(cap).join('');

/** `DELETE /api/permissions/grants/:id` -> `deletePermissionsGrantsById` (URL-safe, camelCase). */
export function operationIdOf(method: string, url: string): string {
  const parts = url
    .replace(/^\/api\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith(':') ? `By${cap(seg.slice(1))}` : camel(seg)));
  return method.toLowerCase() + parts.join('');
}

function parametersOf(def: AnyRoute, info: RouteInfo): Json[] {
  const out: Json[] = [];
  const params = def.schema?.params as { properties?: Record<string, unknown> } | undefined;
  for (const name of (def.url.match(/:([A-Za-z0-9_]+)/g) ?? []).map((s) => s.slice(1))) {
    out.push({ name, in: 'path', required: true, schema: params?.properties?.[name] ?? { type: 'string' } });
  }
  const q = def.schema?.querystring as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(q?.properties ?? {})) {
    out.push({ name, in: 'query', required: q?.required?.includes(name) ?? false, schema });
  }
  if (info.access === 'stream-token' && !q?.properties?.token) {
    out.push({
      name: 'token',
      in: 'query',
      required: false,
      description: `a ${info.streamToken ?? ''} stream token for this record (for clients that cannot send headers: a browser EventSource)`,
      schema: { type: 'string', maxLength: 200 },
    });
  }
  return out;
}

/** The success response: the `{ data }` envelope of `schema.response`, the whole body, or a raw content type. */
function successOf(def: AnyRoute): Json {
  if (def.raw || def.produces) {
    const type = def.produces ?? 'application/octet-stream';
    const schema = type.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' };
    return { description: `success: ${type}`, content: { [type]: { schema } } };
  }
  const response = def.schema?.response as TSchema | undefined;
  if (!response) return { description: 'success (no response schema declared)' };
  const schema = def.envelope === false ? response : { type: 'object', properties: { data: response }, required: ['data'] };
  return { description: 'success', content: { 'application/json': { schema } } };
}

/** The error answers a route can give, from what its gate checks (every one in the error envelope). */
function errorsOf(def: AnyRoute, info: RouteInfo): Json {
  const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
  const out: Json = { '400': ref('BadRequest') };
  if (info.access !== 'public') {
    out['401'] = ref('Unauthenticated');
    out['403'] = ref('Forbidden');
  }
  if (info.resource || /:[A-Za-z]/.test(def.url) || info.selfHostedOnly || info.cloudOnly) out['404'] = ref('NotFound');
  out.default = ref('Error');
  return out;
}

function securityOf(info: RouteInfo): Json[] {
  if (info.access === 'public') return [];
  const credentials = [{ bearer: [] }, { cookie: [] }];
  return info.access === 'stream-token' ? [...credentials, { streamToken: [] }] : credentials;
}

function resourceExtension(info: RouteInfo): Json | null {
  const r = info.resource;
  if (!r) return null;
  return { kind: r.kind, in: r.from === 'param' ? 'path' : r.from, name: r.field, optional: r.optional };
}

function errorResponse(description: string): Json {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

export function buildOpenApi(modules: ModuleDef[], mode: string): Json {
  const paths: Record<string, Json> = {};
  const usedIds = new Set<string>();
  for (const m of modules) {
    for (const def of m.routes) {
      const info = routeInfo(def);
      const p = (paths[toOpenApiPath(def.url)] ??= {});
      let operationId = operationIdOf(def.method, def.url);
      for (let i = 2; usedIds.has(operationId); i++) operationId = `${operationIdOf(def.method, def.url)}${i}`;
      usedIds.add(operationId);
      p[def.method.toLowerCase()] = {
        summary: def.summary,
        tags: [m.name],
        operationId,
        'x-access': info.access,
        'x-permission': info.tag,
        'x-requires': info.requires,
        'x-role-gate': info.gate,
        'x-resource': resourceExtension(info),
        'x-stream-token': info.streamToken,
        'x-self-hosted-only': info.selfHostedOnly,
        'x-cloud-only': info.cloudOnly,
        security: securityOf(info),
        parameters: parametersOf(def, info),
        ...(def.schema?.body ? { requestBody: { required: !TypeGuard.IsOptional(def.schema.body), content: { 'application/json': { schema: def.schema.body } } } } : {}),
        responses: { [String(def.status ?? 200)]: successOf(def), ...errorsOf(def, info) },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth API',
      version: VERSION,
      description: `Berth deployment platform (${mode} mode). Every operation states what it requires: x-access, x-permission, x-requires, x-role-gate and x-resource.`,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'this instance' }],
    security: [{ bearer: [] }, { cookie: [] }],
    tags: modules.map((m) => ({ name: m.name, description: AREA_DESCRIPTIONS[m.name] ?? `Routes of the ${m.name} area` })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'personal access token (berth_pat_...)' },
        cookie: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'the dashboard session (unsafe methods also need Origin)' },
        streamToken: { type: 'apiKey', in: 'query', name: 'token', description: 'a short-lived stream token (stream-token routes only)' },
      },
      responses: {
        BadRequest: errorResponse('validation failed (the field is named)'),
        Unauthenticated: errorResponse('no credential, or a bad, expired or revoked one'),
        Forbidden: errorResponse('the credential does not allow this (same organization)'),
        NotFound: errorResponse("no such record in the caller's organization (another organization's record answers the same)"),
        Error: errorResponse('any other error, in the error envelope'),
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
          required: ['error'],
        },
      },
    },
  };
}
