/**
 * SQL of the metrics area: targets (scoped by org) and their points. The sampler writes points of
 * the targets this server runs; the rollup and prune job (rollup.ts) works across orgs by design
 * (`...AnyOrg`), as a system task that answers nobody. Points live in one table per step and keep
 * memory in KiB (metrics.tables.ts); the functions here take and answer points with their step and
 * memory in bytes.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg, inProject } from '../../db/scope.js';
import type { MetricPointsTable, MetricTargetsTable } from './metrics.tables.js';

export type TargetRow = Selectable<MetricTargetsTable>;

type Stored = Selectable<MetricPointsTable>;
type Values = Omit<Stored, 'targetId' | 'ts' | 'memKib'> & { memBytes: number | null };

/** One target's point at one step; memory in bytes (kept to the KiB). */
export type PointRow = { targetId: number; step: number; ts: number } & Values;
/** A point to write: what is not given is null (not measured). */
export type NewPoint = { targetId: number; step: number; ts: number } & Partial<Values>;

const TABLES = { 10: 'metricPointsRaw', 60: 'metricPointsMinute', 3600: 'metricPointsHour' } as const;
type PointsTable = (typeof TABLES)[keyof typeof TABLES];

function tableOf(step: number): PointsTable {
  const table = (TABLES as Record<number, PointsTable | undefined>)[step];
  if (!table) throw new Error(`metrics: no table keeps ${step} s points`);
  return table;
}

function stored(p: NewPoint): Stored {
  const { step: _step, memBytes, ...rest } = p;
  return {
    cpuMilli: null, netRx: null, netTx: null, diskRead: null, diskWrite: null, req1xx: null, req2xx: null, req3xx: null, req4xx: null, req5xx: null, p50Us: null, p95Us: null, p99Us: null, respBytes: null,
    ...rest,
    memKib: memBytes === null || memBytes === undefined ? null : Math.round(memBytes / 1024),
  };
}

function point(step: number, r: Stored): PointRow {
  const { memKib, ...rest } = r;
  return { ...rest, step, ts: Number(r.ts), memBytes: memKib === null ? null : Number(memKib) * 1024 };
}

/** A batch insert stays under both databases' parameter limits. */
const CHUNK = 200;

/** The target's id, made on first use; its label follows what the sampler says now. */
export async function ensureTarget(db: Db, t: Omit<TargetRow, 'id'>): Promise<number> {
  const found = await db.selectFrom('metricTargets').select(['id', 'label']).where(inOrg(t.orgId)).where('kind', '=', t.kind).where('name', '=', t.name).executeTakeFirst();
  if (found) {
    if (found.label !== t.label) await db.updateTable('metricTargets').set({ label: t.label }).where(inOrg(t.orgId)).where('id', '=', found.id).execute();
    return found.id;
  }
  await db.insertInto('metricTargets').values(t).onConflict((oc) => oc.columns(['kind', 'name']).doNothing()).execute();
  const made = await db.selectFrom('metricTargets').select('id').where(inOrg(t.orgId)).where('kind', '=', t.kind).where('name', '=', t.name).executeTakeFirstOrThrow();
  return made.id;
}

/** Points of the sampler (a repeated (target, step, ts) keeps the first). */
export async function insertPoints(db: Db, rows: NewPoint[]): Promise<void> {
  const bySteps = new Map<number, Stored[]>();
  for (const p of rows) {
    const list = bySteps.get(p.step);
    if (list) list.push(stored(p));
    else bySteps.set(p.step, [stored(p)]);
  }
  for (const [step, list] of bySteps) {
    const table = tableOf(step);
    for (let i = 0; i < list.length; i += CHUNK) {
      await db.insertInto(table).values(list.slice(i, i + CHUNK)).onConflict((oc) => oc.columns(['targetId', 'ts']).doNothing()).execute();
    }
  }
}

export async function targetsOfProject(db: Db, orgId: string, projectId: string): Promise<TargetRow[]> {
  return db.selectFrom('metricTargets').selectAll().where(inProject(orgId, projectId)).orderBy('kind').orderBy('label').orderBy('id').execute();
}

export async function targetsOfOrg(db: Db, orgId: string): Promise<TargetRow[]> {
  return db.selectFrom('metricTargets').selectAll().where(inOrg(orgId)).execute();
}

/** The points of an org's targets at `step` with `from <= ts < to`, oldest first. */
export async function pointsOf(db: Db, orgId: string, targetIds: number[], step: number, from: number, to: number): Promise<PointRow[]> {
  if (targetIds.length === 0) return [];
  const table = tableOf(step);
  const rows = await db
    .selectFrom(table)
    .innerJoin('metricTargets', 'metricTargets.id', `${table}.targetId`)
    .selectAll(table)
    .where(inOrg(orgId, 'metricTargets'))
    .where(`${table}.targetId`, 'in', targetIds)
    .where(`${table}.ts`, '>=', from)
    .where(`${table}.ts`, '<', to)
    .orderBy(`${table}.targetId`)
    .orderBy(`${table}.ts`)
    .execute();
  return rows.map((r) => point(step, r));
}

/** Every target's points at `step` in [from, to): the rollup's input (all orgs). */
export async function pointsAnyOrg(db: Db, step: number, from: number, to: number): Promise<PointRow[]> {
  const rows = await db.selectFrom(tableOf(step)).selectAll().where('ts', '>=', from).where('ts', '<', to).orderBy('targetId').orderBy('ts').execute();
  return rows.map((r) => point(step, r));
}

/** The newest and oldest bucket at `step` (all orgs). */
export async function spanAnyOrg(db: Db, step: number): Promise<{ min: number | null; max: number | null }> {
  const r = await db.selectFrom(tableOf(step)).select((eb) => [eb.fn.min('ts').as('min'), eb.fn.max('ts').as('max')]).executeTakeFirst();
  return { min: r?.min === null || r?.min === undefined ? null : Number(r.min), max: r?.max === null || r?.max === undefined ? null : Number(r.max) };
}

/** Replaces the points at `step` in [from, to) by `rows` (the rollup: recomputing a bucket is harmless). */
export async function replacePointsAnyOrg(db: Db, step: number, from: number, to: number, rows: NewPoint[]): Promise<void> {
  await db.deleteFrom(tableOf(step)).where('ts', '>=', from).where('ts', '<', to).execute();
  await insertPoints(db, rows);
}

/** Deletes the points at `step` older than `before`; answers how many. */
export async function prunePointsAnyOrg(db: Db, step: number, before: number): Promise<number> {
  const r = await db.deleteFrom(tableOf(step)).where('ts', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}
