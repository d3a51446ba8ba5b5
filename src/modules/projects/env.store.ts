import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import type { EnvVarsTable } from './projects.tables.js';

export type EnvVarRow = Selectable<EnvVarsTable>;

export async function listEnvVars(db: Db, orgId: string, projectId: string, environment: string): Promise<EnvVarRow[]> {
  return db
    .selectFrom('envVars')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('environment', '=', environment)
    .orderBy('key', 'asc')
    .execute();
}

export async function listEnvKeys(db: Db, orgId: string, projectId: string, environment: string): Promise<{ key: string; isSecret: number }[]> {
  return db
    .selectFrom('envVars')
    .select(['key', 'isSecret'])
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('environment', '=', environment)
    .execute();
}

/** Inserts or updates (by project, environment, key), in chunks that fit both dialects' parameter limits. */
export async function upsertEnvVars(db: Db, rows: EnvVarRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) {
    await db
      .insertInto('envVars')
      .values(rows.slice(i, i + 100))
      .onConflict((oc) =>
        oc.columns(['projectId', 'environment', 'key']).doUpdateSet((eb) => ({
          value: eb.ref('excluded.value'),
          isSecret: eb.ref('excluded.isSecret'),
          updatedAt: eb.ref('excluded.updatedAt'),
        })),
      )
      .execute();
  }
}

export async function deleteEnvVars(db: Db, orgId: string, projectId: string, environment: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 500) {
    await db
      .deleteFrom('envVars')
      .where('orgId', '=', orgId)
      .where('projectId', '=', projectId)
      .where('environment', '=', environment)
      .where('key', 'in', keys.slice(i, i + 500))
      .execute();
  }
}

/**
 * Bumps an environment's env revision; with `expected`, only when it still is `expected`
 * (compare-and-set: a concurrent PATCH that won makes this one update nothing). Returns rows updated.
 */
export async function bumpEnvRevision(db: Db, orgId: string, environmentId: string, expected?: number): Promise<number> {
  let q = db
    .updateTable('environments')
    .set((eb) => ({ envRevision: eb('envRevision', '+', 1) }))
    .where('orgId', '=', orgId)
    .where('id', '=', environmentId);
  if (expected !== undefined) q = q.where('envRevision', '=', expected);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows);
}
