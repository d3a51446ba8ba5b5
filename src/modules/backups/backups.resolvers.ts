import type { AppContext } from '../../context.js';
import type { ResolvedResource } from '../../http/route.js';
import * as store from './backups.store.js';
import type { DestinationRow, PolicyRow, RestoreRow, RunRow } from './backups.store.js';
import { parentProjectRef } from './project-link.js';

/**
 * The backups area's resource kinds: how a route's record id becomes the record and its
 * authorization ref. A destination carries its own grant key; a policy, run or restore lives under a
 * project, whose grant keys cover it and whose ref is `parents.project` (for `requires: [{ on: 'project' }]`).
 */

declare module '../../http/route.js' {
  interface ResourceKinds {
    backup_destination: DestinationRow;
    backup_policy: PolicyRow;
    backup_run: RunRow;
    backup_restore: RestoreRow;
  }
}

type UnderProject = 'backup_policy' | 'backup_run' | 'backup_restore';

export function destinationRef(row: DestinationRow): ResolvedResource<'backup_destination'> {
  return { kind: 'backup_destination', id: row.id, orgId: row.orgId, grantKeys: [{ type: 'backup_destination', id: row.id }], record: row };
}

function underProject<K extends UnderProject>(kind: K, row: { id: string; orgId: string; projectId: string }, record: ResolvedResource<K>['record']): ResolvedResource<K> {
  const project = parentProjectRef(row.orgId, row.projectId);
  return { kind, id: row.id, orgId: row.orgId, grantKeys: project.grantKeys, record, parents: { project } };
}

export const policyRef = (row: PolicyRow) => underProject('backup_policy', row, row);
export const runRef = (row: RunRow) => underProject('backup_run', row, row);
export const restoreRef = (row: RestoreRow) => underProject('backup_restore', row, row);

export const resolvers = {
  async backup_destination(ctx: Pick<AppContext, 'db'>, orgId: string, id: string) {
    const row = await store.findDestination(ctx.db, orgId, id);
    return row ? destinationRef(row) : null;
  },
  async backup_policy(ctx: Pick<AppContext, 'db'>, orgId: string, id: string) {
    const row = await store.findPolicy(ctx.db, orgId, id);
    return row ? policyRef(row) : null;
  },
  async backup_run(ctx: Pick<AppContext, 'db'>, orgId: string, id: string) {
    const row = await store.findRun(ctx.db, orgId, id);
    return row ? runRef(row) : null;
  },
  async backup_restore(ctx: Pick<AppContext, 'db'>, orgId: string, id: string) {
    const row = await store.findRestore(ctx.db, orgId, id);
    return row ? restoreRef(row) : null;
  },
};
