import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Actor } from '../authz/actor.js';
import type { ResourceRef } from '../authz/authorize.js';
import type { AppContext } from '../context.js';
import type { PortKinds, Ports, StreamTokenKind } from '../ports.js';
import type { AreaState } from '../state.js';
import type { StreamAccess } from './stream-access.js';

/**
 * A route as data: what it requires is declared here and checked by the gate (`src/http/gate.ts`)
 * before the handler runs; the handler does the route's work and nothing else. The authorization
 * matrix test, the OpenAPI document and the cloud's forwarding tables all read these declarations.
 *
 * How a route is reached (`access`):
 * - `tag` (default): authenticated, and the actor must hold `tag` (on the route's resource, if any)
 *   and every one of `requires`;
 * - `member`: any member of the active org, whatever the role (routes acting on the caller's own
 *   records: their invitations, their org's metadata); the tag still narrows scoped tokens;
 * - `authenticated`: any signed-in user (own account, own tokens);
 * - `stream-token`: as `tag`, and a short-lived stream token (`?token=` or `Bearer berth_dpl_…`/
 *   `berth_slt_…`) of kind `streamToken` for the route's record is accepted instead of a credential:
 *   the gate then authorizes the member who minted it;
 * - `public`: no credential (health, login, inbound webhooks, uploads carrying their session's token).
 */
export type Access = 'tag' | 'member' | 'authenticated' | 'stream-token' | 'public';

/**
 * The record type of each resource kind, declared by the area that owns the resolver:
 * `declare module '../../http/route.js' { interface ResourceKinds { project: ProjectRow } }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ResourceKinds {}

export type RecordOf<K extends string> = K extends keyof ResourceKinds ? ResourceKinds[K] : unknown;

/**
 * The record a route acts on, and where its id comes from: a path parameter (resolved before the
 * body is read), a query parameter, a body field (resolved after validation, before the handler), or
 * none (`org: true`: the kind's one record of the actor's org).
 * `optional`: an absent query or body field means "no record": the tag is then checked org-wide.
 */
export type RouteResource<K extends string = string, O extends boolean = boolean> =
  | { kind: K; param: string }
  /** The org-level record of the kind (one per org, no id: e.g. the org's git provider connection). */
  | { kind: K; org: true }
  | { kind: K; query: string; optional?: O }
  | { kind: K; body: string; optional?: O };

/** A check beyond the route's tag (seed "Authentication" 5): `tag` on the record itself or on its parent project. */
export interface Requirement {
  tag: string;
  /** `record` (default): the route's resource (org-wide without one); `project`: the record's parent project. */
  on?: 'record' | 'project';
}

export interface ResolvedResource<K extends string = string> extends ResourceRef {
  kind: K;
  id: string;
  record: RecordOf<K>;
  /** Refs of the records this one lives under, for `requires: [{ on: 'project' }]`. */
  parents?: { project?: ResourceRef };
}

/**
 * Finds a record of one kind in the actor's org (null: none there). `source` is the object the id
 * was read from (path params, query or body), for kinds named by more than one field. `how.read`:
 * the request only reads (GET, HEAD), so a short-lived read cache may answer; a writing request
 * always gets the record from the database. A value rather than a promise when it has the record in
 * memory (the project reads).
 */
export type ResourceResolver<K extends string = string> = (
  ctx: AppContext,
  orgId: string,
  id: string,
  source: Record<string, unknown>,
  how: { read: boolean },
) => ResolvedResource<K> | null | Promise<ResolvedResource<K> | null>;

export interface RouteSchemas {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /** The success payload: the `data` of the envelope (or the whole body with `envelope: false`). */
  response?: TSchema;
}

type S<T> = T extends TSchema ? Static<T> : undefined;
type ResourceInput<K extends string, O extends boolean> = [K] extends [never] ? undefined : ResolvedResource<K> | (true extends O ? undefined : never);

export interface HandlerInput<Sc extends RouteSchemas, K extends string = string, O extends boolean = boolean> {
  params: S<Sc['params']>;
  query: S<Sc['querystring']>;
  body: S<Sc['body']>;
  /** Non-null on every route that is not public (on `stream-token` routes: the token's minter). */
  actor: Actor;
  resource: ResourceInput<K, O>;
  req: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteDef<Sc extends RouteSchemas = RouteSchemas, K extends string = string, O extends boolean = boolean> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  summary: string;
  tag?: string;
  access?: Access;
  /** Additionally require the owner or admin role (admin-gated permission routes). */
  gate?: 'admin';
  resource?: RouteResource<K, O>;
  /** Checks beyond `tag`, in order (seed "Authentication" 5). */
  requires?: Requirement[];
  /** `stream-token` routes: the kind of stream token accepted. */
  streamToken?: StreamTokenKind;
  selfHostedOnly?: boolean;
  /** 404 on a self-hosted instance, before authentication (the cloud's transfer endpoints). */
  cloudOnly?: boolean;
  /** Success status (default 200). */
  status?: number;
  /** Other success statuses the handler answers with (through an `Answer`), with the same response schema. */
  statuses?: number[];
  /** The handler writes the reply itself (SSE, streams, redirects); `produces` says what it sends. */
  raw?: boolean;
  produces?: string;
  /** `false`: the handler's answer is the whole body (no `{ data }` envelope); `schema.response` describes it. */
  envelope?: boolean;
  bodyLimit?: number;
  /** Keep the exact request bytes in `req.rawBody` and leave the body unparsed (signed webhooks). */
  rawBody?: boolean;
  /**
   * Content types whose body the handler reads itself as a stream (`body` is the raw request stream;
   * no buffering, and Fastify's bodyLimit does not apply: the handler counts bytes). Others are 415.
   */
  streamBody?: string[];
  schema?: Sc;
  handler(input: HandlerInput<Sc, K, O>, ctx: AppContext): Promise<unknown> | unknown;
}

// Route lists hold definitions of every schema and kind.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDef<any, any, any>;

/** Identity function that gives a route definition its types. */
export function defineRoute<Sc extends RouteSchemas, K extends string = never, O extends boolean = false>(def: RouteDef<Sc, K, O>): RouteDef<Sc, K, O> {
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

/**
 * A handler's answer already written as JSON by the route's own serializer (`reply.serialize`, so the
 * response schema shaped it), e.g. kept with a cached read: sent as it is, with the route's status.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

export interface ModuleDef {
  name: string;
  routes: AnyRoute[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  resolvers?: Record<string, ResourceResolver<any>>;
  /**
   * This area's per-server state (`ctx.state.<area>`, declared by the area on src/state.ts's
   * `AreaState`); made once per server before any module's `provides`.
   */
  state?(ctx: AppContext): Partial<AreaState>;
  /**
   * The ports this area declares (its `declare module` on src/ports.ts's `Ports`) and how their
   * provisions combine; every port is declared by one module, which also keeps it reachable for tsc.
   */
  declares?: PortKinds;
  /** The ports this area offers others (src/ports.ts); merged into `ctx.ports` before any `init`. */
  provides?(ctx: AppContext): Partial<Ports>;
  /** Registers job handlers and scheduled tickers; runs in buildApp(). */
  init?(ctx: AppContext): void | Promise<void>;
  /** Starts background work (after listen, in `berth serve` and tests that ask for it). */
  start?(ctx: AppContext): void | Promise<void>;
  /** Stops background work (before the database closes). */
  stop?(ctx: AppContext): void | Promise<void>;
  /**
   * Runs for routes with a `resource` after the gate passed, and for public routes, before the body
   * is read; answers true when it took the reply over (the cloud module forwards requests for cloud
   * projects). A plain `false` says at once that the request is not its own, so that the common case
   * (a local record) costs no promise on every request.
   */
  forward?(def: AnyRoute, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): false | Promise<boolean>;
  /**
   * Runs for routes with a path-parameter `resource` whose resolver found no record in the actor's org
   * (after authentication, CSRF and the role gate, before the 404 and before the body is read): the
   * record may live elsewhere (the cloud module forwards backup routes named by a cloud record's id).
   * The hook authorizes the actor itself (authorize(): 403 same org, 404 otherwise) before it sends
   * anything, and answers true when it took the reply over; false leaves the usual 404.
   */
  forwardUnresolved?(def: AnyRoute, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean>;
  /**
   * Whether this module's `forward` and `forwardUnresolved` can apply to `def` at all, decided once per
   * route when it is registered (default: every route), so that requests to other routes never call them.
   */
  forwards?(def: AnyRoute, ctx: AppContext): boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    actor: Actor | null;
    resource?: ResolvedResource;
    /**
     * Raw routes behind the gate (streams): what an open stream re-checks (`gateAccess(req)`): its
     * `check` runs the gate's authentication and authorization again, with the credential re-validated,
     * and throws as the gate would (401, 403, 404) (`src/http/stream-access.ts`).
     */
    streamAccess?: StreamAccess;
  }
  interface FastifyContextConfig {
    berth?: AnyRoute;
  }
}

/** Where a route's record id comes from, as data. */
export interface ResourceInfo {
  kind: string;
  from: 'param' | 'query' | 'body' | 'org';
  field: string;
  optional: boolean;
}

/** Metadata of a registered route, as data (tests, the OpenAPI document and the cloud walk it). */
export interface RouteInfo {
  method: string;
  url: string;
  summary: string;
  tag: string | null;
  access: Access;
  gate: 'admin' | null;
  resource: ResourceInfo | null;
  requires: Required<Requirement>[];
  streamToken: StreamTokenKind | null;
  selfHostedOnly: boolean;
  cloudOnly: boolean;
  /** Success statuses: the declared one first. */
  statuses: number[];
}

export function resourceInfo(r: RouteResource | undefined): ResourceInfo | null {
  if (!r) return null;
  if ('param' in r) return { kind: r.kind, from: 'param', field: r.param, optional: false };
  if ('org' in r) return { kind: r.kind, from: 'org', field: '', optional: false };
  if ('query' in r) return { kind: r.kind, from: 'query', field: r.query, optional: !!r.optional };
  return { kind: r.kind, from: 'body', field: r.body, optional: !!r.optional };
}

export function routeInfo(def: AnyRoute): RouteInfo {
  return {
    method: def.method,
    url: def.url,
    summary: def.summary,
    tag: def.tag ?? null,
    access: def.access ?? 'tag',
    gate: def.gate ?? null,
    resource: resourceInfo(def.resource),
    requires: (def.requires ?? []).map((r: Requirement) => ({ tag: r.tag, on: r.on ?? 'record' })),
    streamToken: def.streamToken ?? null,
    selfHostedOnly: !!def.selfHostedOnly,
    cloudOnly: !!def.cloudOnly,
    statuses: [def.status ?? 200, ...(def.statuses ?? [])],
  };
}
