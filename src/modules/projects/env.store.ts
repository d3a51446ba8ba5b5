import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { precompiled } from '../../db/precompiled.js';
import type { EnvVarsTable } from './projects.tables.js';

export type EnvVarRow = Selectable<EnvVarsTable>;

/** An environment as an env read or write needs it: its id and revision (the ETag) and its name. */
export interface EnvHead {
  id: string;
  name: string;
  envRevision: number;
}

/** Code-unit order of keys: SQLite's BINARY collation and PostgreSQL's "C", whatever the cluster's locale. */
export function byKey(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

const envWithVarsQuery = precompiled<{ envId: string; envName: string; envRevision: number } & { [K in keyof EnvVarRow]: EnvVarRow[K] | null }>(3, (db, [orgId, projectId, name]) =>
  db
    .selectFrom('environments as e')
    .leftJoin('envVars as v', (j) => j.onRef('v.orgId', '=', 'e.orgId').onRef('v.projectId', '=', 'e.projectId').onRef('v.environment', '=', 'e.name'))
    .select(['e.id as envId', 'e.name as envName', 'e.envRevision', 'v.id', 'v.orgId', 'v.projectId', 'v.environment', 'v.key', 'v.value', 'v.isSecret', 'v.createdAt', 'v.updatedAt'])
    .where('e.orgId', '=', orgId!)
    .where('e.projectId', '=', projectId!)
    .where('e.name', '=', name!),
);

/**
 * An environment of a project and its variables, in one query (a read of the env costs one round
 * trip): undefined when the project has no such environment. Variables in key order (`byKey`).
 */
export async function readEnv(db: Db, orgId: string, projectId: string, name: string): Promise<{ env: EnvHead; vars: EnvVarRow[] } | undefined> {
  const rows = await envWithVarsQuery(db, orgId, projectId, name);
  if (rows.length === 0) return undefined;
  const first = rows[0]!;
  const vars: EnvVarRow[] = [];
  for (const r of rows) {
    if (r.id === null) continue;
    vars.push({ id: r.id, orgId: r.orgId!, projectId: r.projectId!, environment: r.environment!, key: r.key!, value: r.value!, isSecret: r.isSecret!, createdAt: r.createdAt!, updatedAt: r.updatedAt! });
  }
  return { env: { id: first.envId, name: first.envName, envRevision: Number(first.envRevision) }, vars: vars.sort(byKey) };
}

/**
 * Bumps the env revision of a project's environment named `name` and answers its id and new revision
 * (undefined: no such environment). The updated row stays locked until the transaction ends, so
 * concurrent env writes of one environment take turns.
 */
export async function bumpEnvRevisionOf(db: Db, orgId: string, projectId: string, name: string): Promise<EnvHead | undefined> {
  const r = await db
    .updateTable('environments')
    .set((eb) => ({ envRevision: eb('envRevision', '+', 1) }))
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('name', '=', name)
    .returning(['id', 'name', 'envRevision'])
    .executeTakeFirst();
  return r ? { id: r.id, name: r.name, envRevision: Number(r.envRevision) } : undefined;
}

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

/**
 * Inserts or updates (by project, environment, key): one statement for up to 1000 rows (an
 * environment's most; 9 values a row stays under both dialects' parameter limits), chunked beyond.
 */
export async function upsertEnvVars(db: Db, rows: EnvVarRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('envVars')
      .values(rows.slice(i, i + 1000))
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
  for (let i = 0; i < keys.length; i += 1000) {
    await db
      .deleteFrom('envVars')
      .where('orgId', '=', orgId)
      .where('projectId', '=', projectId)
      .where('environment', '=', environment)
      .where('key', 'in', keys.slice(i, i + 1000))
      .execute();
  }
}
