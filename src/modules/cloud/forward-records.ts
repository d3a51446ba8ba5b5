import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { authenticateRequest, checkCsrf } from '../../http/auth.js';
import { resourceInfo, type AnyRoute, type ResourceInfo } from '../../http/route.js';
import { projectTransfers } from '../projects/index.js';
import { anyCloudLinks, findCloudLinkByCloudIdAnyOrg } from './cloud.store.js';
import { cloudProjectOf, cloudRecordTarget, LOOKUP_TIMEOUT_MS, MAX_ID_LENGTH } from './cloud-records.js';
import { relayToCloud } from './forward.js';
import { cloudLink, linkJson, unreachable } from './link.js';

/**
 * The cloud module's hooks for routes named by a cloud record's id (cloud-records.ts says which):
 * - a record named in the path that this instance does not hold (forwardUnresolved): relayed as it came;
 * - a record named in the body (forwardUnresolved, after validation): one JSON call over the link;
 * - a stream-token route of such a record (forward, before authentication): its stream token goes
 *   along as it came, or the caller's credential is checked here and the link's is sent.
 */

/** The route's record source when it names a cloud record, else null. */
function cloudRecordSource(ctx: AppContext, def: AnyRoute, req: FastifyRequest): ResourceInfo | null {
  if (ctx.config.mode !== 'self-hosted' || !cloudLink(ctx)) return null;
  const source = resourceInfo(def.resource);
  if (!source || source.from === 'query') return null;
  return ctx.ports.cloud!.tableOf(req.server.berth.modules).recordKinds.has(source.kind) ? source : null;
}

function idIn(req: FastifyRequest, source: ResourceInfo): string {
  const from = source.from === 'param' ? req.params : req.body;
  const v = (from as Record<string, unknown> | undefined)?.[source.field];
  return typeof v === 'string' ? v : '';
}

/**
 * ModuleDef.forwardUnresolved of the cloud module (self-hosted, linked): a route whose record this
 * instance does not hold is forwarded when the record belongs to a cloud project whose local record is
 * in the actor's org and the actor may act on it as the route declares.
 */
export async function forwardCloudRecord(def: AnyRoute, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  const source = cloudRecordSource(ctx, def, req);
  const actor = req.actor;
  if (!source || !actor) return false;
  const id = idIn(req, source);
  const target = await cloudRecordTarget(ctx, actor, def, source, id, req.id);
  if (!target) return false;
  req.resource = target.ref;
  if (source.from === 'param') {
    await relayToCloud(ctx, req, reply, { method: def.method, path: req.raw.url ?? req.url, credential: true, projectId: target.project.id });
    return true;
  }
  // Named in the body: the body was already read and validated, so it goes as one JSON call; the
  // cloud's success answer is passed on as it came, its 404 is the usual 404 here.
  const res = await linkJson(ctx, def.method, req.raw.url ?? req.url, req.body, { timeoutMs: LOOKUP_TIMEOUT_MS, requestId: req.id });
  if (res.status === 404) return false;
  if (res.status < 200 || res.status >= 300 || res.body === undefined) throw unreachable(`it answered ${res.status} to ${def.method} ${def.url} for ${source.kind.replace(/_/g, ' ')} ${id}`);
  await reply.code(res.status).send(res.body);
  return true;
}

/** The stream token of a request, read as the gate reads it. */
function streamTokenOf(req: FastifyRequest): { token: unknown; bearer: boolean } {
  const query = req.query as Record<string, unknown> | undefined;
  if (query?.token !== undefined) return { token: query.token, bearer: false };
  return { token: /^Bearer (berth_(?:dpl|slt)_[A-Za-z0-9_-]+)$/.exec(req.headers.authorization?.trim() ?? '')?.[1], bearer: true };
}

/**
 * Part of the cloud module's forward hook (self-hosted, linked): a stream-token route (the build-log
 * routes) of a cloud record. It meets the gate's forwarders before authentication, so:
 * - a stream token this instance did not mint (the cloud minted it, through a forwarded
 *   deployment-session or build/access): forwarded *without* the link credential, the token as it
 *   came (query or bearer), when the record belongs to a cloud project some local record stands for;
 *   the cloud checks the token (a wrong one is its 401);
 * - a credential: authenticated here, then the same lookup and checks as forwardCloudRecord (actor's
 *   org only), and forwarded with the link credential.
 * A record this instance holds is left to the gate and the handler.
 */
export async function forwardCloudStream(def: AnyRoute, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  if (def.access !== 'stream-token' || !def.streamToken) return false;
  const source = cloudRecordSource(ctx, def, req);
  if (!source || source.from !== 'param') return false;
  const id = idIn(req, source);
  if (!id || id.length > MAX_ID_LENGTH) return false;

  const { token, bearer } = streamTokenOf(req);
  // Not a string (a repeated ?token=) or too long: the route's 400.
  if (token !== undefined && (typeof token !== 'string' || token.length > 200)) return false;
  if (token) {
    // One of this instance's own tokens: the gate checks it.
    const mine = await ctx.ports.streamTokens?.verify(ctx, token, def.streamToken, id).then(
      () => true,
      () => false,
    );
    if (mine || !(await anyCloudLinks(ctx.db))) return false;
    const cloudProjectId = await cloudProjectOf(ctx, source.kind, id, req.id);
    if (!cloudProjectId) return false;
    const mapping = await findCloudLinkByCloudIdAnyOrg(ctx.db, cloudProjectId);
    const project = mapping ? await projectTransfers.findProjectAnyOrg(ctx.db, mapping.projectId) : undefined;
    if (!project || project.location !== 'cloud') return false;
    await relayToCloud(ctx, req, reply, {
      method: def.method,
      path: req.raw.url ?? req.url,
      credential: false,
      // A token sent as a bearer goes on as one; a `?token=` goes along in the path.
      authorization: bearer ? `Bearer ${token}` : undefined,
      projectId: project.id,
    });
    return true;
  }

  const actor = await authenticateRequest(ctx, req);
  if (!actor) return false; // the gate's 401
  // A record of the actor's org on this instance: the gate's.
  const resolver = ctx.ports.cloud!.tableOf(req.server.berth.modules).table.resolvers.get(source.kind);
  if (resolver && (await resolver(ctx, actor.orgId, id, req.params as Record<string, unknown>, { read: false }))) return false;
  checkCsrf(ctx, req, actor);
  req.actor = actor;
  const target = await cloudRecordTarget(ctx, actor, def, source, id, req.id);
  if (!target) {
    req.actor = null;
    return false;
  }
  req.resource = target.ref;
  await relayToCloud(ctx, req, reply, { method: def.method, path: req.raw.url ?? req.url, credential: true, projectId: target.project.id });
  return true;
}
