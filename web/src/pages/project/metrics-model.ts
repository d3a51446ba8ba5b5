import { useQuery } from '@tanstack/react-query';
import { api, data } from '../../api/client';
import { formatBytes } from '../../ui/controls';
import { PALETTE, type ChartLine } from '../../ui/chart';
import type { paths } from '../../../../src/api-types/schema';

export type MetricsAnswer = paths['/api/projects/{id}/metrics']['get']['responses'][200]['content']['application/json']['data'];
type Series = MetricsAnswer['series'][number];
type Column = Exclude<keyof Series, 'kind' | 'target' | 'name' | 'ts'>;

/** The ranges a page offers: 1 h (10 s points), 24 h (1 min), 7 d (1 h); the server picks the step. */
export const RANGES = [
  { key: '1h', label: '1 hour', seconds: 3600, refreshMs: 10_000 },
  { key: '24h', label: '24 hours', seconds: 86_400, refreshMs: 60_000 },
  { key: '7d', label: '7 days', seconds: 7 * 86_400, refreshMs: 300_000 },
] as const;
export type RangeKey = (typeof RANGES)[number]['key'];

/** A project's metrics over the last `range`, refreshed as often as new points can come. */
export function useMetrics(projectId: string, range: RangeKey) {
  const r = RANGES.find((x) => x.key === range)!;
  return useQuery({
    queryKey: ['project', projectId, 'metrics', range],
    queryFn: () => {
      const to = Math.floor(Date.now() / 1000);
      return data(api.GET('/api/projects/{id}/metrics', { params: { path: { id: projectId }, query: { from: String(to - r.seconds), to: String(to) } } }));
    },
    refetchInterval: r.refreshMs,
    placeholderData: (prev) => prev,
  });
}

/** A chart's data: the times, and one line per target or per measure. */
export interface ChartData {
  x: number[];
  lines: ChartLine[];
}

/**
 * The times of every series together, sorted, with a gap (a time whose values are all null) wherever
 * points stop for more than two steps (an app asleep, a server down): lines break there.
 */
function timesOf(series: Series[], step: number): number[] {
  const all = [...new Set(series.flatMap((s) => s.ts))].sort((a, b) => a - b);
  const out: number[] = [];
  for (const t of all) {
    const prev = out[out.length - 1];
    if (prev !== undefined && t - prev > 2 * step) out.push(prev + step);
    out.push(t);
  }
  return out;
}

/** One series's column on the chart's times (null where it has no point). */
function aligned(x: number[], s: Series, pick: (s: Series, i: number) => number | null): Array<number | null> {
  const at = new Map<number, number>();
  s.ts.forEach((t, i) => at.set(t, i));
  return x.map((t) => {
    const i = at.get(t);
    return i === undefined ? null : pick(s, i);
  });
}

const labelOf = (s: Series) => (s.kind === 'app' ? (s.name === 'production' ? 'app' : `app (${s.name})`) : s.name);

/** The same hue, lighter: a target's second line (sent, beside received). */
function shade(hex: string): string {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c: number) => Math.round(c + (255 - c) * 0.45);
  return `#${[(n >> 16) & 255, (n >> 8) & 255, n & 255].map((c) => mix(c).toString(16).padStart(2, '0')).join('')}`;
}

/**
 * One line per app and service and column, values as they are (CPU, memory; network in and out): a
 * column given as `[column, word]` is named `<target> <word>`, the second one in a lighter shade.
 */
export function perTarget(m: MetricsAnswer, ...parts: Array<Column | [Column, string]>): ChartData {
  const cols = parts.map((p) => (typeof p === 'string' ? { column: p, suffix: '' } : { column: p[0], suffix: ` ${p[1]}` }));
  const withData = m.series.filter((s) => cols.some((c) => s[c.column].some((v) => v !== null)));
  const x = timesOf(withData, m.step);
  const lines = withData.flatMap((s, i) =>
    cols.map((c, k) => {
      const color = PALETTE[i % PALETTE.length]!;
      return { label: labelOf(s) + c.suffix, color: k === 0 ? color : shade(color), values: aligned(x, s, (ss, j) => ss[c.column][j] ?? null) };
    }),
  );
  return { x, lines };
}

/** Seconds between a series's points (its sampling interval at the finest step, else the step). */
function spacingOf(s: Series, step: number): number {
  const d: number[] = [];
  for (let i = 1; i < s.ts.length; i++) {
    const gap = s.ts[i]! - s.ts[i - 1]!;
    if (gap > 0 && gap <= 2 * step) d.push(gap);
  }
  if (!d.length) return step;
  d.sort((a, b) => a - b);
  return d[Math.floor(d.length / 2)]!;
}

const ANY_REQUESTS: Column[] = ['requests1xx', 'requests2xx', 'requests3xx', 'requests4xx', 'requests5xx'];

/** Counts of `columns` per second, summed over the project's apps that served requests in the range (requests by class, errors). */
export function ratesOf(m: MetricsAnswer, columns: Array<{ column: Column; label: string; color: string }>): ChartData {
  const apps = m.series.filter((s) => s.kind === 'app' && ANY_REQUESTS.some((c) => s[c].some((v) => v !== null)));
  const x = timesOf(apps, m.step);
  const lines = columns.map((c) => {
    const values: Array<number | null> = x.map(() => null);
    for (const s of apps) {
      const per = spacingOf(s, m.step);
      // A point without requests is 0 (the app was sampled: none came); no point at all is a gap.
      aligned(x, s, (ss, j) => ss[c.column][j] ?? 0).forEach((v, i) => {
        if (v !== null) values[i] = (values[i] ?? 0) + v / per;
      });
    }
    return { label: c.label, color: c.color, values };
  });
  return { x, lines };
}

/** p50/p95/p99 of the busiest app (the production one, unless a preview answered more). */
export function latencyOf(m: MetricsAnswer): ChartData {
  const total = (s: Series) => s.requests2xx.concat(s.requests3xx, s.requests4xx, s.requests5xx, s.requests1xx).reduce<number>((a, v) => a + (v ?? 0), 0);
  const apps = m.series.filter((s) => s.kind === 'app' && s.latencyP50Ms.some((v) => v !== null)).sort((a, b) => total(b) - total(a));
  const app = apps[0];
  if (!app) return { x: [], lines: [] };
  const x = timesOf([app], m.step);
  const line = (column: Column, label: string, color: string) => ({ label, color, values: aligned(x, app, (s, j) => s[column][j] ?? null) });
  return { x, lines: [line('latencyP50Ms', 'p50', PALETTE[0]!), line('latencyP95Ms', 'p95', PALETTE[1]!), line('latencyP99Ms', 'p99', PALETTE[3]!)] };
}

export const REQUEST_CLASSES: Array<{ column: Column; label: string; color: string }> = [
  { column: 'requests2xx', label: '2xx', color: '#059669' },
  { column: 'requests3xx', label: '3xx', color: '#2563eb' },
  { column: 'requests4xx', label: '4xx', color: '#d97706' },
  { column: 'requests5xx', label: '5xx', color: '#dc2626' },
];
export const ERROR_CLASSES = REQUEST_CLASSES.filter((c) => c.column === 'requests4xx' || c.column === 'requests5xx');

/** How each measure reads on an axis and in words. */
export const FORMAT = {
  cores: (v: number) => (v === 0 ? '0' : v < 0.01 ? `${(v * 1000).toFixed(1)} m` : `${v < 1 ? v.toFixed(2) : v.toFixed(1)} cores`),
  bytes: (v: number) => formatBytes(v),
  bytesPerSecond: (v: number) => `${formatBytes(v)}/s`,
  perSecond: (v: number) => (v === 0 ? '0/s' : v < 1 ? `${v.toFixed(2)}/s` : `${v < 10 ? v.toFixed(1) : Math.round(v)}/s`),
  ms: (v: number) => (v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`),
};

/** Whether a chart's data has a single value to draw. */
export const hasPoints = (c: ChartData) => c.x.length > 0 && c.lines.some((l) => l.values.some((v) => v !== null));
