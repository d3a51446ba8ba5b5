/**
 * Bench harness: start servers as child processes, drive them with a fixed number of keep-alive
 * connections for a fixed time, and report requests/s, p50/p99 and ratios against a reference
 * measured in the same run. Never used by tests: figures are printed, not asserted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

export interface LoadOptions {
  url: string;
  path: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationMs?: number;
  warmupMs?: number;
  /** Expected status (others count as errors). */
  expect?: number;
}

/** The `p`th percentile of sorted values (NaN for none). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Closed-loop load: `connections` workers, each sending the next request when the last answered. */
export async function load(opts: LoadOptions): Promise<LoadResult> {
  const connections = opts.connections ?? 32;
  const pool = new Pool(opts.url, { connections, pipelining: 1 });
  const run = async (ms: number, record: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const end = Date.now() + ms;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < end) {
          const t0 = process.hrtime.bigint();
          try {
            const res = await pool.request({ path: opts.path, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body });
            await res.body.dump();
            if (opts.expect !== undefined && res.statusCode !== opts.expect) errors++;
          } catch {
            errors++;
          }
          if (record) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    return { latencies, errors };
  };
  await run(opts.warmupMs ?? 1000, false);
  const t0 = Date.now();
  const { latencies, errors } = await run(opts.durationMs ?? 5000, true);
  const elapsed = (Date.now() - t0) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, rps: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export interface Child {
  proc: ChildProcess;
  /** The first JSON line the child printed on stdout. */
  info: any;
  stop(): Promise<void>;
}

/**
 * The node flags of `npm start` (package.json scripts.start: the `--` words between `node` and the
 * script), so that benches run Berth exactly as users start it. The reference servers get the same.
 */
export function startFlags(): string[] {
  // For experiments: BENCH_NODE_FLAGS="--flag ..." replaces them (an empty value: no flags).
  if (process.env.BENCH_NODE_FLAGS !== undefined) return process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean);
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/);
  const out: string[] = [];
  for (const w of words.slice(words.indexOf('node') + 1)) {
    if (!w.startsWith('--')) break;
    out.push(w);
  }
  return out;
}

/** The servers this bench process started and has not seen exit (stopped when it exits: `stopOnExit`). */
const liveChildren = new Map<ChildProcess, NodeJS.Signals>();
let exitHooked = false;

/**
 * Sends `signal` to `proc` if this bench process exits while it still runs: an interrupted run (^C, a
 * `timeout`, a crash such as a closed stderr) would otherwise leave Berth, its app and nginx running.
 */
export function stopOnExit(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const [p, sig] of liveChildren) if (p.exitCode === null && p.signalCode === null) p.kill(sig);
    });
    // A signal ends the process without 'exit' unless it is handled.
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => process.exit(128 + os.constants.signals[sig]));
  }
  liveChildren.set(proc, signal);
  proc.once('exit', () => liveChildren.delete(proc));
}

/**
 * Runs a server script under plain node with the flags of `npm start` (the scripts import the
 * compiled `dist/`; `npm run bench` builds it first) and waits for its first JSON line on stdout.
 * BENCH_CHILD_OUT=PREFIX keeps each child's whole stdout in `PREFIX.<pid>` (`--trace-gc` in BENCH_NODE_FLAGS).
 */
export function startChild(file: string, env: Record<string, string> = {}, timeoutMs = 30000): Promise<Child> {
  return new Promise((resolve, reject) => {
    const args = [...startFlags(), file];
    const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    stopOnExit(proc, 'SIGTERM');
    let buf = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${file} did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    let started = false;
    proc.stdout!.on('data', (d: Buffer) => {
      if (process.env.BENCH_CHILD_OUT) appendFileSync(`${process.env.BENCH_CHILD_OUT}.${proc.pid}`, d);
      if (started) return;
      buf += d.toString();
      // The first JSON line that is not a log line (pino's carry `level`) describes the child.
      let nl: number;
      let info: any = null;
      while (!info && (nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const v = JSON.parse(line);
          if (v && typeof v === 'object' && !('level' in v)) info = v;
        } catch {
          /* not JSON */
        }
      }
      if (info) {
        started = true;
        clearTimeout(timer);
        resolve({
          proc,
          info,
          stop: () =>
            new Promise<void>((r) => {
              if (proc.exitCode !== null) return r();
              proc.once('exit', () => r());
              proc.kill('SIGTERM');
              setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
            }),
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited with ${code} before it was ready`));
    });
  });
}

/** Resident set size of a process in MB (Linux /proc). */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return NaN;
  }
}

/**
 * The process's peak RSS from now on. Linux keeps the true peak (VmHWM); it is reset here by writing
 * 5 to /proc/<pid>/clear_refs, so a spike shorter than any sampling interval still counts. Where
 * that reset is refused the peak is sampled every `everyMs` instead (and may miss short spikes).
 */
export function sampleRss(pid: number, everyMs = 50): { stop(): number; peek(): number; exact: boolean } {
  let exact = false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    exact = true;
  } catch {
    exact = false;
  }
  let peak = rssMb(pid);
  const t = setInterval(() => {
    const v = rssMb(pid);
    if (v > peak) peak = v;
  }, everyMs);
  const current = () => {
    if (exact) {
      const hwm = hwmMb(pid);
      if (Number.isFinite(hwm)) peak = Math.max(peak, hwm);
    }
    return peak;
  };
  return {
    exact,
    /** The peak so far, still sampling. */
    peek: current,
    stop() {
      clearInterval(t);
      return current();
    },
  };
}

function hwmMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

export interface Row {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  reference?: number;
  ratio?: number;
  target?: string;
  ok?: boolean;
}

export function fmt(n: number | undefined, digits = 2): string {
  if (n === undefined || Number.isNaN(n)) return '-';
  return n >= 100 ? n.toFixed(0) : n.toFixed(digits);
}

export function printRows(rows: Row[]): void {
  const header = ['bench', 'metric', 'value', 'reference', 'ratio', 'target', 'ok'];
  const lines = rows.map((r) => [r.bench, r.metric, `${fmt(r.value)} ${r.unit}`, r.reference === undefined ? '-' : `${fmt(r.reference)} ${r.unit}`, fmt(r.ratio), r.target ?? '-', r.ok === undefined ? '-' : r.ok ? 'yes' : 'NO']);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(line(l));
}

export type Bench = () => Promise<Row[]>;

/** CPU time (user + system) a process has used, in ms (Linux /proc). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * Waits until the process has been idle (under `maxMs` of CPU in each of two 250 ms windows in a row),
 * at most `timeoutMs`; answers how long it waited. Berth's start goes on after it answers (the sandbox
 * runtime's reclaim, its spare network namespaces, the host firewall's rules: spawned programs); on a
 * loaded machine that ran into the first measured round (docs/benchmarks.md, 2026-11-29 21:00).
 */
export async function waitIdle(pid: number, maxMs = 10, timeoutMs = 20_000): Promise<number> {
  const t0 = Date.now();
  let quiet = 0;
  let last = cpuMs(pid);
  while (quiet < 2 && Date.now() - t0 < timeoutMs) {
    await new Promise((r) => setTimeout(r, 250));
    const now = cpuMs(pid);
    quiet = now - last <= maxMs ? quiet + 1 : 0;
    last = now;
  }
  return Date.now() - t0;
}

export interface RoundsResult {
  /** Median over the rounds of each target's req/s, p50 and p99, and its server's CPU per request (µs). */
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerRequest: number;
  /** The load generator's (this process's) CPU over the rounds' wall time, in cores: near 1 when it was the bound. */
  clientCores: number;
  errors: number;
  /** Per round: req/s over the reference's req/s of the same round. */
  ratios: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * `rounds` rounds; in each, the reference and then every target get the same closed-loop load, back
 * to back, so each round's ratio compares figures taken seconds apart (the machine's speed moves
 * over minutes: docs/benchmarks.md, "Machine"). Unpinned, as these rows have always been measured:
 * pinned apart, the load generator (about as much CPU a request as the servers) would be the bound of
 * the reference's rounds (bench/pin.ts; h2load's rounds are pinned). Answers per target the medians
 * over the rounds, the load generator's cores, and the per-round ratios against the reference (the
 * first entry, whose ratios are all 1).
 */
export async function alternateRounds(targets: { pid: number; opts: LoadOptions }[], rounds = 3): Promise<RoundsResult[]> {
  const per = targets.map(() => ({ rps: [] as number[], p50: [] as number[], p99: [] as number[], cpu: [] as number[], client: [] as number[], errors: 0 }));
  for (let r = 0; r < rounds; r++) {
    for (const [i, t] of targets.entries()) {
      const before = cpuMs(t.pid);
      const own = process.cpuUsage();
      const t0 = Date.now();
      const res = await load(t.opts);
      // The CPU of the warm-up is included: per request over warm-up and measurement alike.
      const warm = (t.opts.warmupMs ?? 1000) / 1000;
      const cpu = ((cpuMs(t.pid) - before) * 1000) / (res.requests + res.rps * warm);
      const used = process.cpuUsage(own);
      per[i]!.rps.push(res.rps);
      per[i]!.p50.push(res.p50);
      per[i]!.p99.push(res.p99);
      per[i]!.cpu.push(cpu);
      per[i]!.client.push((used.user + used.system) / 1000 / (Date.now() - t0));
      per[i]!.errors += res.errors;
    }
  }
  return per.map((p) => ({ rps: median(p.rps), p50: median(p.p50), p99: median(p.p99), cpuUsPerRequest: median(p.cpu), clientCores: median(p.client), errors: p.errors, ratios: p.rps.map((v, r) => v / per[0]!.rps[r]!) }));
}
