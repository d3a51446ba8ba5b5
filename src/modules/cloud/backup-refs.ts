import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../authz/actor.js';
import { authorize } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import type { ResolvedResource, RouteDef } from '../../http/route.js';
import * as backupStore from '../backups/backups.store.js';
import { policyRef, restoreRef, runRef } from '../backups/backups.service.js';
import { findProject, projectRef } from '../projects/projects.store.js';
import { findCloudLinkByCloudId, orgHasCloudLinks } from './cloud.store.js';
import { relayToCloud } from './forward.js';
import { cloudLink, linkJson, unreachable } from './link.js';

/**
 * Backup routes named by a policy, run or restore id (`/api/backup-policies/:policyId`, ...) of a
 * cloud project: the id exists only on the cloud, so a linked self-hosted instance asks the cloud
 * which project the record belongs to (`GET /api/cloud/backup-refs/:kind/:id`, cloud only), finds
 * its own record of that cloud project in the actor's org, authorizes the actor against it, and
 * forwards the request unchanged (the ids in the path are the cloud's own). See docs/cloud.md.
 */

export const BACKUP_REF_KINDS = ['policy', 'run', 'restore'] as const;
export type BackupRefKind = (typeof BACKUP_REF_KINDS)[number];

/** The route resource kinds that can name a cloud record, and their lookup kind. */
const KIND_OF_RESOURCE: Record<string, BackupRefKind> = {
  backup_policy: 'policy',
  backup_run: 'run',
  backup_restore: 'restore',
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

/** Whether a route is one that forwardCloudBackupRecord may forward. */
export function forwardsCloudBackupRecords(def: Pick<RouteDef<any>, 'method' | 'url' | 'resource'>): boolean {
  return !!def.resource && def.resource.kind in KIND_OF_RESOURCE && `${def.method} ${def.url}` in CLOUD_BACKUP_PROJECT_TAGS;
}

/**
 * Cloud side (`GET /api/cloud/backup-refs/:kind/:id`): the project of a backup record of the actor's
 * org. Missing or another org's: 404; same org without read on the project: 403.
 */
export async function backupRefProject(ctx: Pick<AppContext, 'db'>, actor: Actor, kind: BackupRefKind, id: string): Promise<{ projectId: string }> {
  let ref: ResolvedResource | null = null;
  let projectId = '';
  if (kind === 'policy') {
    const row = await backupStore.findPolicy(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [policyRef(row), row.projectId];
  } else if (kind === 'run') {
    const row = await backupStore.findRun(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [runRef(row), row.projectId];
  } else {
    const row = await backupStore.findRestore(ctx.db, actor.orgId, id);
    if (row) [ref, projectId] = [restoreRef(row), row.projectId];
  }
  authorize(actor, 'project:read', ref, `backup ${kind}`);
  return { projectId };
}

/** How long the self-hosted side waits for the cloud's answer to a lookup. */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * The ModuleDef.forwardUnresolved hook of the cloud module (self-hosted, linked): a backup route
 * whose policy/run/restore id this instance does not hold is forwarded when the record belongs to a
 * cloud project whose local record is in the actor's org and the actor may act on it. Nothing is
 * cached: each request looks the record up again, so a deleted record is 404 at once.
 */
export async function forwardCloudBackupRecord(def: RouteDef<any>, req: FastifyRequest, reply: FastifyReply, ctx: AppContext): Promise<boolean> {
  if (ctx.config.mode !== 'self-hosted' || !cloudLink(ctx) || !forwardsCloudBackupRecords(def)) return false;
  const actor = req.actor;
  if (!actor || !def.tag) return false;
  const resourceKind = def.resource!.kind;
  const id = (req.params as Record<string, string> | undefined)?.[def.resource!.param] ?? '';
  if (!id || id.length > 64) return false;
  // An org with no project on the cloud cannot own a record there: 404 without a round trip.
  if (!(await orgHasCloudLinks(ctx.db, actor.orgId))) return false;

  // Which cloud project the record belongs to. Only the kind and the id are sent; a network
  // failure, a timeout or a refused link token is 503 `cloud_unreachable` (linkJson).
  const kind = KIND_OF_RESOURCE[resourceKind]!;
  const res = await linkJson<{ data?: { projectId?: unknown } }>(ctx, 'GET', `/api/cloud/backup-refs/${kind}/${encodeURIComponent(id)}`, undefined, {
    timeoutMs: LOOKUP_TIMEOUT_MS,
    requestId: req.id,
  });
  if (res.status === 404 || res.status === 400) return false;
  const cloudProjectId = res.body?.data?.projectId;
  if (res.status !== 200 || typeof cloudProjectId !== 'string') {
    throw unreachable(`it answered ${res.status} when asked which project backup ${kind} ${id} belongs to`);
  }

  // The local record of that cloud project, in the actor's org only: another org's is 404.
  const mapping = await findCloudLinkByCloudId(ctx.db, actor.orgId, cloudProjectId);
  if (!mapping) return false;
  const project = await findProject(ctx.db, actor.orgId, mapping.projectId);
  if (!project || project.location !== 'cloud') return false;

  // The checks a local record of this kind gets (route tag, then the service's check on the
  // project), with the local project's grant keys standing in for the cloud record's: 403 here,
  // nothing sent.
  const ref: ResolvedResource = { ...projectRef(project), kind: resourceKind, id, record: { id, projectId: project.id, cloudProjectId, location: 'cloud' } };
  const what = resourceKind.replace(/_/g, ' ');
  authorize(actor, def.tag, ref, what);
  authorize(actor, CLOUD_BACKUP_PROJECT_TAGS[`${def.method} ${def.url}`]!, projectRef(project), 'project');
  req.resource = ref;

  await relayToCloud(ctx, req, reply, { method: def.method, path: req.raw.url ?? req.url, credential: true, projectId: project.id });
  return true;
}
