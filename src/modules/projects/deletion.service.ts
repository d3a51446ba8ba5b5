/**
 * Deleting a project: the preview (counts and names of everything that goes, other areas' dependents
 * included) and the deletion itself (runtime stopped, rows removed in one transaction, then files).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { releaseVolumes } from '../../runtime/disk-limits.js';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { insertAuditEvent } from '../audit/index.js';
import { deleteResourceGrants } from '../permissions/index.js';
import type { CountNames, DeletionPreview } from './projects.presenters.js';
import * as store from './projects.store.js';
import * as envVarsStore from './env.store.js';
import type { ProjectRow } from './projects.store.js';
import { afterCommit } from './runtime-port.js';

const cn = (names: string[]): CountNames => ({ count: names.length, names });

export async function deletionPreview(ctx: AppContext, row: ProjectRow, db: Db = ctx.db): Promise<DeletionPreview> {
  const { orgId, id } = row;
  const out: DeletionPreview = {
    // Counted and named by the deployments area (its dependent below); first, where it always was.
    deployments: cn([]),
    envVars: cn(await envVarsStore.envVarNames(db, orgId, id)),
    domains: cn(await store.namesUnder(db, 'domains', orgId, id)),
    environments: cn(await store.namesUnder(db, 'environments', orgId, id)),
    backupPolicies: cn([]),
    backupRuns: cn([]),
    services: cn(await store.namesUnder(db, 'services', orgId, id)),
    routeRules: cn(await store.namesUnder(db, 'routeRules', orgId, id)),
  };
  for (const d of ctx.ports.projectDependents) out[d.name] = await d.preview(db, orgId, id);
  return out;
}

/** Folders of a project under the data dir: its volumes, uploads, builds and build cache. */
export function projectPaths(ctx: AppContext, projectId: string): string[] {
  const safe = path.basename(projectId);
  return ['volumes', 'uploads', 'builds', 'build-cache'].map((d) => path.join(ctx.config.dataDir, d, safe));
}

/** Deletes the project and everything the preview lists in one transaction, then its files. */
export async function deleteProject(ctx: AppContext, actor: Actor, row: ProjectRow): Promise<{ id: string; deleted: true; removed: DeletionPreview }> {
  const rt = ctx.ports.runtime;
  if (rt) await afterCommit(ctx, 'project.delete', () => rt.removeProject(ctx, row.orgId, row.id));
  const dependents = ctx.ports.projectDependents;
  for (const d of dependents) if (d.stop) await afterCommit(ctx, `project.delete ${d.name}`, () => d.stop!(ctx, row.orgId, row.id));
  const paths = [...projectPaths(ctx, row.id)];
  for (const d of dependents) paths.push(...(d.paths?.(ctx, row.orgId, row.id) ?? []));
  const removed = await transaction(ctx.db, async (tx) => {
    const preview = await deletionPreview(ctx, row, tx);
    for (const d of dependents) await d.remove(tx, row.orgId, row.id);
    // Grants naming the project would dangle (and would cover a reused id): they go with it.
    await deleteResourceGrants(tx, row.orgId, 'project', row.id);
    await store.deleteProjectRows(tx, row.orgId, row.id);
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.delete',
      resourceType: 'project',
      resourceId: row.id,
      details: { name: row.name, slug: row.slug, counts: Object.fromEntries(Object.entries(preview).map(([k, v]) => [k, v.count])) },
    });
    return preview;
  });
  // The project's grants went with it: members of the org whose access came from them (a restricted
  // member's cached credential, an open stream under the project) lose it now.
  ctx.access.changed({ orgId: row.orgId });
  for (const p of paths) {
    // A volume or a build on its disk image (docs/runtime.md "Disk limits") is unmounted first.
    await releaseVolumes(p).catch((e) => ctx.log.warn({ err: e, path: p }, 'could not unmount project files'));
    await rm(p, { recursive: true, force: true }).catch((e) => ctx.log.warn({ err: e, path: p }, 'could not remove project files'));
  }
  return { id: row.id, deleted: true, removed };
}
