import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../authz/actor.js';
import { authorize } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { authenticateRequest, checkCsrf } from '../../http/auth.js';
import type { ResolvedResource, RouteDef } from '../../http/route.js';
import * as backupStore from '../backups/backups.store.js';
import { policyRef, restoreRef, runRef } from '../backups/backups.service.js';
import * as deploymentStore from '../deployments/deployments.store.js';
import { findProject, projectRef, type ProjectRow } from '../projects/projects.store.js';
import { anyCloudLinks, findCloudLinkByCloudId, findCloudLinkByCloudIdAnyOrg, findProjectAnyOrg, orgHasCloudLinks } from './cloud.store.js';
import { relayToCloud } from './forward.js';
import { cloudLink, linkJson, unreachable } from './link.js';

/**
 * Routes named by the id of a record that exists only on the cloud: a cloud project's backup
 * policies, runs and restores (`/api/backup-policies/:policyId`, ...) and its deployments
 * (`/api/deployments/:id`, its build logs, cancel, `build/access`). Their ids mean nothing to the
 * local resolver, so a linked self-hosted instance asks the cloud which project the record belongs to
 * (`GET /api/cloud/refs/:kind/:id`, cloud only), finds its own record of that cloud project in the
 * actor's org, authorizes the actor against it, and forwards the request unchanged (the ids in the
 * path are the cloud's own). See docs/cloud.md.
 */

export const RECORD_REF_KINDS = ['policy', 'run', 'restore', 'deployment'] as const;
export type RecordRefKind = (typeof RECORD_REF_KINDS)[number];

/** The route resource kinds that can name a cloud record, and their lookup kind. */
const KIND_OF_RESOURCE: Record<string, RecordRefKind> = {
  backup_policy: 'policy',
  backup_run: 'run',
  backup_restore: 'restore',
  deployment: 'deployment',
};

/**
 * What the backups service checks on the record's project for each of those routes, besides the
 * route's tag (backups.service.ts: updatePolicy, deletePolicy, manualRun, getRun, ...). The cloud
 * answers a forwarded request as the link's token (an owner or admin there), so these checks are made
 * here, against the local record of the cloud project, before anything is sent. A route of those
 * kinds that is missing here is never forwarded (404, as before); test/cloud/backups.test.ts checks
 * that every registered one is listed.
 */
export const CLOUD_BACKUP_PROJECT_TAGS: Record<string, string> = {
  'PATCH /api/backup-policies/:policyId': 'project:write',
  'DELETE /api/backup-policies/:policyId': 'project:admin',
  'POST /api/backup-policies/:policyId/run': 'project:write',
  'GET /api/backup-runs/:runId': 'project:read',
  'GET /api/backup-runs/:runId/stream': 'project:read',
  'POST /api/backup-runs/:runId/protect': 'project:write',
  'POST /api/backup-runs/:runId/cancel': 'project:write',
  'POST /api/backup-runs/:runId/restore/prepare': 'project:admin',
  'POST /api/backup-restores/:restoreId/apply': 'project:admin',
  'POST /api/backup-restores/:restoreId/cancel': 'project:admin',
  'GET /api/backup-restores/:restoreId': 'project:read',
  'GET /api/backup-restores/:restoreId/stream': 'project:read',
};

/**
 * The same for the routes that name a deployment: what the deployments area checks on a local
 * deployment's project (deployments.routes.ts: the route tag on the `deployment` resource, which
 * carries its project's grant keys; streamAccess for the build logs; buildAccess's check). Three ways
 * in, by how the route is reached:
 * - `GET /api/deployments/:id` and `cancel` have a `deployment` resource: the forwardUnresolved hook;
 * - the build-log routes are public at the gate (a credential or a build token, checked in the
 *   handler): the cloud module's forward hook (forwardCloudDeploymentLogs);
 * - `build/access` names the deployment in its body: the deployments service asks cloudBuildAccess.
 * test/cloud/deployments.test.ts checks this table against every registered route that names a
 * deployment.
 */
export const CLOUD_DEPLOYMENT_PROJECT_TAGS: Record<string, string> = {
  'GET /api/deployments/:id': 'project:deployment:read',
  'POST /api/deployments/:id/cancel': 'project:deployment:write',
  'GET /api/deployments/:id/logs': 'project:deployment:read',
  'GET /api/deployments/:id/logs/stream': 'project:deployment:read',
  'POST /api/deployments/build/access': 'project:deployment:read',
};

const PROJECT_TAGS: Record<string, string> = { ...CLOUD_BACKUP_PROJECT_TAGS, ...CLOUD_DEPLOYMENT_PROJECT_TAGS };

/** Whether a route with a resource is one that forwardCloudRecord may forward. */
export function forwardsCloudRecords(def: Pick<RouteDef<any>, 'method' | 'url' | 'resource'>): boolean {
  return !!def.resource && def.resource.kind in KIND_OF_RESOURCE && `${def.method} ${def.url}` in PROJECT_TAGS;
}

const kindName = (kind: RecordRefKind) => (kind === 'deployment' ? 'deployment' : `backup ${kind}`);

/**
 * Cloud side (`GET /api/cloud/refs/:kind/:id`): the project of a backup record or deployment of the
 * actor's org. Missing or another org's: 404; same org without read on the project: 403.
 */
export async function recordRefProject(ctx: Pick<AppContext, 'db'>, actor: Actor, kind: RecordRefKind, id: string): Promise<{ projectId: string }> {
  let ref: ResolvedResource | null = null;
  let projectId = '';
  if (kind === 'policy') {
    const row = await backupStore.findPolicy(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [policyRef(row), row.projectId];
  } else if (kind === 'run') {
    const row = await backupStore.findRun(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [runRef(row), row.projectId];
  } else if (kind === 'restore') {
    const row = await backupStore.findRestore(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [restoreRef(row), row.projectId];
  } else {
    const row = await deploymentStore.findDeployment(ctx.db, actor.orgId, id);
    // What the deployments area's resolver answers: the deployment with its project's grant keys.
    if (row) [ref, projectId] = [{ ...projectRef({ id: row.projectId, orgId: row.orgId }), kind: 'deployment', id: row.id }, row.projectId];
  }
  authorize(actor, 'project:read', ref, kindName(kind));
  return { projectId };
}

/** How long the self-hosted side waits for the cloud's answer to a lookup (and to build/access). */
const LOOKUP_TIMEOUT_MS = 10_000;

/** Ids longer than this are no record's: 404 without a round trip. */
const MAX_ID_LENGTH = 64;

/**
 * Which cloud project a record belongs to, asked with the link credential: the cloud project id, or
 * null when the cloud has no such record (its 404 or 400). Only the kind and the id are sent. A
 * network failure, a timeout, a refused link token or any other answer is 503 `cloud_unreachable`.
 * Nothing is cached: each request asks again, so a deleted record is 404 at once.
 */
async function cloudProjectOf(ctx: AppContext, kind: RecordRefKind, id: string, requestId: string): Promise<string | null> {
  const res = await linkJson<{ data?: { projectId?: unknown } }>(ctx, 'GET', `/api/cloud/refs/${kind}/${encodeURIComponent(id)}`, undefined, {
    timeoutMs: LOOKUP_TIMEOUT_MS,
    requestId,
  });
  if (res.status === 404 || res.status === 400) return null;
  const cloudProjectId = res.body?.data?.projectId;
  if (res.status !== 200 || typeof cloudProjectId !== 'string') {
    throw unreachable(`it answered ${res.status} when asked which project ${kindName(kind)} ${id} belongs to`);
  }
  return cloudProjectId;
}

interface Target {
  project: ProjectRow;
  /** The record as the gate would have resolved it, with the local cloud project's grant keys. */
  ref: ResolvedResource;
}

/**
 * The local record of the cloud project a cloud record belongs to, in the actor's org, once the actor
 * passed the checks a local record of that kind gets: the route's tag on the record (whose grant
 * keys are the local project's, standing in for the cloud record's) and the area's check on the
 * project. null: the usual 404 (nothing to look for, no such record, or another org's). 403 is
 * thrown (authorize), nothing but the lookup having been sent.
 */
async function cloudRecordTarget(
  ctx: AppContext,
  actor: Actor,
  opts: { resourceKind: string; id: string; routeTag: string; projectTag: string; requestId: string },
): Promise<Target | null> {
  const kind = KIND_OF_RESOURCE[opts.resourceKind];
  if (!kind || !opts.id || opts.id.length > MAX_ID_LENGTH) return null;
  // An org with no project on the cloud cannot own a record there: 404 without a round trip.
  if (!(await orgHasCloudLinks(ctx.db, actor.orgId))) return null;
  const cloudProjectId = await cloudProjectOf(ctx, kind, opts.id, opts.requestId);
  if (!cloudProjectId) return null;

  // The local record of that cloud project, in the actor's org only: another org's is 404.
  const mapping = await findCloudLinkByCloudId(ctx.db, actor.orgId, cloudProjectId);
  if (!mapping) return null;
  const project = await findProject(ctx.db, actor.orgId, mapping.projectId);
  if (!project || project.location !== 'cloud') return null;

  // 403 here, nothing sent.
  const ref: ResolvedResource = { ...projectRef(project), kind: opts.resourceKind, id: opts.id, record: { id: opts.id, projectId: project.id, cloudProjectId, location: 'cloud' } };
  authorize(actor, opts.routeTag, ref, opts.resourceKind.replace(/_/g, ' '));
  authorize(actor, opts.projectTag, projectRef(project), 'project');
  return { project, ref };
}

/**
 * The ModuleDef.forwardUnresolved hook of the cloud module (self-hosted, linked): a route whose
 * backup policy/run/restore or deployment id this instance does not hold is forwarded when the record
 * belongs to a cloud project whose local record is in the actor's org and the actor may act on it.
 */
export async function forwardCloudRecord(def: RouteDef<any>, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  if (ctx.config.mode !== 'self-hosted' || !cloudLink(ctx) || !forwardsCloudRecords(def)) return false;
  const actor = req.actor;
  if (!actor || !def.tag) return false;
  const id = (req.params as Record<string, string> | undefined)?.[def.resource!.param] ?? '';
  const target = await cloudRecordTarget(ctx, actor, {
    resourceKind: def.resource!.kind,
    id,
    routeTag: def.tag,
    projectTag: PROJECT_TAGS[`${def.method} ${def.url}`]!,
    requestId: req.id,
  });
  if (!target) return false;
  req.resource = target.ref;
  await relayToCloud(ctx, req, reply, { method: def.method, path: req.raw.url ?? req.url, credential: true, projectId: target.project.id });
  return true;
}

/** The stream token of a build-log request, read as the deployments area reads it (streamAccess). */
function streamTokenOf(req: FastifyRequest): { token: unknown; bearer: boolean } {
  const query = req.query as Record<string, unknown> | undefined;
  if (query?.token !== undefined) return { token: query.token, bearer: false };
  return { token: /^Bearer (berth_(?:dpl|slt)_[A-Za-z0-9_-]+)$/.exec(req.headers.authorization?.trim() ?? '')?.[1], bearer: true };
}

/**
 * Part of the cloud module's forward hook (self-hosted, linked): the build-log routes
 * (`GET /api/deployments/:id/logs` and `/logs/stream`) of a deployment this instance does not hold.
 * They are public at the gate and take either a credential or a build token, so this hook makes the
 * handler's own checks first:
 * - a build token (`?token=` or `Bearer berth_dpl_...`; minted by the cloud through the forwarded
 *   `deployment-session` or `build/access`): forwarded *without* the link credential (the token goes
 *   as it came, in the query or as the bearer), like the server-log stream, when the deployment
 *   belongs to a cloud project some local record stands for; the cloud checks the token (a wrong one
 *   is its 401);
 * - a credential: authenticated here, then the same lookup and local checks as forwardCloudRecord
 *   (actor's org only; route tag and project tag), and forwarded with the link credential.
 * A deployment this instance holds (any org) is left to the handler, as before.
 */
export async function forwardCloudDeploymentLogs(def: RouteDef<any>, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  if (ctx.config.mode !== 'self-hosted' || def.access !== 'public' || !def.url.startsWith('/api/deployments/:id/') || !cloudLink(ctx)) return false;
  const projectTag = CLOUD_DEPLOYMENT_PROJECT_TAGS[`${def.method} ${def.url}`];
  if (!projectTag || !def.tag) return false;
  const id = (req.params as Record<string, string> | undefined)?.id ?? '';
  if (!id || id.length > MAX_ID_LENGTH) return false;
  if (await ctx.db.selectFrom('deployments').select('id').where('id', '=', id).executeTakeFirst()) return false;

  const { token, bearer } = streamTokenOf(req);
  // Not a string (a repeated ?token=) or too long: the handler's 400.
  if (token !== undefined && (typeof token !== 'string' || token.length > 200)) return false;
  if (token) {
    if (!(await anyCloudLinks(ctx.db))) return false;
    const cloudProjectId = await cloudProjectOf(ctx, 'deployment', id, req.id);
    if (!cloudProjectId) return false;
    const mapping = await findCloudLinkByCloudIdAnyOrg(ctx.db, cloudProjectId);
    const project = mapping ? await findProjectAnyOrg(ctx.db, mapping.projectId) : undefined;
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
  if (!actor) return false; // the handler's 401
  checkCsrf(ctx, req, actor);
  req.actor = actor;
  const target = await cloudRecordTarget(ctx, actor, { resourceKind: 'deployment', id, routeTag: def.tag, projectTag, requestId: req.id });
  if (!target) return false;
  req.resource = target.ref;
  await relayToCloud(ctx, req, reply, { method: def.method, path: req.raw.url ?? req.url, credential: true, projectId: target.project.id });
  return true;
}

/**
 * The deployments area's hook for `POST /api/deployments/build/access { deploymentId }` of a
 * deployment this instance does not hold (self-hosted, linked): the same lookup and local checks as
 * forwardCloudRecord, then the cloud mints the token (as the link's token) and its answer is passed
 * on. The body was already parsed, so this is one JSON call over the link rather than a relay. null:
 * the usual 404.
 */
export async function cloudBuildAccess(ctx: AppContext, actor: Actor, deploymentId: string, requestId: string): Promise<{ token: string; expiresAt: string } | null> {
  if (ctx.config.mode !== 'self-hosted' || !cloudLink(ctx)) return null;
  const route = 'POST /api/deployments/build/access';
  const target = await cloudRecordTarget(ctx, actor, {
    resourceKind: 'deployment',
    id: deploymentId,
    // The route's tag (the gate only checked a scoped token against it; buildAccess checks the project).
    routeTag: 'project:deployment:read',
    projectTag: CLOUD_DEPLOYMENT_PROJECT_TAGS[route]!,
    requestId,
  });
  if (!target) return null;
  const res = await linkJson<{ data?: { token?: unknown; expiresAt?: unknown } }>(ctx, 'POST', '/api/deployments/build/access', { deploymentId }, { timeoutMs: LOOKUP_TIMEOUT_MS, requestId });
  if (res.status === 404) return null;
  const data = res.body?.data;
  if (res.status !== 200 || typeof data?.token !== 'string' || typeof data.expiresAt !== 'string') {
    throw unreachable(`it answered ${res.status} when asked for a build-log token of deployment ${deploymentId}`);
  }
  return { token: data.token, expiresAt: data.expiresAt };
}
