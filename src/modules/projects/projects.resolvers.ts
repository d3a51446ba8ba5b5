/** The `project` resource kind: grant keys, refs for authorize()/can(), and the route gate's resolver. */
import type { GrantKey } from '../../authz/grants.js';
import type { AppContext } from '../../context.js';
import type { ResolvedResource } from '../../http/route.js';
import { findProject, type ProjectRow } from './projects.store.js';

/** The grant keys that cover a project and everything under it (env, domains, policies, runs, ...). */
export function projectGrantKeys(projectId: string): GrantKey[] {
  return [{ type: 'project', id: projectId }];
}

/**
 * A resource ref for a project row, for authorize()/can(). Other areas build refs for records under a
 * project with `{ ...projectAuthz.ref(project), kind: 'backup_policy', id: policy.id, record: policy }`, so that a
 * grant on the project covers them.
 */
export function projectRef(row: { id: string; orgId: string }): ResolvedResource {
  return { kind: 'project', id: row.id, orgId: row.orgId, grantKeys: projectGrantKeys(row.id), record: row };
}

/** For other areas, as one object: a project's ref for authorize()/can(), and its grant keys. */
export const projectAuthz = { ref: projectRef, grantKeys: projectGrantKeys } as const;

declare module '../../http/route.js' {
  interface ResourceKinds {
    project: ProjectRow;
  }
}

/**
 * Resolver of kind `project` (routes with `resource: { kind: 'project', param: 'id' }` or a body
 * `projectId`); without a promise when a read finds the row in memory.
 */
export function resolveProject(ctx: AppContext, orgId: string, id: string, _source?: unknown, how?: { read: boolean }): ResolvedResource<'project'> | null | Promise<ResolvedResource<'project'> | null> {
  const reads = how?.read ? ctx.state.projects?.reads : null;
  const row = reads ? reads.project(ctx.db, orgId, id) : findProject(ctx.db, orgId, id);
  return row instanceof Promise ? row.then(projectResource) : projectResource(row);
}

function projectResource(row: ProjectRow | undefined): ResolvedResource<'project'> | null {
  return row ? { kind: 'project', id: row.id, orgId: row.orgId, grantKeys: projectGrantKeys(row.id), record: row } : null;
}
