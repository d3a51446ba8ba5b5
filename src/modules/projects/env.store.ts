import type { Selectable } from 'kysely';
import { transaction, type Db, type Dialect } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import { sql } from '../../db/kysely.js';
import { precompiled } from '../../db/precompiled.js';
import { auditInsertStep, insertAuditRow, type AuditRow } from '../audit/index.js';
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

/** A variable as reads use it (what an answer shows, and the sealed value with what its AAD names). */
export type EnvVarView = Pick<EnvVarRow, 'projectId' | 'environment' | 'key' | 'value' | 'isSecret' | 'updatedAt'>;

const envWithVarsQuery = precompiled<{ envId: string; envName: string; envRevision: number; key: string | null; value: string; isSecret: number; updatedAt: string }>(3, (db, [orgId, projectId, name]) =>
  db
    .selectFrom('environments as e')
    .leftJoin('envVars as v', (j) => j.onRef('v.orgId', '=', 'e.orgId').onRef('v.projectId', '=', 'e.projectId').onRef('v.environment', '=', 'e.name'))
    .select(['e.id as envId', 'e.name as envName', 'e.envRevision', 'v.key', 'v.value', 'v.isSecret', 'v.updatedAt'])
    .where(inProject(orgId!, projectId!, 'e'))
    .where('e.name', '=', name!),
);

/**
 * PostgreSQL's form of the same read: one row, with the variables as one JSON array of
 * `[key, value, isSecret, updatedAt]`. pg parses each field of each row in JavaScript and the query
 * builder then renames every row's columns; one JSON value is parsed natively instead (measured in
 * docs/decisions.md, "PostgreSQL: pool, prepared statements and round trips").
 */
const envWithVarsJsonQuery = precompiled<{ envId: string; envName: string; envRevision: number; vars: [string, string, number, string][] }>(3, (db, [orgId, projectId, name]) =>
  db
    .selectFrom('environments as e')
    .select(['e.id as envId', 'e.name as envName', 'e.envRevision'])
    .select(
      sql<[string, string, number, string][]>`coalesce((select json_agg(json_build_array(v.key, v.value, v.is_secret, v.updated_at))
        from env_vars v where v.org_id = e.org_id and v.project_id = e.project_id and v.environment = e.name), '[]')`.as('vars'),
    )
    .where(inProject(orgId!, projectId!, 'e'))
    .where('e.name', '=', name!),
);

/**
 * An environment of a project and its variables, in one query (a read of the env costs one round
 * trip): undefined when the project has no such environment. Variables in key order (`byKey`).
 */
export async function readEnv(db: Db, dialect: Dialect, orgId: string, projectId: string, name: string): Promise<{ env: EnvHead; vars: EnvVarView[] } | undefined> {
  if (dialect === 'postgres') {
    const row = (await envWithVarsJsonQuery(db, orgId, projectId, name))[0];
    if (!row) return undefined;
    const vars = row.vars.map(([key, value, isSecret, updatedAt]): EnvVarView => ({ projectId, environment: row.envName, key, value, isSecret: Number(isSecret), updatedAt }));
    return { env: { id: row.envId, name: row.envName, envRevision: Number(row.envRevision) }, vars: vars.sort(byKey) };
  }
  const rows = await envWithVarsQuery(db, orgId, projectId, name);
  if (rows.length === 0) return undefined;
  const first = rows[0]!;
  const vars: EnvVarView[] = [];
  for (const r of rows) if (r.key !== null) vars.push({ projectId, environment: first.envName, key: r.key, value: r.value, isSecret: r.isSecret, updatedAt: r.updatedAt });
  return { env: { id: first.envId, name: first.envName, envRevision: Number(first.envRevision) }, vars: vars.sort(byKey) };
}

export async function listEnvVars(db: Db, orgId: string, projectId: string, environment: string): Promise<EnvVarRow[]> {
  return db
    .selectFrom('envVars')
    .selectAll()
    .where(inProject(orgId, projectId))
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
      .where(inProject(orgId, projectId))
      .where('environment', '=', environment)
      .where('key', 'in', keys.slice(i, i + 1000))
      .execute();
  }
}

/** Takes the row lock of a project's environment until the transaction ends (PostgreSQL; SQLite's writer lock is the file's). */
export async function lockEnv(tx: Db, dialect: Dialect, orgId: string, projectId: string, name: string): Promise<void> {
  if (dialect !== 'postgres') return;
  await tx.selectFrom('environments').select('id').where(inProject(orgId, projectId)).where('name', '=', name).forUpdate().execute();
}

/** What one env PATCH writes: the environment as it was read, the rows to upsert, the keys to delete, the audit row. */
export interface EnvWrite {
  orgId: string;
  projectId: string;
  /** The environment as read: the write applies only if its revision is still this one. */
  env: EnvHead;
  rows: EnvVarRow[];
  deletes: string[];
  audit: AuditRow;
}

/**
 * Applies an env change if the environment's revision is still the one it was computed from
 * (compare-and-set): bumps the revision, upserts the rows, deletes the keys and writes the audit row,
 * all or nothing. Answers the environment with its new revision, or undefined when the revision
 * moved on (or the environment is gone) and nothing was written. On PostgreSQL this is one statement
 * (data-modifying CTEs, each gated on the bump), so the change costs one round trip and holds the
 * environment's row lock only while the statement runs; on SQLite one transaction of the same steps.
 */
export async function applyEnvPatch(db: Db, dialect: Dialect, w: EnvWrite): Promise<EnvHead | undefined> {
  if (dialect === 'postgres') {
    // Every step after the bump runs only if the bump updated the row (`exists (table e)`).
    const bumped = sql`exists (table e)`;
    const steps = [
      sql`e as (update environments set env_revision = env_revision + 1
          where org_id = ${w.orgId} and id = ${w.env.id} and env_revision = ${w.env.envRevision}
          returning id, name, env_revision)`,
    ];
    if (w.rows.length) {
      const values = sql.join(w.rows.map((r) => sql`(${r.id}, ${r.orgId}, ${r.projectId}, ${r.environment}, ${r.key}, ${r.value}, ${r.isSecret}::integer, ${r.createdAt}, ${r.updatedAt})`));
      steps.push(sql`u as (insert into env_vars (id, org_id, project_id, environment, key, value, is_secret, created_at, updated_at)
          select * from (values ${values}) as v (id, org_id, project_id, environment, key, value, is_secret, created_at, updated_at) where ${bumped}
          on conflict (project_id, environment, key) do update set value = excluded.value, is_secret = excluded.is_secret, updated_at = excluded.updated_at)`);
    }
    if (w.deletes.length) {
      steps.push(sql`d as (delete from env_vars where org_id = ${w.orgId} and project_id = ${w.projectId} and environment = ${w.env.name}
          and key in (${sql.join(w.deletes)}) and ${bumped})`);
    }
    steps.push(sql`a as (${auditInsertStep(w.audit, bumped)})`);
    const { rows } = await sql<{ id: string; name: string; envRevision: number }>`with ${sql.join(steps)} table e`.execute(db);
    const r = rows[0];
    return r ? { id: r.id, name: r.name, envRevision: Number(r.envRevision) } : undefined;
  }
  return transaction(db, async (tx) => {
    // Written as SQL text, as on PostgreSQL, so the write events (db/write-events.ts) do not see it:
    // the revision is no cache's, and a query-builder update of `environments` would drop the
    // project reads on every PATCH (migration 027 spares other instances the same).
    const { rows } = await sql<{ id: string; name: string; envRevision: number }>`update environments set env_revision = env_revision + 1
        where org_id = ${w.orgId} and id = ${w.env.id} and env_revision = ${w.env.envRevision}
        returning id, name, env_revision`.execute(tx);
    const r = rows[0];
    if (!r) return undefined;
    await upsertEnvVars(tx, w.rows);
    if (w.deletes.length) await deleteEnvVars(tx, w.orgId, w.projectId, w.env.name, w.deletes);
    await insertAuditRow(tx, w.audit);
    return { id: r.id, name: r.name, envRevision: Number(r.envRevision) };
  });
}

/** The `environment:key` names of a project's env vars (the deletion preview). */
export async function envVarNames(db: Db, orgId: string, projectId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('envVars')
    .select(['environment', 'key'])
    .where(inProject(orgId, projectId))
    .orderBy('environment')
    .orderBy('key')
    .execute();
  return rows.map((r) => `${r.environment}:${r.key}`);
}
