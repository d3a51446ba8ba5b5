/**
 * SQL of the metrics area: targets (scoped by org) and their points. The sampler writes points of
 * the targets this server runs; the rollup and prune job (rollup.ts) works across orgs by design
 * (`...AnyOrg`), as a system task that answers nobody.
 */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg, inProject } from '../../db/scope.js';
import type { MetricPointsTable, MetricTargetsTable } from './metrics.tables.js';

export type TargetRow = Selectable<MetricTargetsTable>;
export type PointRow = Selectable<MetricPointsTable>;
export type NewPoint = Insertable<MetricPointsTable>;

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
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db.insertInto('metricPoints').values(rows.slice(i, i + CHUNK)).onConflict((oc) => oc.columns(['targetId', 'step', 'ts']).doNothing()).execute();
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
  return db
    .selectFrom('metricPoints')
    .innerJoin('metricTargets', 'metricTargets.id', 'metricPoints.targetId')
    .selectAll('metricPoints')
    .where(inOrg(orgId, 'metricTargets'))
    .where('metricPoints.targetId', 'in', targetIds)
    .where('metricPoints.step', '=', step)
    .where('metricPoints.ts', '>=', from)
    .where('metricPoints.ts', '<', to)
    .orderBy('metricPoints.targetId')
    .orderBy('metricPoints.ts')
    .execute();
}

/** Every target's points at `step` in [from, to): the rollup's input (all orgs). */
export async function pointsAnyOrg(db: Db, step: number, from: number, to: number): Promise<PointRow[]> {
  return db.selectFrom('metricPoints').selectAll().where('step', '=', step).where('ts', '>=', from).where('ts', '<', to).orderBy('targetId').orderBy('ts').execute();
}

/** The newest and oldest bucket at `step` (all orgs). */
export async function spanAnyOrg(db: Db, step: number): Promise<{ min: number | null; max: number | null }> {
  const r = await db.selectFrom('metricPoints').select((eb) => [eb.fn.min('ts').as('min'), eb.fn.max('ts').as('max')]).where('step', '=', step).executeTakeFirst();
  return { min: r?.min === null || r?.min === undefined ? null : Number(r.min), max: r?.max === null || r?.max === undefined ? null : Number(r.max) };
}

/** Replaces the points at `step` in [from, to) by `rows` (the rollup: recomputing a bucket is harmless). */
export async function replacePointsAnyOrg(db: Db, step: number, from: number, to: number, rows: NewPoint[]): Promise<void> {
  await db.deleteFrom('metricPoints').where('step', '=', step).where('ts', '>=', from).where('ts', '<', to).execute();
  await insertPoints(db, rows);
}

/** Deletes the points at `step` older than `before`; answers how many. */
export async function prunePointsAnyOrg(db: Db, step: number, before: number): Promise<number> {
  const r = await db.deleteFrom('metricPoints').where('step', '=', step).where('ts', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}
