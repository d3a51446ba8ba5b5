import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authorize } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { authenticateRequest } from '../../http/auth.js';
import { AppError } from '../../lib/errors.js';
import { defineRoute, type ModuleDef, type ResolvedResource } from '../../http/route.js';
import { Id, IdParams, Obj, Str } from '../../http/schemas.js';
import { openSse } from '../../http/sse.js';
import { endWithAccess, gateAccess, type StreamAccess } from '../../http/stream-access.js';
import { actorFromCredentialId, memberActor } from '../auth/auth.service.js';
import { resolvedProject } from '../projects/projects.service.js';
import { findProject, projectRef } from '../projects/projects.store.js';
import { setRuntimePort } from '../projects/runtime-port.js';
import * as service from './deployments.service.js';
import * as store from './deployments.store.js';
import { getRuntime, runtimePort } from './runtime.js';

/** Resolver of kind `deployment`: the deployment's project grant keys cover it. */
async function resolveDeployment(ctx: AppContext, orgId: string, id: string): Promise<ResolvedResource | null> {
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d) return null;
  return { ...projectRef({ id: d.projectId, orgId: d.orgId }), kind: 'deployment', id: d.id, record: d };
}

const LogsQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  since: Type.Optional(Str({ max: 64 })),
});
const TokenQuery = Obj({ token: Type.Optional(Str({ max: 200 })), follow: Type.Optional(Type.Boolean()) });
const StreamQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  since: Type.Optional(Str({ max: 64 })),
  /** `false`: send what is there and close (no live tail). */
  follow: Type.Optional(Type.Boolean()),
});

function checkSince(since: string | undefined): string | undefined {
  if (since === undefined) return undefined;
  const t = Date.parse(since);
  if (!Number.isFinite(t)) throw new AppError('VALIDATION_FAILED', 'since must be an ISO-8601 timestamp', { field: 'query.since' });
  return new Date(t).toISOString();
}

/**
 * Streams that a browser EventSource opens carry a short-lived token in the query (`?token=`)
 * instead of a credential; a request with a bearer or cookie is authorized like any other. Either way
 * the answer carries the check that authorized it, which the open stream re-runs (`endWithAccess`): a
 * stream token's check is its minting member's current access through the credential they minted it
 * with (revoked, signed out, removed, demoted: the stream ends, and the token opens nothing more).
 */
async function streamAccess(
  ctx: AppContext,
  req: FastifyRequest,
  token: string | undefined,
  kind: 'build' | 'server_logs',
  recordId: string,
  tag: string,
  resolve: (orgId: string) => Promise<ResolvedResource | null>,
): Promise<{ orgId: string; access: StreamAccess | null }> {
  const what = kind === 'build' ? 'deployment' : 'project';
  const bearer = /^Bearer (berth_(?:dpl|slt)_[A-Za-z0-9_-]+)$/.exec(req.headers.authorization?.trim() ?? '')?.[1];
  const t = token ?? bearer;
  if (t) {
    const info = await service.verifyStreamToken(ctx, t, kind, recordId);
    if (!info.createdBy) return { orgId: info.orgId, access: null };
    const createdBy = info.createdBy;
    const check = async () => {
      const minter = info.credentialId ? await actorFromCredentialId(ctx, info.credentialId) : await memberActor(ctx, info.orgId, createdBy);
      if (!minter || minter.userId !== createdBy || minter.orgId !== info.orgId) throw new AppError('UNAUTHENTICATED', 'the credential that made this stream token is no longer valid');
      authorize(minter, tag, await resolve(info.orgId), what);
    };
    await check();
    return { orgId: info.orgId, access: { userId: createdBy, orgId: info.orgId, check } };
  }
  const actor = await authenticateRequest(ctx, req);
  if (!actor) throw new AppError('UNAUTHENTICATED', 'authentication required: send a bearer token, a session cookie or a stream token');
  req.actor = actor;
  authorize(actor, tag, await resolve(actor.orgId), what);
  const check = async () => {
    const again = await authenticateRequest(ctx, req);
    if (!again || again.userId !== actor.userId) throw new AppError('UNAUTHENTICATED', 'the credential of this stream is no longer valid');
    authorize(again, tag, await resolve(again.orgId), what);
  };
  return { orgId: actor.orgId, access: { userId: actor.userId, orgId: actor.orgId, check } };
}

function sseLogs(reply: FastifyReply, reqId: string, backlog: unknown[], subscribe: (fn: (e: unknown) => void) => () => void, event: string, until?: () => Promise<boolean>, follow = true, access: StreamAccess | null = null): void {
  const sse = openSse(reply, { requestId: reqId });
  let seq = 0;
  for (const l of backlog) sse.send(event, l, ++seq);
  if (!follow) {
    sse.close();
    return;
  }
  const off = subscribe((e) => sse.send(event, e, ++seq));
  // A live stream ends when the access that opened it ends.
  if (access) endWithAccess(sse, access);
  let timer: NodeJS.Timeout | null = null;
  if (until) {
    // Build log streams close once the deployment reached a terminal status.
    timer = setInterval(() => {
      void until().then((done) => {
        if (done) setTimeout(() => sse.close(), 200);
      });
    }, 500);
    timer.unref();
  }
  sse.onClose(() => {
    off();
    if (timer) clearInterval(timer);
  });
}

export const deploymentsModule: ModuleDef = {
  name: 'deployments',
  resolvers: { deployment: resolveDeployment },
  init(ctx) {
    setRuntimePort(runtimePort);
    ctx.jobs.register<{ deploymentId: string; orgId: string }>(service.BUILD_JOB, (payload, _job, signal) => service.runDeploymentJob(ctx, payload, signal), { maxAttempts: 1 });
  },
  async start(ctx) {
    await getRuntime(ctx).start();
  },
  async stop(ctx) {
    await getRuntime(ctx).stop();
  },
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/deployments',
      summary: 'Create a deployment: build the project source and run it (202)',
      tag: 'project:deployment:write',
      // The project is named in the body: the service authorizes the actor on it.
      access: 'member',
      status: 202,
      schema: {
        body: Obj({
          projectId: Id,
          environment: Type.Optional(Str({ min: 1, max: 64 })),
          ref: Type.Optional(Str({ min: 1, max: 255, pattern: '^(?!-)[^\\s\\x00-\\x1f~^:?*\\[\\\\]+$' })),
          sessionId: Type.Optional(Id),
        }),
      },
      handler: ({ body, actor }, ctx) => service.createDeployment(ctx, actor, body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/deployments/build/access',
      summary: 'Mint a read-only token for one deployment\'s build logs',
      tag: 'project:deployment:read',
      access: 'member',
      schema: { body: Obj({ deploymentId: Id }) },
      handler: ({ body, actor, req }, ctx) => service.buildAccess(ctx, actor, body.deploymentId, req.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/deployments/:id',
      summary: 'Get a deployment',
      tag: 'project:deployment:read',
      resource: { kind: 'deployment', param: 'id' },
      schema: { params: IdParams },
      handler: ({ params, actor }, ctx) => service.getDeployment(ctx, actor.orgId, params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/deployments/:id/cancel',
      summary: 'Cancel a queued or running deployment (kills its build)',
      tag: 'project:deployment:write',
      resource: { kind: 'deployment', param: 'id' },
      schema: { params: IdParams },
      handler: ({ params, actor }, ctx) => service.cancelDeployment(ctx, actor.orgId, params.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/deployments/:id/logs',
      summary: 'Build logs of a deployment (credential, or a build-access / deployment-session token)',
      tag: 'project:deployment:read',
      access: 'public',
      schema: { params: IdParams, querystring: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })), since: Type.Optional(Str({ max: 64 })), token: Type.Optional(Str({ max: 200 })) }) },
      handler: async ({ params, query, req }, ctx) => {
        const { orgId } = await streamAccess(ctx, req, query.token, 'build', params.id, 'project:deployment:read', (o) => resolveDeployment(ctx, o, params.id));
        const d = await store.findDeployment(ctx.db, orgId, params.id);
        if (!d) throw new AppError('NOT_FOUND', 'deployment not found');
        return service.readBuildLogs(ctx, d, { limit: query.limit, since: checkSince(query.since) });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/deployments/:id/logs/stream',
      summary: 'Stream the build logs of a deployment (SSE `log` events; closes when the deployment is done)',
      tag: 'project:deployment:read',
      access: 'public',
      raw: true,
      schema: { params: IdParams, querystring: TokenQuery },
      handler: async ({ params, query, req, reply }, ctx) => {
        const { orgId, access } = await streamAccess(ctx, req, query.token, 'build', params.id, 'project:deployment:read', (o) => resolveDeployment(ctx, o, params.id));
        const d = await store.findDeployment(ctx.db, orgId, params.id);
        if (!d) throw new AppError('NOT_FOUND', 'deployment not found');
        const file = getRuntime(ctx).logs.build(d.projectId, d.id);
        sseLogs(
          reply,
          req.id,
          file.read({ limit: 10000 }),
          (fn) => file.subscribe(fn),
          'log',
          async () => {
            const now = await store.findDeployment(ctx.db, orgId, params.id);
            return !now || service.isTerminal(now.status);
          },
          query.follow ?? !service.isTerminal(d.status),
          access,
        );
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/:id/deployment-session',
      summary: 'Open a read-only session on the project\'s latest deployment (build-log token)',
      tag: 'project:read',
      resource: { kind: 'project', param: 'id' },
      schema: { params: IdParams },
      handler: ({ resource, actor }, ctx) => service.deploymentSession(ctx, actor, resolvedProject(resource)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/:id/logs',
      summary: 'Runtime logs of the project\'s app (stdout and stderr)',
      tag: 'project:read',
      resource: { kind: 'project', param: 'id' },
      schema: { params: IdParams, querystring: LogsQuery },
      handler: ({ params, query }, ctx) => getRuntime(ctx).logs.runtime(params.id).read({ limit: query.limit ?? 200, since: checkSince(query.since) }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/:id/logs/stream',
      summary: 'Stream the runtime logs of the project\'s app (SSE `log` events)',
      tag: 'project:read',
      resource: { kind: 'project', param: 'id' },
      raw: true,
      schema: { params: IdParams, querystring: StreamQuery },
      handler: ({ params, query, req, reply }, ctx) => {
        const file = getRuntime(ctx).logs.runtime(params.id);
        sseLogs(reply, req.id, file.read({ limit: query.limit ?? 100, since: checkSince(query.since) }), (fn) => file.subscribe(fn), 'log', undefined, query.follow ?? true, gateAccess(req));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/:id/server-logs/recent',
      summary: 'Recent HTTP requests the edge served for the project',
      tag: 'project:read',
      resource: { kind: 'project', param: 'id' },
      schema: { params: IdParams, querystring: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }) },
      handler: ({ params, query }, ctx) => getRuntime(ctx).requests.recent(params.id, query.limit ?? 100),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/:id/server-logs/stream-token',
      summary: 'Mint a 60-second read-only token for the request-log stream of this project',
      tag: 'project:read',
      resource: { kind: 'project', param: 'id' },
      schema: { params: IdParams },
      handler: ({ resource, actor }, ctx) => service.serverLogStreamToken(ctx, actor, resolvedProject(resource)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/projects/:id/server-logs/stream',
      summary: 'Stream the HTTP requests of the project (SSE `request` events); `?token=` from stream-token',
      tag: 'project:read',
      access: 'public',
      raw: true,
      schema: { params: IdParams, querystring: TokenQuery },
      handler: async ({ params, query, req, reply }, ctx) => {
        const { orgId, access } = await streamAccess(ctx, req, query.token, 'server_logs', params.id, 'project:read', async (o) => {
          const p = await findProject(ctx.db, o, params.id);
          return p ? projectRef(p) : null;
        });
        if (!(await findProject(ctx.db, orgId, params.id))) throw new AppError('NOT_FOUND', 'project not found');
        const rt = getRuntime(ctx);
        sseLogs(reply, req.id, [], (fn) => rt.requests.subscribe(params.id, fn), 'request', undefined, query.follow ?? true, access);
      },
    }),
  ],
};
