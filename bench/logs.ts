/**
 * Kept logs (docs/logs.md): a search of one project's kept logs (BERTH_BENCH_LOG_MB, default 1024 MB,
 * written directly in the on-disk format: JSON lines in runtime.log segments) for a text that few lines
 * hold, so the whole of it is read; against `grep -c` of the same text on the same files in the same
 * run (best of three each, the files warm in the page cache). Target: under 2 s, ratio >= 0.5.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LogStore } from '../src/runtime/logs.js';
import { searchLogs } from '../src/runtime/log-search.js';
import type { Row } from './lib.js';

const SEGMENT_BYTES = 16 * 1024 * 1024;
const NEEDLE = 'NEEDLE-7f3a';

/** Writes `mb` MB of runtime log segments; every 200,000th line holds NEEDLE. Answers how many do. */
function writeLogs(dir: string, mb: number): number {
  mkdirSync(dir, { recursive: true });
  const t0 = Date.now() - 3 * 86_400_000;
  let n = 0;
  let needles = 0;
  const segments = Math.max(1, Math.round((mb * 1024 * 1024) / SEGMENT_BYTES));
  for (let s = 0; s < segments; s++) {
    const parts: string[] = [];
    let size = 0;
    while (size < SEGMENT_BYTES) {
      const ts = new Date(t0 + n * 20).toISOString();
      const hit = n % 200_000 === 99_999;
      if (hit) needles++;
      const line = `{"ts":"${ts}","stream":"${n % 9 ? 'stdout' : 'stderr'}","line":"GET /api/items/${n % 5000} served in ${n % 97}ms user=${n % 313} ${hit ? NEEDLE : 'ok'} request-id=${(n * 2654435761) % 4294967296}"}\n`;
      parts.push(line);
      size += line.length;
      n++;
    }
    const stamp = new Date(t0 + n * 20).toISOString().replace(/[-:.]/g, '');
    writeFileSync(path.join(dir, `runtime.log.${stamp}`), parts.join(''));
  }
  return needles;
}

function best(fn: () => void): number {
  let min = Infinity;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    fn();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}

export async function logsBench(): Promise<Row[]> {
  const mb = Number(process.env.BERTH_BENCH_LOG_MB ?? 1024);
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-logs-'));
  try {
    const store = new LogStore(root);
    const dir = store.dirOf('bench');
    const needles = writeLogs(dir, mb);
    const files = readdirSync(dir).map((f) => path.join(dir, f));
    const grepCount = () => execFileSync('grep', ['-c', '-F', NEEDLE, ...files], { maxBuffer: 1 << 24 }).toString();
    grepCount();
    const grepMs = best(grepCount);
    let found = 0;
    const search = async () => {
      const page = await searchLogs({ dir, buildDir: null, sources: ['runtime'], fds: null, q: NEEDLE, limit: 200 });
      found = page.lines.length;
    };
    let searchMs = Infinity;
    let cpuMs = Infinity;
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const c = process.cpuUsage();
      await search();
      const used = process.cpuUsage(c);
      cpuMs = Math.min(cpuMs, (used.user + used.system) / 1000);
      searchMs = Math.min(searchMs, performance.now() - t);
    }
    if (found !== needles) throw new Error(`the search found ${found} lines, ${needles} hold the text`);
    return [
      { bench: 'logs', metric: `search of ${mb} MB kept logs (${needles} hits)`, value: searchMs, unit: 'ms', reference: grepMs, ratio: grepMs / searchMs, target: '< 2000 ms, ratio >= 0.5 vs grep -c', ok: searchMs < 2000 && grepMs / searchMs >= 0.5 },
      { bench: 'logs', metric: 'the search\'s own CPU time', value: cpuMs, unit: 'ms' },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
