import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import type { Actor } from '../authz/actor.js';
import { authorize, scopesAllow, type ResourceRef } from '../authz/authorize.js';
import { isTag, parseTag } from '../authz/tags.js';
import type { AppContext } from '../context.js';
import { AppError } from '../lib/errors.js';
import { authenticateRequest, checkCsrf } from './auth.js';
import { rawBodyHook } from './raw-body.js';
import { invalidateAuthCache } from '../modules/auth/auth.cache.js';

/**
 * How a route is reached:
 * - `tag` (default): authenticated, and the actor must hold `tag` (on the route's resource, if any);
 * - `member`: any member of the active org, whatever the role (the four open permission routes);
 *   the tag still narrows scoped tokens;
 * - `authenticated`: any signed-in user (own account, own tokens);
 * - `public`: no credential (health, login, inbound webhooks).
 */
export type Access = 'tag' | 'member' | 'authenticated' | 'public';

/** The record a route acts on: resolved from a path parameter, scoped to the actor's org. */
export interface RouteResource {
  kind: string;
  param: string;
}

export interface ResolvedResource extends ResourceRef {
  kind: string;
  id: string;
  record?: unknown;
}

export type ResourceResolver = (ctx: AppContext, orgId: string, id: string) => Promise<ResolvedResource | null>;

export interface RouteSchemas {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response?: TSchema;
}

type S<T> = T extends TSchema ? Static<T> : undefined;

export interface HandlerInput<Sc extends RouteSchemas> {
  params: S<Sc['params']>;
  query: S<Sc['querystring']>;
  body: S<Sc['body']>;
  /** Non-null on every route that is not public. */
  actor: Actor;
  resource: ResolvedResource | undefined;
  req: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteDef<Sc extends RouteSchemas = RouteSchemas> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  summary: string;
  tag?: string;
  access?: Access;
  /** Additionally require the owner or admin role (admin-gated permission routes). */
  gate?: 'admin';
  resource?: RouteResource;
  selfHostedOnly?: boolean;
  /** 404 on a self-hosted instance, before authentication (the cloud's transfer endpoints). */
  cloudOnly?: boolean;
  /** Success status (default 200). */
  status?: number;
  /** The handler writes the reply itself (SSE, streams, redirects). */
  raw?: boolean;
  bodyLimit?: number;
  /** Keep the exact request bytes in `req.rawBody` and leave the body unparsed (signed webhooks). */
  rawBody?: boolean;
  /**
   * Content types whose body the handler reads itself as a stream (`body` is the raw request stream;
   * no buffering, and Fastify's bodyLimit does not apply: the handler counts bytes). Others are 415.
   */
  streamBody?: string[];
  schema?: Sc;
  handler(input: HandlerInput<Sc>, ctx: AppContext): Promise<unknown> | unknown;
}

/** Identity function that gives a route definition its types. */
export function defineRoute<Sc extends RouteSchemas>(def: RouteDef<Sc>): RouteDef<Sc> {
  return def;
}

/** A handler's answer that is not the plain `{ data }` envelope. */
export class Answer {
  constructor(
    readonly body: unknown,
    readonly status?: number,
    readonly headers?: Record<string, string>,
  ) {}
}

export interface ModuleDef {
  name: string;
  routes: RouteDef<any>[];
  resolvers?: Record<string, ResourceResolver>;
  /** Registers job handlers and scheduled tickers; runs in buildApp(). */
  init?(ctx: AppContext): void | Promise<void>;
  /** Starts background work (after listen, in `berth serve` and tests that ask for it). */
  start?(ctx: AppContext): void | Promise<void>;
  /** Stops background work (before the database closes). */
  stop?(ctx: AppContext): void | Promise<void>;
  /**
   * Runs for routes with a `resource` after the gate passed, and for public routes, before the body
   * is read; answers true when it took the reply over (the cloud module forwards requests for cloud
   * projects).
   */
  forward?(def: RouteDef<any>, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean>;
  /**
   * Runs for routes with a `resource` whose resolver found no record in the actor's org (after
   * authentication, CSRF and the role gate, before the 404 and before the body is read): the record
   * may live elsewhere (the cloud module forwards backup routes named by a cloud record's id). The
   * hook authorizes the actor itself (authorize(): 403 same org, 404 otherwise) before it sends
   * anything, and answers true when it took the reply over; false leaves the usual 404.
   */
  forwardUnresolved?(def: RouteDef<any>, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean>;
}

declare module 'fastify' {
  interface FastifyRequest {
    actor: Actor | null;
    resource?: ResolvedResource;
    /**
     * Raw routes behind the gate (streams): runs the gate's authentication and authorization again,
     * with the credential re-validated; throws as the gate would (401, 403, 404). Open streams call it
     * to end when their access ends (`src/http/stream-access.ts`).
     */
    reauthorize?: () => Promise<Actor>;
  }
  interface FastifyContextConfig {
    berth?: RouteDef<any>;
  }
}

/** Metadata of a registered route, as data (tests and the OpenAPI document walk it). */
export interface RouteInfo {
  method: string;
  url: string;
  summary: string;
  tag: string | null;
  access: Access;
  gate: 'admin' | null;
  resource: RouteResource | null;
  selfHostedOnly: boolean;
}

export function routeInfo(def: RouteDef<any>): RouteInfo {
  return {
    method: def.method,
    url: def.url,
    summary: def.summary,
    tag: def.tag ?? null,
    access: def.access ?? 'tag',
    gate: def.gate ?? null,
    resource: def.resource ?? null,
    selfHostedOnly: !!def.selfHostedOnly,
  };
}

function checkDefinition(def: RouteDef<any>): void {
  const access = def.access ?? 'tag';
  if ((access === 'tag' || access === 'member') && (!def.tag || !isTag(def.tag))) {
    throw new Error(`route ${def.method} ${def.url} must declare a permission tag`);
  }
  if (def.tag && !isTag(def.tag)) throw new Error(`route ${def.method} ${def.url}: bad tag ${def.tag}`);
}

/**
 * Registers every module's routes. Each route's gate runs in its onRequest hook, before the body
 * is read: self-hosted-only check, authentication, CSRF, role gate, tag and resource authorization.
 */
export function registerModules(app: FastifyInstance, ctx: AppContext, modules: ModuleDef[]): RouteInfo[] {
  const resolvers = new Map<string, ResourceResolver>();
  for (const m of modules) for (const [k, fn] of Object.entries(m.resolvers ?? {})) resolvers.set(k, fn);
  const infos: RouteInfo[] = [];
  const forwarders = modules.flatMap((m) => (m.forward ? [m.forward.bind(m)] : []));
  const unresolvedForwarders = modules.flatMap((m) => (m.forwardUnresolved ? [m.forwardUnresolved.bind(m)] : []));

  for (const m of modules) {
    for (const def of m.routes) {
      checkDefinition(def);
      if (def.resource && !resolvers.has(def.resource.kind)) throw new Error(`no resolver for resource kind ${def.resource.kind}`);
      infos.push(routeInfo(def));
      const access = def.access ?? 'tag';
      const status = def.status ?? 200;
      const schema: Record<string, unknown> = {};
      if (def.schema?.params) schema.params = def.schema.params;
      if (def.schema?.querystring) schema.querystring = def.schema.querystring;
      if (def.schema?.body) schema.body = def.schema.body;
      if (def.schema?.response) schema.response = { [status]: Type.Object({ data: def.schema.response }) };

      /** The gate below, once more, for an open stream (no CSRF, no forwarding: the stream is open here). */
      const reauthorize = async (req: FastifyRequest, first: Actor): Promise<Actor> => {
        const actor = await authenticateRequest(ctx, req);
        if (!actor || actor.userId !== first.userId) throw new AppError('UNAUTHENTICATED', 'the credential of this stream is no longer valid');
        if (access === 'authenticated') return actor;
        if (def.gate === 'admin' && actor.role !== 'owner' && actor.role !== 'admin') throw new AppError('FORBIDDEN', 'only an owner or admin of the organization can do this');
        const tag = parseTag(def.tag!);
        if (access === 'member') {
          if (!scopesAllow(actor, tag)) throw new AppError('FORBIDDEN', `this token's scopes do not cover ${def.tag}`);
          return actor;
        }
        if (def.resource) {
          const id = (req.params as Record<string, string>)[def.resource.param] ?? '';
          const resolved = await resolvers.get(def.resource.kind)!(ctx, actor.orgId, id);
          authorize(actor, tag, resolved, def.resource.kind.replace(/_/g, ' '));
        } else {
          authorize(actor, tag, undefined);
        }
        return actor;
      };

      app.route({
        method: def.method,
        url: def.url,
        schema,
        bodyLimit: def.bodyLimit,
        config: { berth: def },
        ...(def.rawBody ? { preParsing: rawBodyHook(def.bodyLimit ?? 1024 * 1024) } : {}),
        onRequest: async (req, reply) => {
          if (def.selfHostedOnly && ctx.config.mode === 'cloud') throw new AppError('NOT_FOUND', 'route not found');
          if (def.cloudOnly && ctx.config.mode !== 'cloud') throw new AppError('NOT_FOUND', 'route not found');
          if (def.streamBody && req.headers['content-type'] !== undefined) {
            // Refused before any parser (JSON, text) reads the body.
            const type = String(req.headers['content-type']).split(';')[0]!.trim().toLowerCase();
            if (!def.streamBody.includes(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `send ${def.streamBody[0]} (got ${type || 'no content type'})`);
          }
          if (access === 'public') {
            req.actor = null;
            // Public per-project routes (token-in-query streams) of a cloud project go to the cloud too.
            for (const forward of forwarders) if (await forward(def, req, reply, ctx)) return reply;
            return;
          }
          const actor = await authenticateRequest(ctx, req);
          if (!actor) throw new AppError('UNAUTHENTICATED', 'authentication required: send a bearer token or a session cookie');
          checkCsrf(ctx, req, actor);
          req.actor = actor;
          if (def.raw) req.reauthorize = () => reauthorize(req, actor);
          if (access === 'authenticated') return;
          if (def.gate === 'admin' && actor.role !== 'owner' && actor.role !== 'admin') {
            throw new AppError('FORBIDDEN', 'only an owner or admin of the organization can do this');
          }
          const tag = parseTag(def.tag!);
          if (access === 'member') {
            // Any member passes the role check; a scoped token must still cover the tag.
            if (!scopesAllow(actor, tag)) {
              throw new AppError('FORBIDDEN', `this token's scopes do not cover ${def.tag}`);
            }
            return;
          }
          if (def.resource) {
            const id = (req.params as Record<string, string>)[def.resource.param] ?? '';
            const resolved = await resolvers.get(def.resource.kind)!(ctx, actor.orgId, id);
            if (!resolved) {
              // Not a record of this instance: it may be one of its cloud's (the hook authorizes).
              for (const forward of unresolvedForwarders) if (await forward(def, req, reply, ctx)) return reply;
            }
            authorize(actor, tag, resolved, def.resource.kind.replace(/_/g, ' '));
            req.resource = resolved!;
            for (const forward of forwarders) if (await forward(def, req, reply, ctx)) return reply;
          } else {
            authorize(actor, tag, undefined);
          }
        },
        handler: async (req, reply) => {
          const out = await def.handler(
            {
              params: req.params as never,
              query: req.query as never,
              body: req.body as never,
              actor: req.actor as Actor,
              resource: req.resource,
              req,
              reply,
            },
            ctx,
          );
          // Any write may change who can do what (roles, grants, memberships, tokens): the
          // short-lived credential cache is dropped so the next request sees it at once.
          if (def.method !== 'GET') invalidateAuthCache();
          if (def.raw) return reply;
          if (out instanceof Answer) {
            if (out.headers) reply.headers(out.headers);
            return reply.code(out.status ?? status).send(out.body);
          }
          return reply.code(status).send({ data: out === undefined ? null : out });
        },
      });
    }
  }
  // One parser for every streamed content type: it hands the raw stream over only to routes that
  // declared the type in `streamBody`.
  const streamTypes = [...new Set(modules.flatMap((m) => m.routes.flatMap((r) => (r as RouteDef).streamBody ?? [])))];
  if (streamTypes.length) {
    app.addContentTypeParser(streamTypes, (req, payload, done) => {
      const def = req.routeOptions.config.berth;
      const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (def?.streamBody?.includes(type)) return done(null, payload);
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', `unsupported content type ${type}`), undefined);
    });
  }
  return infos;
}
