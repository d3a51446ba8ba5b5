import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { IdParams, Obj, Str } from '../../http/schemas.js';
import { gateAccess } from '../../http/stream-access.js';
import { AppError } from '../../lib/errors.js';
import { EVENT_STREAM, IssuedTokenSchema, LogLineSchema, LogPageSchema, RequestEntrySchema } from './deployments.presenters.js';
import { downloadAppLogs, searchAppLogs } from './log-search.service.js';
import { isTerminal, readBuildLogs } from './deployments.service.js';
import * as store from './deployments.store.js';
import { checkSince, streamLogs } from './log-stream.js';
import { hostOf } from './host.js';
import { serverLogStreamToken } from './stream-tokens.service.js';
import { appOfEnvironment, appsOfEnvironment, EVERY_ENVIRONMENT, followRequests, readRecentRequests } from './request-log.service.js';

/**
 * Logs: a deployment's build log and a project's runtime log (read, or streamed as SSE; a preview
 * environment's app has its own, `?environment=`), and the edge's request log of a project (a
 * preview's host has its own too). The build-log and request-log streams also take a short-lived
 * stream token (`?token=` or `Bearer berth_dpl_…`/`berth_slt_…`, access `stream-token`): a browser
 * EventSource cannot send a credential.
 */

const Limit = (maximum: number) => Type.Optional(Type.Integer({ minimum: 1, maximum }));
/** Whose runtime or request log: an environment's name (default `production`; a preview's app has its own). */
const Environment = Type.Optional(Str({ min: 1, max: 64 }));
/** The request log's: also `*`, every environment at once (request-log.service.ts). */
const RequestEnvironment = Type.Optional(Str({ min: 1, max: 64, description: "an environment's name (default `production`), or `*` for every environment, each entry naming its own" }));

const Since = Type.Optional(Str({ max: 64 }));
/** What a search of the kept logs takes (log-search.service.ts). */
const SearchQuery = {
  q: Type.Optional(Str({ max: 200 })),
  since: Since,
  until: Type.Optional(Str({ max: 64 })),
  stream: Type.Optional(Str({ max: 64 })),
  environment: Environment,
};
const Token = Type.Optional(Str({ max: 200 }));
/** `false`: send what is there and close (no live tail). */
const Follow = Type.Optional(Type.Boolean());

export const logRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/deployments/:id/logs',
    summary: 'Build logs of a deployment (credential, or a build-access / deployment-session token)',
    tag: 'project:deployment:read',
    access: 'stream-token',
    streamToken: 'build',
    resource: { kind: 'deployment', param: 'id' },
    schema: { params: IdParams, querystring: Obj({ limit: Limit(10000), since: Since, token: Token }), response: Type.Array(LogLineSchema) },
    handler: ({ query, resource }, ctx) => {
      if (!resource) throw new AppError('NOT_FOUND', 'deployment not found');
      return readBuildLogs(ctx, resource.record, { limit: query.limit, since: checkSince(query.since) });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/deployments/:id/logs/stream',
    summary: 'Stream the build logs of a deployment (SSE `log` events; closes when the deployment is done)',
    tag: 'project:deployment:read',
    access: 'stream-token',
    streamToken: 'build',
    resource: { kind: 'deployment', param: 'id' },
    raw: true,
    produces: EVENT_STREAM,
    schema: { params: IdParams, querystring: Obj({ token: Token, follow: Follow }) },
    handler: ({ query, resource, req, reply }, ctx) => {
      if (!resource) throw new AppError('NOT_FOUND', 'deployment not found');
      const d = resource.record;
      const logs = hostOf(ctx).logs;
      const file = logs.build(d.projectId, d.id);
      streamLogs(reply, req.id, {
        event: 'log',
        backlog: file.read({ limit: 10000 }),
        // Lines written by any instance (the build may run on another one: log-relay.ts).
        subscribe: (fn) => hostOf(ctx).logRelay.follow(`d:${d.id}`, file, fn),
        until: async () => {
          const now = await store.findDeployment(ctx.db, d.orgId, d.id);
          return !now || isTerminal(now.status);
        },
        follow: query.follow ?? !isTerminal(d.status),
        access: gateAccess(req),
      });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/logs',
    summary: "Search the project's kept logs (runtime by default; `stream=runtime,build,request,stdout,stderr`): `q` text, `since`/`until` times, newest `limit` lines before `cursor`, oldest first; `environment` names a preview's app",
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    // The page's cursor sits beside `data`: the handler answers the whole body.
    envelope: false,
    schema: { params: IdParams, querystring: Obj({ ...SearchQuery, limit: Limit(10000), cursor: Type.Optional(Str({ min: 1, max: 400 })) }), response: LogPageSchema },
    handler: async ({ query, resource }, ctx) => {
      const app = await appOfEnvironment(ctx, resource.record, query.environment);
      return searchAppLogs(ctx, resource.record.id, app, query);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/logs/download',
    summary: "Download the lines of the project's kept logs a search matches (same `q`, `since`, `until`, `stream`, `environment`), oldest first, as JSON lines (at most 200,000, the newest: `X-Berth-Truncated: true` when more matched)",
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    raw: true,
    produces: 'application/x-ndjson',
    schema: { params: IdParams, querystring: Obj(SearchQuery) },
    handler: async ({ query, resource, reply }, ctx) => {
      const app = await appOfEnvironment(ctx, resource.record, query.environment);
      const { text, truncated } = await downloadAppLogs(ctx, resource.record.id, app, query);
      const name = `${resource.record.slug}-logs.jsonl`;
      return reply
        .header('content-type', 'application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('cache-control', 'no-store')
        .header('x-berth-truncated', String(truncated))
        .send(text);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/logs/stream',
    summary: "Stream the runtime logs of the project's app (SSE `log` events); `environment` names a preview's app",
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    raw: true,
    produces: EVENT_STREAM,
    schema: { params: IdParams, querystring: Obj({ limit: Limit(10000), since: Since, follow: Follow, environment: Environment }) },
    handler: async ({ query, resource, req, reply }, ctx) => {
      const app = await appOfEnvironment(ctx, resource.record, query.environment);
      const logs = hostOf(ctx).logs;
      const file = logs.runtime(app);
      streamLogs(reply, req.id, {
        event: 'log',
        backlog: file.read({ limit: query.limit ?? 100, since: checkSince(query.since) }),
        // Lines written by any instance (the app may run on another one: log-relay.ts).
        subscribe: (fn) => hostOf(ctx).logRelay.follow(`p:${app}`, file, fn),
        follow: query.follow ?? true,
        access: gateAccess(req),
      });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/server-logs/recent',
    summary: "Recent HTTP requests the edge served for the project; `environment` names a preview's host, `*` every environment's (each entry naming its `environment`)",
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    schema: { params: IdParams, querystring: Obj({ limit: Limit(1000), environment: RequestEnvironment }), response: Type.Array(RequestEntrySchema) },
    handler: ({ query, resource }, ctx) => readRecentRequests(ctx, resource.record, query.environment, query.limit ?? 100),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/server-logs/stream-token',
    summary: 'Mint a 60-second read-only token for the request-log stream of this project',
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    schema: { params: IdParams, response: IssuedTokenSchema },
    handler: ({ resource, actor }, ctx) => serverLogStreamToken(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/server-logs/stream',
    summary: "Stream the HTTP requests of the project (SSE `request` events); `?token=` from stream-token; `environment` names a preview's host, `*` every environment's",
    tag: 'project:read',
    access: 'stream-token',
    streamToken: 'server_logs',
    resource: { kind: 'project', param: 'id' },
    raw: true,
    produces: EVENT_STREAM,
    schema: { params: IdParams, querystring: Obj({ token: Token, follow: Follow, environment: RequestEnvironment }) },
    handler: async ({ query, resource, req, reply }, ctx) => {
      const apps = await appsOfEnvironment(ctx, resource.record, query.environment);
      streamLogs(reply, req.id, {
        event: 'request',
        backlog: [],
        // Requests served by any instance's edge (log-relay.ts).
        subscribe: (fn) => followRequests(ctx, apps, query.environment === EVERY_ENVIRONMENT, fn),
        follow: query.follow ?? true,
        access: gateAccess(req),
      });
    },
  }),
];
