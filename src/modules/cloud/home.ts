import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { listCloudLinks } from './cloud.store.js';
import { cloudLink, linkJson, noteLinkStatus } from './link.js';

/** How long the home feed waits for the cloud before it answers with local projects alone. */
export const HOME_CLOUD_TIMEOUT_MS = 2000;

export interface HomeEntry {
  id: string;
  orgId?: string;
  location: string;
}

/**
 * The cloud half of `GET /api/projects/home`. `local` is what the actor may read on this instance,
 * cloud projects included as their local records (`location: "cloud"`). Each of those is replaced
 * by the cloud's live record (its id kept as the local id, the cloud's as `cloudId`, and
 * `location: "cloud"`). When the cloud does not answer within 2 s, the local records alone come
 * back with `cloudUnreachable: true`. Cloud projects that no local record stands for are not
 * listed: the link is one cloud org shared by the whole instance, so they cannot be attributed to
 * a local org (docs/cloud.md).
 */
export async function mergeCloudHome<T extends HomeEntry>(
  ctx: AppContext,
  actor: Actor,
  local: T[],
): Promise<{ projects: T[]; cloudUnreachable: boolean }> {
  if (!cloudLink(ctx)) return { projects: local, cloudUnreachable: false };
  let cloud: Array<Record<string, unknown> & { id: string }>;
  try {
    const res = await linkJson<{ data: Array<Record<string, unknown> & { id: string }> }>(ctx, 'GET', '/api/projects', undefined, { timeoutMs: HOME_CLOUD_TIMEOUT_MS });
    if (res.status !== 200 || !Array.isArray(res.body?.data)) throw new Error(`status ${res.status}`);
    cloud = res.body.data;
    noteLinkStatus(ctx, true);
  } catch {
    noteLinkStatus(ctx, false);
    return { projects: local, cloudUnreachable: true };
  }
  const byCloudId = new Map(cloud.map((p) => [p.id, p]));
  const links = new Map((await listCloudLinks(ctx.db, actor.orgId)).map((l) => [l.projectId, l.cloudProjectId]));
  const projects = local.map((p) => {
    if (p.location !== 'cloud') return p;
    const cloudId = links.get(p.id) ?? p.id;
    const live = byCloudId.get(cloudId);
    if (!live) return p;
    // The cloud's live record (same shape: it runs the same program), under the local id.
    return { ...live, id: p.id, orgId: p.orgId ?? actor.orgId, cloudId, location: 'cloud' } as unknown as T;
  });
  return { projects, cloudUnreachable: false };
}
