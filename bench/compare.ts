/**
 * The regression guard (issue 36): a bench run is saved as JSON (`--save FILE`, and always to
 * `bench/runs/latest.json`), and `--compare FILE` lines a run up against an earlier run of the same
 * machine and names every figure that moved by more than 15 %.
 *
 * What is compared: a row's `ratio` when it has one (a ratio against a reference measured in the same
 * run says little about how busy the machine was), else its `value`. Rows are matched by bench and
 * metric; a row only one run has is listed as new or gone.
 */
import type { Row } from './lib.js';

export interface SavedRun {
  /** ISO time the run ended. */
  at: string;
  /** The commit the run measured (`git rev-parse HEAD`), when known. */
  commit?: string;
  /** The machine's 1-minute load average when the run began and ended, for the reader. */
  load?: { start: number; end: number };
  /** Per bench, how fast each vCPU ran a fixed loop at its start and end, against the fastest (bench/pin.ts). */
  vcpus?: Record<string, { start: string | null; end: string | null }>;
  rows: Row[];
}

export interface Moved {
  bench: string;
  metric: string;
  /** `ratio` or `value`: which figure moved. */
  figure: 'ratio' | 'value';
  before: number;
  after: number;
  /** after / before - 1, e.g. -0.2 for 20 % lower. */
  change: number;
  /** Whether the move is for the better, when the row says which way is better. */
  verdict: 'better' | 'worse' | 'unknown';
}

export interface Comparison {
  moved: Moved[];
  added: string[];
  gone: string[];
  /** Rows compared (present in both runs with a finite figure). */
  compared: number;
}

export const THRESHOLD = 0.15;

const LOWER_IS_BETTER_UNITS = new Set(['ms', 's', 'µs', 'MB', 'KB', 'MiB']);
const HIGHER_IS_BETTER_UNITS = new Set(['req/s', '/s', '/cpu-s', 'MB/s', 'MiB/s']);

const key = (r: Row) => `${r.bench} · ${r.metric}`;

/**
 * Which way is better for the compared figure. A target on the ratio itself (">= 0.9", "<= 1.02",
 * ">= 0.5 x nginx") says it; otherwise the unit does (a ratio of latencies against a reference is
 * better lower, like the latency).
 */
function direction(r: Row, figure: 'ratio' | 'value', earlier: Row): 'higher' | 'lower' | undefined {
  const ratioTarget = /^(>=?|<=?)\s*[\d.]+\s*(x\b|$)/.exec(r.target?.trim() ?? '');
  if (figure === 'ratio' && ratioTarget) return ratioTarget[1]!.startsWith('>') ? 'higher' : 'lower';
  const byUnit = LOWER_IS_BETTER_UNITS.has(r.unit) ? 'lower' : HIGHER_IS_BETTER_UNITS.has(r.unit) ? 'higher' : undefined;
  if (figure === 'value' || byUnit === undefined) return byUnit;
  // A ratio written reference / value (e.g. listing / scanning) runs the other way from the unit.
  // Told apart on whichever run's value differs from its reference.
  const distance = (x: Row) => (x.reference === undefined || x.value === 0 ? 0 : Math.abs(x.ratio! - x.value / x.reference) - Math.abs(x.ratio! - x.reference / x.value));
  const d = Math.abs(distance(r)) >= Math.abs(distance(earlier)) ? distance(r) : distance(earlier);
  return d > 0 ? (byUnit === 'lower' ? 'higher' : 'lower') : byUnit;
}

export function compareRuns(before: Row[], after: Row[], threshold = THRESHOLD): Comparison {
  const old = new Map(before.map((r) => [key(r), r]));
  const now = new Map(after.map((r) => [key(r), r]));
  const moved: Moved[] = [];
  let compared = 0;
  for (const [k, a] of now) {
    const b = old.get(k);
    if (!b) continue;
    const figure: 'ratio' | 'value' = Number.isFinite(a.ratio) && Number.isFinite(b.ratio) ? 'ratio' : 'value';
    const x = figure === 'ratio' ? b.ratio! : b.value;
    const y = figure === 'ratio' ? a.ratio! : a.value;
    if (!Number.isFinite(x) || !Number.isFinite(y) || x === 0) continue;
    compared++;
    const change = y / x - 1;
    if (Math.abs(change) <= threshold) continue;
    const dir = direction(a, figure, b);
    const verdict = dir === undefined ? 'unknown' : (dir === 'higher') === change > 0 ? 'better' : 'worse';
    moved.push({ bench: a.bench, metric: a.metric, figure, before: x, after: y, change, verdict });
  }
  const added = [...now.keys()].filter((k) => !old.has(k));
  const gone = [...old.keys()].filter((k) => !now.has(k));
  return { moved, added, gone, compared };
}

export function formatComparison(c: Comparison, earlier: SavedRun): string {
  const out: string[] = [];
  const load = earlier.load ? `, load ${earlier.load.start.toFixed(1)}-${earlier.load.end.toFixed(1)}` : '';
  out.push(`compared with the run of ${earlier.at}${earlier.commit ? ` (${earlier.commit.slice(0, 8)})` : ''}${load}: ${c.compared} figures`);
  if (c.moved.length === 0) out.push(`none moved by more than ${THRESHOLD * 100} %`);
  for (const m of c.moved) {
    const pct = `${m.change > 0 ? '+' : ''}${(m.change * 100).toFixed(0)} %`;
    out.push(`  ${m.verdict === 'worse' ? 'WORSE ' : m.verdict === 'better' ? 'better' : 'moved '}  ${m.bench} · ${m.metric}: ${m.figure} ${fmt(m.before)} -> ${fmt(m.after)} (${pct})`);
  }
  for (const k of c.added) out.push(`  new     ${k}`);
  for (const k of c.gone) out.push(`  gone    ${k}`);
  return out.join('\n');
}

function fmt(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2);
}
