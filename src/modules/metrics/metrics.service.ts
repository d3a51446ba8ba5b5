/**
 * Reading metrics (contract section 20): a project's series over a range at one step, and the latest
 * point of every target of an org in the Prometheus text format (prometheus.ts).
 */
import type { AppContext } from '../../context.js';
import type { Actor } from '../../authz/actor.js';
import { AppError } from '../../lib/errors.js';
import { listProjects } from '../projects/index.js';
import type { ProjectRow } from '../projects/index.js';
import * as store from './metrics.store.js';
import { TIERS } from './rollup.js';
import { RAW_STEP } from './sampler.js';
import { exposition } from './prometheus.js';
import { seriesOf, type MetricsAnswer } from './metrics.presenters.js';

/** The most points one answer carries per target. */
export const MAX_POINTS = 2000;

export interface RangeQuery {
  from?: string;
  to?: string;
  step?: number;
}

function time(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value);
  if (!Number.isFinite(ms)) throw new AppError('VALIDATION_FAILED', `${field} must be an ISO 8601 time or epoch seconds`, { field });
  return Math.floor(ms / 1000);
}

/** The range asked for, checked: `from` before `to`, inside what is kept at `step` (default: the finest that is). */
export function checkRange(q: RangeQuery, nowS: number): { from: number; to: number; step: number } {
  const to = time(q.to, 'to', nowS);
  const from = time(q.from, 'from', to - 3600);
  if (from >= to) throw new AppError('VALIDATION_FAILED', 'from must be before to', { field: 'from' });
  const oldest = TIERS[TIERS.length - 1]!;
  if (from < nowS - oldest.keep) throw new AppError('VALIDATION_FAILED', `from must be within the last ${oldest.keep / 86400} days (metrics are kept that long)`, { field: 'from' });
  if (q.step !== undefined) {
    const tier = TIERS.find((t) => t.step === q.step);
    if (!tier) throw new AppError('VALIDATION_FAILED', `step must be one of ${TIERS.map((t) => t.step).join(', ')} (seconds)`, { field: 'step' });
    if (from < nowS - tier.keep) throw new AppError('VALIDATION_FAILED', `${tier.step} s points are kept for ${tier.keep / 3600} hours: ask for a larger step or a later from`, { field: 'step' });
    if ((to - from) / tier.step > MAX_POINTS) throw new AppError('VALIDATION_FAILED', `at most ${MAX_POINTS} points per series: ask for a larger step or a shorter range`, { field: 'step' });
    return { from, to, step: tier.step };
  }
  const tier = TIERS.find((t) => from >= nowS - t.keep && (to - from) / t.step <= MAX_POINTS) ?? oldest;
  if ((to - from) / tier.step > MAX_POINTS) throw new AppError('VALIDATION_FAILED', 'the range is too long', { field: 'from' });
  return { from, to, step: tier.step };
}

export async function projectMetrics(ctx: AppContext, project: ProjectRow, q: RangeQuery): Promise<MetricsAnswer> {
  const range = checkRange(q, Math.floor(ctx.clock.now() / 1000));
  const targets = await store.targetsOfProject(ctx.db, project.orgId, project.id);
  const points = await store.pointsOf(ctx.db, project.orgId, targets.map((t) => t.id), range.step, range.from, range.to);
  return { from: new Date(range.from * 1000).toISOString(), to: new Date(range.to * 1000).toISOString(), step: range.step, series: seriesOf(targets, points) };
}

/**
 * The org's latest 10 s point of each target (within the last minute) in the Prometheus text format,
 * labelled by project (id and slug), target kind and name. The route took `audit:read` of the token;
 * the projects are those its member may read (all of them for owners and admins).
 */
export async function prometheusText(ctx: AppContext, actor: Actor): Promise<string> {
  const nowS = Math.floor(ctx.clock.now() / 1000);
  const projects = new Map((await listProjects(ctx, { ...actor, scopes: null })).map((p) => [p.id, p]));
  const targets = (await store.targetsOfOrg(ctx.db, actor.orgId)).filter((t) => projects.has(t.projectId));
  const points = await store.pointsOf(ctx.db, actor.orgId, targets.map((t) => t.id), RAW_STEP, nowS - 60, nowS + 1);
  const latest = new Map<number, store.PointRow>();
  for (const p of points) latest.set(p.targetId, p);
  return exposition(
    targets.flatMap((t) => {
      const p = latest.get(t.id);
      return p ? [{ target: t, project: projects.get(t.projectId)!, point: p }] : [];
    }),
  );
}
