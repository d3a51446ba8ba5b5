import type { Actor } from '../../authz/actor.js';
import { authorize } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { resourceInfo, type AnyRoute, type ModuleDef, type ResolvedResource, type ResourceInfo, type ResourceResolver } from '../../http/route.js';
import { AppError } from '../../lib/errors.js';
import { projectAuthz, projectQueries, type ProjectRow } from '../projects/index.js';
import { findCloudLinkByCloudId, orgHasCloudLinks } from './cloud.store.js';
import { linkJson, unreachable } from './link.js';

/**
 * Records that live under a project (a deployment, a backup policy, run or restore) exist only on the
 * cloud when their project does. Their ids mean nothing to the local resolver, so a linked
 * self-hosted instance asks the cloud which project the record belongs to
 * (`GET /api/cloud/refs/:kind/:id`, cloud only), finds its own record of that cloud project in the
 * actor's org, authorizes the actor as the route's declaration says, and forwards the request.
 *
 * Which routes and record kinds take part is read from the route definitions, never listed here: a
 * route names a cloud record when its resource is not a project and it checks something of the
 * record's project (a `project:` tag, or a requirement on the parent project). See docs/cloud.md.
 */

function projectTag(tag: string | undefined): boolean {
  return !!tag && tag.startsWith('project:');
}

/** Whether a route checks something of its record's project (its tag or one of its requirements). */
function checksProject(def: Pick<AnyRoute, 'tag' | 'requires'>): boolean {
  return projectTag(def.tag) || (def.requires ?? []).some((r: { tag: string; on?: string }) => r.on === 'project' || projectTag(r.tag));
}

/** The record kinds that can stand for a cloud record: named by a route that checks their project. */
export function cloudRecordKinds(routes: readonly AnyRoute[]): Set<string> {
  const kinds = new Set<string>();
  for (const def of routes) {
    const src = resourceInfo(def.resource);
    if (src && src.kind !== 'project' && checksProject(def)) kinds.add(src.kind);
  }
  return kinds;
}

/** The routes a linked instance forwards for a cloud record: every route whose resource is of such a kind. */
export function cloudRecordRoutes(routes: readonly AnyRoute[]): AnyRoute[] {
  const kinds = cloudRecordKinds(routes);
  return routes.filter((def) => {
    const src = resourceInfo(def.resource);
    return !!src && kinds.has(src.kind);
  });
}

/** The name of a kind in the lookup route (`backup_policy` -> `policy`, `deployment` -> `deployment`). */
export function lookupName(kind: string): string {
  return kind.slice(kind.lastIndexOf('_') + 1);
}

const kindName = (kind: string) => kind.replace(/_/g, ' ');

/** Every route and resolver of the running server (the modules it registered). */
export interface RouteTable {
  routes: AnyRoute[];
  resolvers: Map<string, ResourceResolver>;
}

export function routeTable(modules: readonly ModuleDef[]): RouteTable {
  const resolvers = new Map<string, ResourceResolver>();
  for (const m of modules) for (const [k, fn] of Object.entries(m.resolvers ?? {})) resolvers.set(k, fn);
  return { routes: modules.flatMap((m) => m.routes), resolvers };
}

/**
 * Cloud side (`GET /api/cloud/refs/:kind/:id`): the project a record of the actor's org lives under,
 * found by the kind's own resolver. Missing, another org's or not under a project: 404; same org
 * without read on the record (its project's grant keys): 403. An unknown kind: 400.
 */
export async function recordRefProject(ctx: AppContext, known: { table: RouteTable; recordKinds: Set<string> }, actor: Actor, name: string, id: string): Promise<{ projectId: string }> {
  const kind = [...known.recordKinds].find((k) => lookupName(k) === name);
  const resolver = kind ? known.table.resolvers.get(kind) : undefined;
  if (!kind || !resolver) throw new AppError('VALIDATION_FAILED', `kind must be one of ${[...known.recordKinds].map(lookupName).join(', ')}`, { field: 'params.kind' });
  const found = await resolver(ctx, actor.orgId, id, { id }, { read: false });
  // Records under a project carry its id (every such table has a project_id column).
  const record = found?.record as { projectId?: unknown } | undefined;
  const projectId = found?.parents?.project && typeof record?.projectId === 'string' ? record.projectId : null;
  // Reading which project a record hangs under is reading the record: project:read on it.
  authorize(actor, 'project:read', projectId ? found : null, kindName(kind));
  return { projectId: projectId! };
}

/** How long the self-hosted side waits for the cloud's answer to a lookup (and to a forwarded JSON call). */
export const LOOKUP_TIMEOUT_MS = 10_000;

/** Ids longer than this are no record's: 404 without a round trip. */
export const MAX_ID_LENGTH = 64;

/**
 * Which cloud project a record belongs to, asked with the link credential: the cloud project id, or
 * null when the cloud has no such record (its 404 or 400). Only the kind and the id are sent. A
 * network failure, a timeout, a refused link token or any other answer is 503 `cloud_unreachable`.
 * Nothing is cached: each request asks again, so a deleted record is 404 at once.
 */
export async function cloudProjectOf(ctx: AppContext, kind: string, id: string, requestId: string): Promise<string | null> {
  const res = await linkJson<{ data?: { projectId?: unknown } }>(ctx, 'GET', `/api/cloud/refs/${lookupName(kind)}/${encodeURIComponent(id)}`, undefined, {
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

export interface CloudTarget {
  project: ProjectRow;
  /** The record as the gate would have resolved it, with the local cloud project's grant keys. */
  ref: ResolvedResource;
}

/**
 * The local record of the cloud project a cloud record belongs to, in the actor's org, once the actor
 * passed what the route declares (its tag on the record, whose grant keys are the local project's,
 * standing in for the cloud record's, then each requirement). null: the usual 404 (nothing to look
 * for, no such record, or another org's). 403 is thrown (authorize), nothing but the lookup sent.
 */
export async function cloudRecordTarget(ctx: AppContext, actor: Actor, def: AnyRoute, source: ResourceInfo, id: string, requestId: string): Promise<CloudTarget | null> {
  if (!id || id.length > MAX_ID_LENGTH) return null;
  // An org with no project on the cloud cannot own a record there: 404 without a round trip.
  if (!(await orgHasCloudLinks(ctx.db, actor.orgId))) return null;
  const cloudProjectId = await cloudProjectOf(ctx, source.kind, id, requestId);
  if (!cloudProjectId) return null;

  // The local record of that cloud project, in the actor's org only: another org's is 404.
  const mapping = await findCloudLinkByCloudId(ctx.db, actor.orgId, cloudProjectId);
  if (!mapping) return null;
  const project = await projectQueries.findProject(ctx.db, actor.orgId, mapping.projectId);
  if (!project || project.location !== 'cloud') return null;

  const parent = projectAuthz.ref(project);
  const ref: ResolvedResource = { ...parent, kind: source.kind, id, record: { id, projectId: project.id, cloudProjectId, location: 'cloud' }, parents: { project: parent } };
  authorizeAsDeclared(actor, def, ref);
  return { project, ref };
}

/** What the gate checks on a resolved record (the route's tag, then each requirement), here on a cloud record's stand-in. */
function authorizeAsDeclared(actor: Actor, def: AnyRoute, ref: ResolvedResource): void {
  const what = kindName(ref.kind);
  if (def.tag) authorize(actor, def.tag, ref, what);
  for (const r of (def.requires ?? []) as { tag: string; on?: 'record' | 'project' }[]) {
    if (r.on === 'project') authorize(actor, r.tag, ref.parents!.project!, 'project');
    else authorize(actor, r.tag, ref, what);
  }
}
