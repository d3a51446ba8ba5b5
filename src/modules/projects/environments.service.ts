/** A project's environments: production (made with the project) and previews. */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { environmentRecord, type EnvironmentRecord } from './projects.presenters.js';
import * as store from './projects.store.js';
import type { ProjectRow } from './projects.store.js';
import { checkBranch } from './validate.js';

export async function listEnvironments(ctx: AppContext, row: ProjectRow): Promise<EnvironmentRecord[]> {
  return (await store.listEnvironments(ctx.db, row.orgId, row.id)).map(environmentRecord);
}

export async function createEnvironment(ctx: AppContext, actor: Actor, row: ProjectRow, input: { name: string; branch?: string }): Promise<EnvironmentRecord> {
  const name = input.name.trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw invalid('name', 'name must be lowercase letters, digits and dashes (at most 63 characters)');
  const branch = input.branch === undefined || input.branch.trim() === '' ? null : checkBranch(input.branch, 'branch');
  const existing = await store.findEnvironment(ctx.db, row.orgId, row.id, name);
  if (existing) throw conflict(`this project already has an environment named "${name}"`, 'name');
  const env = { id: newId('env'), orgId: row.orgId, projectId: row.id, name, type: 'preview', branch, envRevision: 0, createdAt: nowIso() };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertEnvironment(tx, env);
      await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.environment.create', resourceType: 'project', resourceId: row.id, details: { environment: name } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`this project already has an environment named "${name}"`, 'name');
    throw e;
  }
  return environmentRecord(env);
}
