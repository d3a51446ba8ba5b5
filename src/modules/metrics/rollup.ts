/**
 * Downsampling and retention (issue 38 point 1): 10 s points are kept 24 h, 1 min points 7 days, 1 h
 * points 90 days. Every minute (the scheduler's leader) each finished minute is made from its 10 s
 * points and each finished hour from its minutes; then what is past its retention goes. A bucket is
 * recomputed whole (delete and insert), so running twice, or after a restart, changes nothing.
 */
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import * as store from './metrics.store.js';
import type { NewPoint, PointRow } from './metrics.store.js';
import { RAW_STEP } from './sampler.js';

/** Each step and how long its points are kept (seconds). */
export const TIERS = [
  { step: RAW_STEP, keep: 24 * 3600 },
  { step: 60, keep: 7 * 24 * 3600 },
  { step: 3600, keep: 90 * 24 * 3600 },
] as const;

const USAGE = ['cpuMilli', 'memBytes', 'netRx', 'netTx', 'diskRead', 'diskWrite'] as const;
const SUMS = ['req1xx', 'req2xx', 'req3xx', 'req4xx', 'req5xx', 'respBytes'] as const;

const requestsIn = (p: PointRow) => (p.req1xx ?? 0) + (p.req2xx ?? 0) + (p.req3xx ?? 0) + (p.req4xx ?? 0) + (p.req5xx ?? 0);

/**
 * One coarser point from finer ones: usage is the mean of the points that measured it, counts and
 * bytes are sums, p50 the request-weighted mean of the finer p50s, and p95 and p99 the largest finer
 * value (percentiles do not combine exactly: this errs toward the slow side).
 */
export function combine(targetId: number, step: number, ts: number, points: PointRow[]): NewPoint {
  const out: NewPoint = { targetId, step, ts };
  for (const k of USAGE) {
    let sum = 0;
    let n = 0;
    for (const p of points) {
      const v = p[k];
      if (v !== null) {
        sum += Number(v);
        n++;
      }
    }
    out[k] = n ? Math.round(sum / n) : null;
  }
  for (const k of SUMS) {
    const vals = points.map((p) => p[k]).filter((v): v is number => v !== null);
    out[k] = vals.length ? vals.reduce((a, b) => a + Number(b), 0) : null;
  }
  let weighted = 0;
  let weight = 0;
  let p95: number | null = null;
  let p99: number | null = null;
  for (const p of points) {
    const n = requestsIn(p);
    if (p.p50Us !== null && n > 0) {
      weighted += Number(p.p50Us) * n;
      weight += n;
    }
    if (p.p95Us !== null) p95 = Math.max(p95 ?? 0, Number(p.p95Us));
    if (p.p99Us !== null) p99 = Math.max(p99 ?? 0, Number(p.p99Us));
  }
  out.p50Us = weight ? Math.round(weighted / weight) : null;
  out.p95Us = p95;
  out.p99Us = p99;
  return out;
}

/** Makes the finished `coarse` buckets from the `fine` points since the last one made. */
async function rollTier(ctx: AppContext, fine: number, coarse: number, keepFine: number, nowS: number): Promise<number> {
  const end = Math.floor(nowS / coarse) * coarse;
  const { max } = await store.spanAnyOrg(ctx.db, coarse);
  let start = max ?? (await store.spanAnyOrg(ctx.db, fine)).min;
  if (start === null) return 0;
  start = Math.max(Math.floor(start / coarse) * coarse, Math.floor((nowS - keepFine) / coarse) * coarse);
  if (start >= end) return 0;
  const points = await store.pointsAnyOrg(ctx.db, fine, start, end);
  const groups = new Map<string, PointRow[]>();
  for (const p of points) {
    const bucket = Math.floor(Number(p.ts) / coarse) * coarse;
    const key = `${p.targetId}:${bucket}`;
    const g = groups.get(key);
    if (g) g.push(p);
    else groups.set(key, [p]);
  }
  const rows = [...groups.entries()].map(([key, g]) => {
    const [target, bucket] = key.split(':').map(Number) as [number, number];
    return combine(target, coarse, bucket, g);
  });
  await transaction(ctx.db, (tx) => store.replacePointsAnyOrg(tx, coarse, start, end, rows));
  return rows.length;
}

/** Rolls every tier up and prunes every tier; answers the points made and deleted. */
export async function rollupAndPrune(ctx: AppContext): Promise<{ made: number; pruned: number }> {
  const nowS = Math.floor(ctx.clock.now() / 1000);
  let made = 0;
  for (let i = 1; i < TIERS.length; i++) made += await rollTier(ctx, TIERS[i - 1]!.step, TIERS[i]!.step, TIERS[i - 1]!.keep, nowS);
  let pruned = 0;
  for (const t of TIERS) pruned += await store.prunePointsAnyOrg(ctx.db, t.step, nowS - t.keep);
  return { made, pruned };
}
