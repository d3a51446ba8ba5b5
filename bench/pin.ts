/**
 * Pinned rounds (docs/benchmarks.md, "Figures of 2026-12-02 03:40-04:55 UTC"): on the machines these
 * benches run on, one vCPU can run the same code at half the other's speed for seconds to minutes,
 * and the guest is not told (no steal time in /proc/stat; the same work's CPU time per request
 * doubles). Two servers measured back to back landed on different vCPUs as the scheduler pleased,
 * so a round's ratio compared two vCPUs as much as two servers (0.44 to 1.20 in one run). While a
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
