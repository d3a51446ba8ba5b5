import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../authz/actor.js';
import { authorize, scopesAllow } from '../authz/authorize.js';
import { parseTag, type Tag } from '../authz/tags.js';
import type { AppContext } from '../context.js';
import { AppError } from '../lib/errors.js';
import { authenticateRequest, checkCsrf } from './auth.js';
import { resourceInfo, type AnyRoute, type ModuleDef, type ResolvedResource, type ResourceInfo, type ResourceResolver } from './route.js';

type Forwarder = NonNullable<ModuleDef['forward']>;

/** Stream tokens a `stream-token` route accepts as a bearer value (the query's `token` is the other way). */
const STREAM_BEARER = /^Bearer (berth_(?:dpl|slt)_[A-Za-z0-9_-]+)$/;

function forbiddenRole(): AppError {
  return new AppError('FORBIDDEN', 'only an owner or admin of the organization can do this');
}

/**
 * The gate of one route: everything its declaration requires, checked in this order before the
 * handler runs, each failure answered as authorize() does (401 no credential, 404 another org's or a
 * missing record, 403 a record of the actor's org they may not touch):
 *
 * 1. `selfHostedOnly`/`cloudOnly` (404), a streamed body's content type (415);
 * 2. public and stream-token routes: the cloud's forwarders (a cloud project's stream is the cloud's);
 * 3. a stream token (stream-token routes): verified, and its minter authorized as below;
 * 4. the credential (bearer or session cookie), CSRF for cookie writes;
 * 5. the role gate (`gate: 'admin'`), the token's scopes against the tag;
 * 6. the record named by a path or query field: resolved in the actor's org, the tag on it, then every
 *    `requires`; a record named by a body field: the same, after validation (`preHandler`).
 *
 * Open streams re-run 3–6 through `req.streamAccess.check` (`src/http/stream-access.ts`).
 */
export class RouteGate {
  private readonly access;
  /** `selfHostedOnly`/`cloudOnly` and this server's mode: the route answers 404. */
  private readonly hidden: boolean;
  private readonly tag: Tag | null;
  private readonly what: string;
  private readonly source: ResourceInfo | null;
  private readonly requires: { tag: Tag; on: 'record' | 'project'; name: string }[];

  constructor(
    private readonly ctx: AppContext,
    private readonly def: AnyRoute,
    private readonly resolver: ResourceResolver | undefined,
    private readonly forwarders: Forwarder[],
    private readonly unresolvedForwarders: Forwarder[],
  ) {
    this.access = def.access ?? 'tag';
    this.hidden = ctx.config.mode === 'cloud' ? !!def.selfHostedOnly : !!def.cloudOnly;
    this.tag = def.tag ? parseTag(def.tag) : null;
    this.source = resourceInfo(def.resource);
    this.what = this.source ? this.source.kind.replace(/_/g, ' ') : 'record';
    this.requires = (def.requires ?? []).map((r: { tag: string; on?: 'record' | 'project' }) => ({ tag: parseTag(r.tag), on: r.on ?? 'record', name: r.tag }));
  }

  /** Does this route resolve its record after validation (a body field)? */
  get checksBody(): boolean {
    return this.source?.from === 'body';
  }

  /**
   * onRequest: steps 1–6 for everything but a body-named record. Answers the reply when a forwarder
   * took it. Without a promise when nothing needs one (a cached credential on a route that names no
   * record): the hook then costs no promise of its own nor Fastify's wait on it (`register.ts`).
   */
  onRequest(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined | Promise<FastifyReply | undefined> {
    const { def, access } = this;
    if (this.hidden) throw new AppError('NOT_FOUND', 'route not found');
    if (def.streamBody && req.headers['content-type'] !== undefined) {
      // Refused before any parser (JSON, text) reads the body.
      const type = String(req.headers['content-type']).split(';')[0]!.trim().toLowerCase();
      if (!def.streamBody.includes(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `send ${def.streamBody[0]} (got ${type || 'no content type'})`);
    }
    if (access === 'public' || access === 'stream-token') return this.publicOrStreamToken(req, reply);
    return this.authenticated(req, reply);
  }

  private async publicOrStreamToken(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    req.actor = null;
    // A cloud project's public and token-in-query routes are the cloud's to answer.
    const took = this.forwarded(req, reply);
    if (took !== false && (await took)) return reply;
    if (this.access === 'public') return undefined;
    const token = this.streamTokenOf(req);
    if (token !== undefined) {
      const check = () => this.checkStreamToken(req, token);
      const minter = await check();
      if (minter && this.def.raw) this.keepForStreams(req, minter, check);
      return undefined;
    }
    return this.authenticated(req, reply);
  }

  /** Steps 4–6 with the request's credential. */
  private authenticated(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined | Promise<FastifyReply | undefined> {
    const found = authenticateRequest(this.ctx, req);
    return found instanceof Promise ? found.then((actor) => this.admitted(req, reply, actor)) : this.admitted(req, reply, found);
  }

  private admitted(req: FastifyRequest, reply: FastifyReply, actor: Actor | null): FastifyReply | undefined | Promise<FastifyReply | undefined> {
    const { def, access } = this;
    if (!actor) throw new AppError('UNAUTHENTICATED', 'authentication required: send a bearer token or a session cookie');
    checkCsrf(this.ctx, req, actor);
    req.actor = actor;
    if (def.raw) this.keepForStreams(req, actor, () => this.recheckCredential(req, actor));
    if (access === 'authenticated') return undefined;
    this.checkRoleAndScopes(actor);
    if (access === 'member' || this.checksBody) return undefined;
    if (this.source && (this.source.from === 'param' || this.source.from === 'org')) return this.namedThenForwarded(actor, req, reply);
    const resolved = this.authorizeFor(actor, req);
    if (!(resolved instanceof Promise)) {
      req.resource = resolved ?? undefined;
      return undefined;
    }
    return resolved.then((r) => {
      req.resource = r ?? undefined;
      return undefined;
    });
  }

  /** A record named by the path (or the org): found, authorized, then the forwarders; no promise if none is needed. */
  private namedThenForwarded(actor: Actor, req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined | Promise<FastifyReply | undefined> {
    const found = this.resolve(actor.orgId, req);
    if (found instanceof Promise) return found.then((r) => (r ? this.authorizedThenForwarded(actor, req, reply, r) : this.unresolved(actor, req, reply)));
    return found ? this.authorizedThenForwarded(actor, req, reply, found) : this.unresolved(actor, req, reply);
  }

  /** Not in the actor's org: an unresolved-record forwarder (the cloud's) may take it, else authorize() answers. */
  private async unresolved(actor: Actor, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    for (const forward of this.unresolvedForwarders) if (await forward(this.def, req, reply, this.ctx)) return reply;
    return this.authorizedThenForwarded(actor, req, reply, null);
  }

  private authorizedThenForwarded(actor: Actor, req: FastifyRequest, reply: FastifyReply, resolved: ResolvedResource | null): FastifyReply | undefined | Promise<FastifyReply | undefined> {
    this.authorizeOn(actor, resolved);
    req.resource = resolved!;
    // (Stream-token routes met the forwarders before authentication.)
    if (this.access === 'stream-token') return undefined;
    const took = this.forwarded(req, reply);
    return took === false ? undefined : took.then((yes) => (yes ? reply : undefined));
  }

  /** Did a forwarder take the reply over? False at once when every one said so without a promise. */
  private forwarded(req: FastifyRequest, reply: FastifyReply): false | Promise<boolean> {
    for (let i = 0; i < this.forwarders.length; i++) {
      const took = this.forwarders[i]!(this.def, req, reply, this.ctx);
      if (took !== false) return took.then((yes) => yes || this.forwardedFrom(i + 1, req, reply));
    }
    return false;
  }

  private async forwardedFrom(start: number, req: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    for (let i = start; i < this.forwarders.length; i++) if (await this.forwarders[i]!(this.def, req, reply, this.ctx)) return true;
    return false;
  }

  /** preHandler (body-named records only): step 6 once the body is validated. */
  async preHandler(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const actor = req.actor;
    if (!actor) return undefined;
    if (this.source && !(this.source.optional && this.idOf(req) === undefined)) {
      return (await this.resolveNamed(actor, req, reply)) ? reply : undefined;
    }
    req.resource = (await this.authorizeFor(actor, req)) ?? undefined;
    return undefined;
  }

  /**
   * The record named by the path or the body, resolved in the actor's org and authorized (`req.resource`).
   * Not found: it may be a record of this instance's cloud, and an unresolved-record forwarder (which
   * authorizes the actor itself) may take the reply over: true then.
   */
  private async resolveNamed(actor: Actor, req: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const resolved = await this.resolve(actor.orgId, req);
    if (!resolved) {
      for (const forward of this.unresolvedForwarders) if (await forward(this.def, req, reply, this.ctx)) return true;
    }
    this.authorizeOn(actor, resolved);
    req.resource = resolved!;
    return false;
  }

  private streamTokenOf(req: FastifyRequest): string | undefined {
    const q = (req.query as Record<string, unknown> | undefined)?.token;
    if (typeof q === 'string' && q !== '') return q;
    const header = req.headers.authorization;
    return header ? STREAM_BEARER.exec(header.trim())?.[1] : undefined;
  }

  /**
   * A stream token's access is its minter's current access, through the credential they minted it
   * with (revoked, signed out, removed, demoted: the token opens nothing more, open streams end).
   * Tokens the instance minted for itself (no minter) carry no member to re-check: null.
   */
  private async checkStreamToken(req: FastifyRequest, token: string): Promise<Actor | null> {
    const { ctx, def } = this;
    const port = ctx.ports.streamTokens;
    if (!port || !def.streamToken) throw new AppError('UNAUTHENTICATED', 'invalid or expired stream token');
    const id = this.idOf(req) ?? '';
    const info = await port.verify(ctx, token, def.streamToken, id);
    if (!info.createdBy) {
      req.actor = null;
      req.resource = (await this.resolve(info.orgId, req)) ?? undefined;
      return null;
    }
    const auth = ctx.ports.auth;
    const minter = info.credentialId ? await auth.actorFromCredentialId(ctx, info.credentialId) : await auth.memberActor(ctx, info.orgId, info.createdBy);
    if (!minter || minter.userId !== info.createdBy || minter.orgId !== info.orgId) {
      throw new AppError('UNAUTHENTICATED', 'the credential that made this stream token is no longer valid');
    }
    req.actor = minter;
    req.resource = (await this.authorizeFor(minter, req)) ?? undefined;
    return minter;
  }

  /** The gate once more for an open stream: the same credential, still valid, still allowed. */
  private async recheckCredential(req: FastifyRequest, first: Actor): Promise<Actor> {
    const actor = await authenticateRequest(this.ctx, req);
    if (!actor || actor.userId !== first.userId) throw new AppError('UNAUTHENTICATED', 'the credential of this stream is no longer valid');
    if (this.access === 'authenticated') return actor;
    this.checkRoleAndScopes(actor);
    if (this.access === 'member') return actor;
    await this.authorizeFor(actor, req);
    return actor;
  }

  private keepForStreams(req: FastifyRequest, actor: Actor, check: () => Promise<Actor | null>): void {
    req.streamAccess = { userId: actor.userId, orgId: actor.orgId, events: this.ctx.access, check: async () => (await check()) ?? actor };
  }

  private checkRoleAndScopes(actor: Actor): void {
    if (this.def.gate === 'admin' && actor.role !== 'owner' && actor.role !== 'admin') throw forbiddenRole();
    // Any member passes a `member` route's role check; a scoped token must still cover the tag. On
    // other routes this refuses an uncovered token before a record is looked up or a body read.
    if (this.tag && !scopesAllow(actor, this.tag)) throw new AppError('FORBIDDEN', `this token's scopes do not cover ${this.def.tag}`);
  }

  private idOf(req: FastifyRequest): string | undefined {
    const src = this.source;
    if (!src) return undefined;
    if (src.from === 'org') return '';
    const from = this.fieldsOf(req);
    const v = from[src.field];
    return v === undefined || v === null || v === '' ? undefined : String(v);
  }

  private fieldsOf(req: FastifyRequest): Record<string, unknown> {
    const src = this.source!;
    const obj = src.from === 'param' || src.from === 'org' ? req.params : src.from === 'query' ? req.query : req.body;
    return obj && typeof obj === 'object' ? (obj as Record<string, unknown>) : {};
  }

  private resolve(orgId: string, req: FastifyRequest): ResolvedResource | null | Promise<ResolvedResource | null> {
    const id = this.idOf(req) ?? '';
    return this.resolver!(this.ctx, orgId, id, this.fieldsOf(req), { read: req.method === 'GET' || req.method === 'HEAD' });
  }

  /**
   * Step 6 for `actor`: the record (if the route names one), the tag on it, every requirement. Without
   * a promise when the route names no record (an org-wide tag).
   */
  private authorizeFor(actor: Actor, req: FastifyRequest): ResolvedResource | null | Promise<ResolvedResource | null> {
    if (!this.source || (this.source.optional && this.idOf(req) === undefined)) {
      this.authorizeOn(actor, undefined);
      return null;
    }
    const found = this.resolve(actor.orgId, req);
    if (!(found instanceof Promise)) {
      this.authorizeOn(actor, found);
      return found;
    }
    return found.then((resolved) => {
      this.authorizeOn(actor, resolved);
      return resolved;
    });
  }

  /** `resolved`: undefined when the route names no record (org-wide), null when it was not found. */
  private authorizeOn(actor: Actor, resolved: ResolvedResource | null | undefined): void {
    // A record named by a body or query field that is not there (or another org's): the 404 names the field.
    if (resolved === null && this.source && (this.source.from === 'body' || this.source.from === 'query')) {
      throw new AppError('NOT_FOUND', `${this.what} not found`, { field: this.source.field });
    }
    if (this.tag) authorize(actor, this.tag, resolved, this.what);
    for (const r of this.requires) {
      if (r.on === 'project') {
        const parent = resolved?.parents?.project;
        if (!parent) throw new Error(`route ${this.def.method} ${this.def.url}: its ${this.what} resolver gave no parent project`);
        authorize(actor, r.tag, parent, 'project');
      } else {
        authorize(actor, r.tag, resolved, this.what);
      }
    }
  }
}
