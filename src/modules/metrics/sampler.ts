/**
 * The sampler (issue 38 point 1): every BERTH_METRICS_INTERVAL_SECONDS it reads each app's and managed
 * service's counters (usage.ts: the box's cgroup and veth) and the edge's requests per app since the
 * last sample (request-stats.ts), and writes one 10 s point per target. Every instance samples what it
 * runs; the edge that served a request counts it.
 */
import type { AppContext } from '../../context.js';
import type { RequestSummary } from '../../edge/request-stats.js';
import { isPreviewApp, projectOfAppKey } from '../../runtime/app-key.js';
import type { UsageCounters, UsageTarget } from '../../runtime/usage.js';
import { hostReads } from '../projects/index.js';
import * as store from './metrics.store.js';
import type { NewPoint } from './metrics.store.js';

/** The finest step points are kept at (seconds), whatever the sampling interval. */
export const RAW_STEP = 10;

type Usage = Pick<NewPoint, 'cpuMilli' | 'memBytes' | 'netRx' | 'netTx' | 'diskRead' | 'diskWrite'>;

/** Per second since the last reading; null without one, or when the counter went back (a new box). */
function rate(now: number | null, before: number | null | undefined, seconds: number): number | null {
  if (now === null || before === null || before === undefined || now < before || seconds <= 0) return null;
  return Math.round((now - before) / seconds);
}

function usageOf(c: UsageCounters, last: { at: number; counters: UsageCounters } | undefined, at: number): Usage {
  const secs = last ? (at - last.at) / 1000 : 0;
  const p = last?.counters;
  const cpuUsecPerSec = rate(c.cpuUsec, p?.cpuUsec, secs);
  return {
    // microseconds of CPU per second / 1000: thousandths of a core.
    cpuMilli: cpuUsecPerSec === null ? null : Math.round(cpuUsecPerSec / 1000),
    memBytes: c.memoryBytes,
    netRx: rate(c.netRxBytes, p?.netRxBytes, secs),
    netTx: rate(c.netTxBytes, p?.netTxBytes, secs),
    diskRead: rate(c.diskReadBytes, p?.diskReadBytes, secs),
    diskWrite: rate(c.diskWriteBytes, p?.diskWriteBytes, secs),
  };
}

function requestsOf(r: RequestSummary): Omit<NewPoint, 'targetId' | 'step' | 'ts'> {
  const us = (ms: number | null) => (ms === null ? null : Math.round(ms * 1000));
  return { req1xx: r.classes[0], req2xx: r.classes[1], req3xx: r.classes[2], req4xx: r.classes[3], req5xx: r.classes[4], respBytes: r.bytes, p50Us: us(r.p50), p95Us: us(r.p95), p99Us: us(r.p99) };
}

async function targetId(ctx: AppContext, t: Pick<UsageTarget, 'kind' | 'name' | 'orgId' | 'projectId' | 'label'>): Promise<number> {
  const key = `${t.kind}:${t.name}`;
  const known = ctx.state.metrics.ids.get(key);
  if (known !== undefined) return known;
  const id = await store.ensureTarget(ctx.db, { kind: t.kind, name: t.name, orgId: t.orgId, projectId: t.projectId, label: t.label });
  ctx.state.metrics.ids.set(key, id);
  return id;
}

/** The targets running on this server now: its apps and what other areas list (managed services). */
function targetsNow(ctx: AppContext): UsageTarget[] {
  const apps = ctx.ports.runtimeHost?.supervisor.usageTargets() ?? [];
  return [...apps, ...(ctx.ports.usageSources ?? []).flatMap((source) => source())];
}

/** One sample of every target; answers how many points it wrote. */
export async function sampleOnce(ctx: AppContext): Promise<number> {
  const at = ctx.clock.now();
  const ts = Math.floor(at / 1000);
  const state = ctx.state.metrics;
  await ctx.ports.runtimeHost?.edgeRecorded();
  const requests = ctx.ports.runtimeHost?.requests.stats.drain() ?? new Map<string, RequestSummary>();
  const rows: NewPoint[] = [];
  const seen = new Set<string>();
  for (const t of targetsNow(ctx)) {
    const key = `${t.kind}:${t.name}`;
    seen.add(key);
    const counters = await Promise.resolve(t.usage()).catch(() => null);
    if (!counters) continue;
    const usage = usageOf(counters, state.last.get(key), at);
    state.last.set(key, { at, counters });
    const req = t.kind === 'app' ? requests.get(t.name) : undefined;
    if (req) requests.delete(t.name);
    rows.push({ targetId: await targetId(ctx, t), step: RAW_STEP, ts, ...usage, ...(req ? requestsOf(req) : {}) });
  }
  // Requests of apps that run nowhere here now (static sites, an app that just went to sleep).
  for (const [app, req] of requests) {
    const projectId = projectOfAppKey(app);
    const owner = await hostReads.projectOrgAnyOrg(ctx.db, projectId);
    if (!owner) continue;
    const id = await targetId(ctx, { kind: 'app', name: app, orgId: owner.orgId, projectId, label: isPreviewApp(app) ? 'preview' : 'production' });
    rows.push({ targetId: id, step: RAW_STEP, ts, ...requestsOf(req) });
  }
  // Readings of targets that stopped are dropped (a new box starts its counters over).
  for (const key of state.last.keys()) if (!seen.has(key)) state.last.delete(key);
  try {
    await store.insertPoints(ctx.db, rows);
  } catch (e) {
    // A target may have gone with its project (deleted meanwhile): look every id up again next time.
    state.ids.clear();
    throw e;
  }
  return rows.length;
}

/** Starts sampling every BERTH_METRICS_INTERVAL_SECONDS (0: never). */
export function startSampler(ctx: AppContext): void {
  const every = ctx.config.metricsIntervalSeconds;
  const state = ctx.state.metrics;
  if (every <= 0 || state.timer) return;
  state.timer = setInterval(() => {
    if (state.running) return;
    state.running = sampleOnce(ctx)
      .catch((err) => ctx.log.warn({ err: (err as Error).message }, 'metrics: a sample failed'))
      .then(() => {
        state.running = null;
      });
  }, every * 1000);
  state.timer.unref();
}

export async function stopSampler(ctx: AppContext): Promise<void> {
  const state = ctx.state.metrics;
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
  await state.running;
}
