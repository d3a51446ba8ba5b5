import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { AppContext } from '../../context.js';
import { resourceInfo, type AnyRoute, type ResolvedResource } from '../../http/route.js';
import { projectTransfers, deleteProject } from '../projects/index.js';
import { findCloudLink } from './cloud.store.js';
import { cloudLink, describeNetworkError, linkRequest, noteLinkStatus, unreachable } from './link.js';

/** Request headers that are not passed on: hop-by-hop, the caller's credentials, and ours. */
const DROP_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
  'authorization',
  'cookie',
  'origin',
  'referer',
  'x-request-id',
  'x-upload-token',
]);

/** Response headers that are not passed back: hop-by-hop, and cookies of the cloud. */
const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'trailer', 'upgrade', 'proxy-authenticate', 'set-cookie', 'x-request-id']);

/** The path of the same route on the cloud: the project parameter replaced by the cloud project id. */
export function cloudPath(def: AnyRoute, rawUrl: string, param: string, cloudId: string): string {
  const q = rawUrl.indexOf('?');
  const pathPart = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const query = q < 0 ? '' : rawUrl.slice(q);
  const pattern = def.url.split('/');
  const idx = pattern.indexOf(`:${param}`);
  const segments = pathPart.split('/');
  if (idx >= 0 && idx < segments.length) segments[idx] = encodeURIComponent(cloudId);
  return segments.join('/') + query;
}

/**
 * Whether `forwardToCloud` may take the request, decided without a promise: false for a route not
 * named by a project in its path and for a local project already resolved (the common case); true
 * when the project is a cloud one, or not yet looked up (public and stream-token routes).
 */
export function mayForwardToCloud(def: AnyRoute, req: FastifyRequest, ctx: AppContext): boolean {
  if (ctx.config.mode !== 'self-hosted') return false;
  const source = resourceInfo(def.resource);
  if (!source || source.kind !== 'project' || source.from !== 'param') return false;
  if (def.access === 'stream-token' || def.access === 'public') return true;
  const resource = req.resource as ResolvedResource<'project'> | undefined;
  return resource?.kind === 'project' && resource.record.location === 'cloud';
}

/**
 * The forwarding hook (ModuleDef.forward) for routes named by a project (a `project` resource in the
 * path): for a project whose `location` is `cloud`, the request, already authorized locally, is sent
 * to the cloud with the link's credential and the answer is streamed back unchanged (relayToCloud).
 * Stream-token routes meet this hook before authentication: their stream token (or the caller's
 * credential) goes along as it came, to be checked by the cloud, which minted the token.
 */
export async function forwardToCloud(def: AnyRoute, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  const source = resourceInfo(def.resource);
  if (!mayForwardToCloud(def, req, ctx) || !source) return false;
  const beforeAuth = def.access === 'stream-token' || def.access === 'public';
  let target: { orgId: string; id: string };
  if (beforeAuth) {
    const id = (req.params as Record<string, string> | undefined)?.[source.field];
    if (!id) return false;
    const row = await projectTransfers.findProjectAnyOrg(ctx.db, id);
    if (!row || row.location !== 'cloud') return false;
    target = { orgId: row.orgId, id: row.id };
  } else {
    const resource = req.resource as ResolvedResource<'project'> | undefined;
    if (!resource || resource.kind !== 'project' || resource.record.location !== 'cloud') return false;
    target = { orgId: resource.orgId, id: resource.id };
  }

  if (!cloudLink(ctx)) throw unreachable('this project lives on the cloud, but this instance has no cloud link (BERTH_CLOUD_URL, BERTH_CLOUD_TOKEN)');
  const mapping = await findCloudLink(ctx.db, target.orgId, target.id);
  const cloudId = mapping?.cloudProjectId ?? target.id;
  const status = await relayToCloud(ctx, req, reply, {
    method: def.method,
    path: cloudPath(def, req.raw.url ?? req.url, source.field, cloudId),
    credential: !beforeAuth,
    projectId: target.id,
  });

  // A route that deletes the project itself (DELETE on the project's own path): the cloud copy is
  // gone, so the local record that stood for it goes too.
  const deletesProject = def.method === 'DELETE' && def.url.endsWith(`/:${source.field}`);
  if (deletesProject && status !== null && status >= 200 && status < 300 && req.resource && req.actor) {
    await deleteProject(ctx, req.actor, (req.resource as ResolvedResource<'project'>).record).catch((e: unknown) =>
      req.log.error({ err: e, projectId: target.id }, 'could not remove the local record of a deleted cloud project'),
    );
  }
  return true;
}

export interface RelayOptions {
  method: AnyRoute['method'];
  /** Path and query on the cloud (the same route there). */
  path: string;
  /** Send the link's bearer (every route but the public token-in-query streams). */
  credential: boolean;
  /**
   * Without the link's bearer: an Authorization header to pass on as it came (a build token the
   * caller sent as `Bearer berth_dpl_...`, which the cloud checks).
   */
  authorization?: string;
  /** The local project id, for the log line of a cut answer. */
  projectId: string;
}

/**
 * Sends the incoming request, already authorized locally, to the cloud and streams the answer back
 * unchanged; the one way every forwarded request goes (forwardToCloud, and forward-records.ts for the
 * routes named by a cloud record's id). Nothing is buffered: the request body is the raw incoming
 * stream (this runs in the onRequest gate, before Fastify reads it) and the answer is piped through.
 * Takes the reply over; answers the cloud's status, or null when the answer was cut mid-way. Before
 * the cloud's status line: 503 `cloud_unreachable` (thrown, nothing written yet), also for a 401 when
 * the link credential was sent.
 */
export async function relayToCloud(ctx: AppContext, req: FastifyRequest, reply: FastifyReply, opts: RelayOptions): Promise<number | null> {
  const link = cloudLink(ctx);
  if (!link) throw unreachable('this instance has no cloud link (BERTH_CLOUD_URL, BERTH_CLOUD_TOKEN)');
  const url = link.url + opts.path;

  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || DROP_REQUEST.has(k) || k.startsWith('x-forwarded-')) continue;
    headers[k] = v;
  }
  if (opts.credential) headers.authorization = `Bearer ${link.token}`;
  else if (opts.authorization) headers.authorization = opts.authorization;
  headers['x-request-id'] = req.id;
  headers['x-forwarded-for'] = req.ip;

  const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
  const abort = new AbortController();
  const onClientGone = () => abort.abort();
  req.raw.once('aborted', onClientGone);
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });

  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await linkRequest(link, url, {
      method: opts.method,
      headers,
      body: hasBody ? req.raw : undefined,
      signal: abort.signal,
    });
  } catch (e) {
    noteLinkStatus(ctx, false);
    throw unreachable(describeNetworkError(e));
  }
  if (upstream.statusCode === 401 && opts.credential) {
    upstream.body.resume();
    throw unreachable('it refused this instance\'s link token (BERTH_CLOUD_TOKEN)');
  }

  reply.hijack();
  const out = reply.raw;
  const resHeaders: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(upstream.headers)) {
    if (v === undefined || DROP_RESPONSE.has(k)) continue;
    resHeaders[k] = v;
  }
  resHeaders['x-request-id'] = req.id;
  out.writeHead(upstream.statusCode, resHeaders);
  out.flushHeaders();
  try {
    await pipeline(upstream.body, out);
  } catch (e) {
    // The cloud went away mid-answer or the caller left: the status is already sent, so the
    // connection is cut (the caller sees a truncated answer, never a made-up one).
    req.log.warn({ reason: describeNetworkError(e), projectId: opts.projectId }, 'forwarded answer from the cloud was cut');
    abort.abort();
    out.destroy();
    return null;
  }
  return upstream.statusCode;
}
