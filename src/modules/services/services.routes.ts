import { Type } from '@sinclair/typebox';
import { streamLogs } from '../../http/log-stream.js';
import { defineRoute } from '../../http/route.js';
import { gateAccess } from '../../http/stream-access.js';
import { takeUpgrade } from '../../http/upgrade.js';
import { invalid } from '../../lib/errors.js';
import { Obj, Id } from '../../http/schemas.js';
import * as managed from './managed.service.js';
import { connectService, relay, TUNNEL_PROTOCOL } from './tunnel.js';
import { CreateServiceBody, CredentialsSchema, LogLinesSchema, LogsQuery, LogStreamQuery, DeletedServiceSchema, DeleteServiceQuery, KindsSchema, ListServicesQuery, PatchServiceBody, ServiceParams, ServiceSchema } from './services.presenters.js';

const P = { kind: 'project', param: 'id' } as const;
const ProjectParams = Obj({ id: Id });

/** Services of a project (contract section 19): managed databases, attached ones and the data volume. */
export const serviceRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/services/kinds',
    summary: 'The kinds and versions of managed services each runtime offers, and this server\'s runtime',
    access: 'member',
    tag: 'project:read',
    schema: { response: KindsSchema },
    handler: (_req, ctx) => managed.serviceKinds(ctx),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services',
    summary: "List the project's services (the data volume, attached and managed databases); `environment` names a preview to list its own instances",
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, querystring: ListServicesQuery, response: Type.Array(ServiceSchema) },
    handler: ({ query, resource }, ctx) => managed.listServices(ctx, resource.record, query.environment),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/services',
    summary: 'Create and start a managed database (kind, name, version?), or attach an outside PostgreSQL (connectionUrl)',
    tag: 'project:write',
    resource: P,
    status: 201,
    schema: { params: ProjectParams, body: CreateServiceBody, response: ServiceSchema },
    handler: ({ actor, body, resource }, ctx) => managed.createService(ctx, actor, resource.record, body),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services/:sid',
    summary: 'A service of the project',
    tag: 'project:read',
    resource: P,
    schema: { params: ServiceParams, response: ServiceSchema },
    handler: ({ params, resource }, ctx) => managed.getService(ctx, resource.record, params.sid),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id/services/:sid',
    summary: 'Resize a managed service (it restarts), or stop (stopped: true) and start it (stopped: false)',
    tag: 'project:write',
    resource: P,
    schema: { params: ServiceParams, body: PatchServiceBody, response: ServiceSchema },
    handler: ({ actor, body, params, resource }, ctx) => managed.updateService(ctx, actor, resource.record, params.sid, body),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/services/:sid/restart',
    summary: 'Restart a managed service (a stopped one starts)',
    tag: 'project:write',
    resource: P,
    schema: { params: ServiceParams, response: ServiceSchema },
    handler: ({ actor, params, resource }, ctx) => managed.restartService(ctx, actor, resource.record, params.sid),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id/services/:sid',
    summary: 'Delete a managed service and its data (keepVolume=true keeps the data folder); needs admin on the project',
    tag: 'project:admin',
    resource: P,
    schema: { params: ServiceParams, querystring: DeleteServiceQuery, response: DeletedServiceSchema },
    handler: ({ actor, params, query, resource }, ctx) => managed.deleteService(ctx, actor, resource.record, params.sid, query.keepVolume === true),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services/:sid/logs',
    summary: "A managed service's last output lines on this server (passwords redacted), oldest first",
    tag: 'project:read',
    resource: P,
    schema: { params: ServiceParams, querystring: LogsQuery, response: LogLinesSchema },
    handler: ({ params, query, resource }, ctx) => managed.serviceLogs(ctx, resource.record, params.sid, query.limit ?? 200),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services/:sid/logs/stream',
    summary: "Stream a managed service's output (SSE `log` events: the last `limit` lines, then live ones; `follow=false` closes after the backlog); ends when access ends",
    tag: 'project:read',
    resource: P,
    raw: true,
    produces: 'text/event-stream',
    schema: { params: ServiceParams, querystring: LogStreamQuery },
    handler: async ({ params, query, resource, req, reply }, ctx) => {
      const feed = await managed.serviceLogFeed(ctx, resource.record, params.sid, query.limit ?? 100);
      streamLogs(reply, req.id, { event: 'log', backlog: feed.backlog, subscribe: feed.subscribe, follow: query.follow ?? true, access: gateAccess(req) });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services/:sid/credentials',
    summary: "Reveal a managed service's generated credentials and connection URL (project admins; audited)",
    tag: 'project:admin',
    resource: P,
    schema: { params: ServiceParams, response: CredentialsSchema },
    handler: ({ actor, params, resource }, ctx) => managed.revealCredentials(ctx, actor, resource.record, params.sid),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/services/:sid/tunnel',
    summary: "Open a TCP tunnel to a running managed service (`Connection: Upgrade`, `Upgrade: berth-tcp`; answers 101, then relays raw bytes both ways; project admins; audited): what `berth services connect` runs psql, mysql or redis-cli through. Ends when access ends",
    tag: 'project:admin',
    resource: P,
    raw: true,
    produces: 'application/octet-stream',
    schema: { params: ServiceParams },
    handler: async ({ actor, params, resource, req, reply }, ctx) => {
      const upgrade = takeUpgrade(req.raw, TUNNEL_PROTOCOL);
      if (!upgrade) throw invalid('headers.upgrade', `this route opens a tunnel: send "Connection: Upgrade" and "Upgrade: ${TUNNEL_PROTOCOL}" (berth services connect does)`);
      const upstream = await connectService(ctx, actor, resource.record, params.sid);
      reply.hijack();
      const { socket, head } = upgrade.accept();
      relay(socket, head, upstream, gateAccess(req));
    },
  }),
];
