import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Type } from '@sinclair/typebox';
import { isTag } from '../authz/tags.js';
import type { AppContext } from '../context.js';
import { AppError } from '../lib/errors.js';
import { markUpload } from './connection-guard.js';
import { RouteGate } from './gate.js';
import { rawBodyHook } from './raw-body.js';
import { Answer, JsonText, resourceInfo, routeInfo, type AnyRoute, type ModuleDef, type ResourceResolver, type RouteInfo } from './route.js';

/** Refuses, at start-up, a route whose declaration cannot be enforced as written. */
export function checkDefinition(def: AnyRoute, resolvers: ReadonlyMap<string, ResourceResolver>): void {
  const where = `route ${def.method} ${def.url}`;
  const access = def.access ?? 'tag';
  const source = resourceInfo(def.resource);
  if (access !== 'public' && access !== 'authenticated' && (!def.tag || !isTag(def.tag))) throw new Error(`${where} must declare a permission tag`);
  if (def.tag && !isTag(def.tag)) throw new Error(`${where}: bad tag ${def.tag}`);
  for (const r of def.requires ?? []) if (!isTag(r.tag)) throw new Error(`${where}: bad required tag ${r.tag}`);
  if (def.requires?.length && (access === 'public' || access === 'authenticated' || access === 'member')) throw new Error(`${where}: requirements need access 'tag' or 'stream-token'`);
  if (def.requires?.some((r) => r.on === 'project') && !source) throw new Error(`${where}: a requirement on the parent project needs a resource`);
  if (source && !resolvers.has(source.kind)) throw new Error(`${where}: no resolver for resource kind ${source.kind}`);
  if (source && (access === 'member' || access === 'public' || access === 'authenticated')) throw new Error(`${where}: a resource needs access 'tag' or 'stream-token'`);
  if (source?.from === 'param' && !def.url.includes(`:${source.field}`)) throw new Error(`${where}: no path parameter ${source.field}`);
  if (access === 'stream-token' && (!def.streamToken || source?.from !== 'param')) throw new Error(`${where}: a stream-token route names its token kind and a path-parameter resource`);
}

/**
 * A route's onRequest, preHandler and handler around its gate. Callback style, and no promise where
 * none is needed: a gate that answers without one (most authenticated reads) and a handler that does
 * (a cached read) cost none here.
 */
function routeHooks(ctx: AppContext, def: AnyRoute, gate: RouteGate) {
  const status = def.status ?? 200;
  const answer = (out: unknown, reply: FastifyReply): FastifyReply => {
    if (def.raw) return reply;
    if (out instanceof JsonText) return reply.code(status).type('application/json; charset=utf-8').send(out.text);
    if (out instanceof Answer) {
      if (out.headers) reply.headers(out.headers);
      return reply.code(out.status ?? status).send(out.body);
    }
    if (def.envelope === false) return reply.code(status).send(out);
    return reply.code(status).send({ data: out === undefined ? null : out });
  };
  return {
    onRequest: (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      // Uploads get a longer body idle limit and no whole-request cap (connection-guard.ts): marked
      // by their own route, so that other requests do not pay for the check.
      if (def.streamBody) markUpload(req.raw);
      let checked: ReturnType<RouteGate['onRequest']>;
      try {
        checked = gate.onRequest(req, reply);
      } catch (err) {
        return done(err as Error);
      }
      if (checked instanceof Promise) checked.then(() => done(), done);
      else done();
    },
    ...(gate.checksBody ? { preHandler: (req: FastifyRequest, reply: FastifyReply) => gate.preHandler(req, reply) } : {}),
    handler: (req: FastifyRequest, reply: FastifyReply) => {
      const input = { params: req.params as never, query: req.query as never, body: req.body as never, actor: req.actor as never, resource: req.resource as never, req, reply };
      const out = def.handler(input, ctx);
      if (out instanceof Promise) return out.then((value) => answer(value, reply));
      answer(out, reply);
      return undefined;
    },
  };
}

/**
 * Registers every module's routes. Each route's gate (`src/http/gate.ts`) runs in its onRequest hook,
 * before the body is read (and, for a record named in the body, in preHandler, after validation).
 */
export function registerModules(app: FastifyInstance, ctx: AppContext, modules: ModuleDef[]): RouteInfo[] {
  const resolvers = new Map<string, ResourceResolver>();
  for (const m of modules) for (const [k, fn] of Object.entries(m.resolvers ?? {})) resolvers.set(k, fn);
  const infos: RouteInfo[] = [];

  for (const m of modules) {
    for (const def of m.routes) {
      checkDefinition(def, resolvers);
      infos.push(routeInfo(def));
      const status = def.status ?? 200;
      const schema: Record<string, unknown> = {};
      if (def.schema?.params) schema.params = def.schema.params;
      if (def.schema?.querystring) schema.querystring = def.schema.querystring;
      if (def.schema?.body) schema.body = def.schema.body;
      if (def.schema?.response) {
        const body = def.envelope === false ? def.schema.response : Type.Object({ data: def.schema.response });
        schema.response = Object.fromEntries([status, ...(def.statuses ?? [])].map((s) => [s, body]));
      }
      const source = resourceInfo(def.resource);
      // The forwarding hooks that can apply to this route (the cloud's, for a self-hosted instance's routes naming a record).
      const applying = modules.filter((fm) => !fm.forwards || fm.forwards(def, ctx));
      const forwarders = applying.flatMap((fm) => (fm.forward ? [fm.forward.bind(fm)] : []));
      const unresolvedForwarders = applying.flatMap((fm) => (fm.forwardUnresolved ? [fm.forwardUnresolved.bind(fm)] : []));
      const gate = new RouteGate(ctx, def, source ? resolvers.get(source.kind) : undefined, forwarders, unresolvedForwarders);

      app.route({
        method: def.method,
        url: def.url,
        schema,
        bodyLimit: def.bodyLimit,
        config: { berth: def },
        ...(def.rawBody ? { preParsing: rawBodyHook(def.bodyLimit ?? 1024 * 1024) } : {}),
        ...routeHooks(ctx, def, gate),
      });
    }
  }
  // One parser for every streamed content type: it hands the raw stream over only to routes that
  // declared the type in `streamBody`.
  const streamTypes = [...new Set(modules.flatMap((m) => m.routes.flatMap((r) => r.streamBody ?? [])))];
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
