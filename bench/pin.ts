/**
 * Pinned rounds (docs/benchmarks.md, "Figures of 2026-12-02 03:40-04:55 UTC"): on the machines these
 * benches run on, one vCPU can run the same code at half the other's speed for seconds to minutes,
 * and the guest is not told (no steal time in /proc/stat; the same work's CPU time per request
 * doubles). It is work that uses the caches and memory that slows: a loop of arithmetic runs at the
 * same speed on both vCPUs meanwhile, a walk over a 4 MiB table at 0.3-0.6 on one ("2026-12-02
 * 09:40-10:10"; `vcpuSpeeds` below measures it). Two servers measured back to back landed on
 * different vCPUs as the scheduler pleased, so a round's ratio compared two vCPUs as much as two
 * servers (0.44 to 1.20 in one run). While a
 * comparison's rounds run, its servers (every thread) share one CPU and this process (the load
 * generator, and the h2load it spawns, which inherits its affinity) runs on the others: both sides
 * of a round get the same vCPU, and the load generator never takes the servers' core.
 * BENCH_PIN=0, a machine with one CPU, or no `taskset` (util-linux): unpinned. BENCH_PIN_CPU=N puts
 * the servers on CPU N instead of the first (to compare on the vCPU that is fast at the time).
 */
import { spawnSync } from 'node:child_process';

export interface PinPlan {
  /** The CPU list the servers run on (taskset's `-c` syntax). */
  servers: string;
  /** The CPU list the load generator runs on. */
  client: string;
}

/** Which CPUs get what, from the CPUs this process may use; null when pinning is off or pointless. */
export function pinPlan(cpus: number[], env: NodeJS.ProcessEnv = process.env): PinPlan | null {
  if (env.BENCH_PIN === '0' || cpus.length < 2) return null;
  const sorted = [...cpus].sort((a, b) => a - b);
  const chosen = Number(env.BENCH_PIN_CPU);
  const server = env.BENCH_PIN_CPU !== undefined && sorted.includes(chosen) ? chosen : sorted[0]!;
  return { servers: String(server), client: sorted.filter((c) => c !== server).join(',') };
}

/** The CPU list of a process ("0,1" or "0-3" as taskset prints it), or null without taskset. */
export function affinityOf(pid: number): string | null {
  const r = spawnSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const m = /:\s*([0-9,-]+)\s*$/.exec(r.stdout);
  return m ? m[1]! : null;
}

/** Expands a taskset CPU list ("0-2,5") into CPU numbers. */
export function expandCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (!Number.isInteger(a)) continue;
    for (let c = a!; c <= (b ?? a)!; c++) out.push(c);
  }
  return out;
}

function setAffinity(pid: number, cpus: string): void {
  // -a: every thread (Node's workers, libuv's pool, V8's helpers). A process that already exited is skipped.
  spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

let announced = false;

/**
 * Runs `fn` (a comparison's rounds) with `pids` on the plan's server CPU and this process on the
 * others, then gives every one of them back the CPUs this process had before. No `pids`: unpinned.
 */
export async function pinnedRounds<T>(pids: number[], fn: () => Promise<T>): Promise<T> {
  const own = affinityOf(process.pid);
  const plan = own && pids.length ? pinPlan(expandCpuList(own)) : null;
  if (!plan) return fn();
  if (!announced) {
    announced = true;
    console.error(`  rounds pinned: the servers compared on cpu ${plan.servers}, the load generator on cpu ${plan.client} (BENCH_PIN=0 to run unpinned)`);
  }
  for (const pid of pids) setAffinity(pid, plan.servers);
  setAffinity(process.pid, plan.client);
  try {
    return await fn();
  } finally {
    setAffinity(process.pid, own!);
    for (const pid of pids) setAffinity(pid, own!);
  }
}

/** Runs a fixed loop for about `ms` on whatever CPU this thread is on: iterations per ms. */
function spinRate(table: Int32Array, ms: number): number {
  let x = 1;
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 20_000; i++) x = (table[(x + i) & 0xfffff]! * 31 + i) & 0xfffff;
    n += 20_000;
    t = performance.now();
  }
  if (x < 0) console.error(x); // keeps the loop from being optimized away
  return n / (t - t0);
}

/**
 * How fast each CPU this process may use runs the same loop just now, relative to the fastest (1.00),
 * or null when there is one CPU or no `taskset`. The VM's slow state (this file's header) shows as a
 * figure of 0.3-0.7; `npm run bench` prints it at each bench's start and end, and keeps it in the
 * saved run, so that a run's figures can be read against it. This thread is moved to each CPU in turn
 * (twice, the best kept) and given its CPUs back: about half a second on two CPUs.
 */
export function vcpuSpeeds(ms = 100): Map<number, number> | null {
  const own = affinityOf(process.pid);
  const cpus = own ? expandCpuList(own) : [];
  if (cpus.length < 2) return null;
  const best = new Map<number, number>();
  // A 4 MiB table the loop walks: arithmetic and the caches both, as a server's work is.
  const table = new Int32Array(1 << 20).map((_, i) => (i * 7919) & 0xfffff);
  try {
    spinRate(table, ms / 2); // compiled before the first CPU's turn
    for (let pass = 0; pass < 2; pass++) {
      for (const cpu of cpus) {
        spawnSync('taskset', ['-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' });
        best.set(cpu, Math.max(best.get(cpu) ?? 0, spinRate(table, ms)));
      }
    }
  } finally {
    spawnSync('taskset', ['-p', '-c', own!, String(process.pid)], { stdio: 'ignore' });
  }
  const top = Math.max(...best.values());
  return new Map([...best].map(([cpu, rate]) => [cpu, rate / top]));
}

/** `cpu0 1.00, cpu1 0.52`, or null. */
export function describeVcpuSpeeds(): string | null {
  const speeds = vcpuSpeeds();
  return speeds ? [...speeds].map(([cpu, r]) => `cpu${cpu} ${r.toFixed(2)}`).join(', ') : null;
}
