import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cgroupUsage, type UsageCounters } from './usage.js';

/**
 * Control groups for builds and apps: memory, cpu and a process count on a group that holds every
 * process of one build or app instance, killed as a whole. cgroup v2 (unified) and v1 (one hierarchy
 * per controller) both work. Every group of one Berth lives under `berth/<instanceKey>/`, so servers
 * on one machine (tests run several) never touch each other's groups, and a restart can find and kill
 * whatever its previous run left behind.
 */

export interface Limits {
  cpuCores: number;
  memoryMb: number;
  /** Most processes (threads count too) the group may hold; default 512. */
  pidsMax?: number;
}

export const DEFAULT_PIDS_MAX = 512;

export interface CgroupSupport {
  version: 1 | 2 | null;
  /** Limits are enforced (the hierarchy is there and writable by this process). */
  enforced: boolean;
  /** Why they are not, when they are not. */
  reason?: string;
  root: string;
}

const PERIOD_US = 100000;
/**
 * v1 hierarchies a group is made in (those present); memory is required, the others are used when
 * mounted. cpuacct and blkio only count (the metrics sampler reads them: usage.ts).
 */
const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'freezer', 'cpuacct', 'blkio'] as const;

/**
 * Which cgroup hierarchy this machine has under `root`, and whether Berth may create groups in it:
 * v2 (unified, `cgroup.controllers` at the root) or v1 (a `memory` and a `cpu` hierarchy). The probe
 * creates and removes one directory. `BERTH_CGROUPS=off` turns enforcement off.
 */
export function detectCgroups(root = '/sys/fs/cgroup', env: NodeJS.ProcessEnv = process.env): CgroupSupport {
  if (env.BERTH_CGROUPS === 'off') return { version: null, enforced: false, reason: 'disabled by BERTH_CGROUPS=off', root };
  if (process.platform !== 'linux') return { version: null, enforced: false, reason: 'cgroups need Linux', root };
  const probe = (dir: string): boolean => {
    const p = path.join(dir, `berth-probe-${process.pid}`);
    try {
      mkdirSync(p);
      rmdirSync(p);
      return true;
    } catch {
      return false;
    }
  };
  if (existsSync(path.join(root, 'cgroup.controllers'))) {
    let controllers = '';
    try {
      controllers = readFileSync(path.join(root, 'cgroup.controllers'), 'utf8');
    } catch {
      /* unreadable */
    }
    if (!/\bmemory\b/.test(controllers)) return { version: 2, enforced: false, reason: 'the memory controller is not available in the cgroup v2 hierarchy', root };
    if (!probe(root)) return { version: 2, enforced: false, reason: 'the cgroup v2 hierarchy is not writable by the Berth process', root };
    return { version: 2, enforced: true, root };
  }
  const mem = path.join(root, 'memory');
  if (existsSync(path.join(mem, 'memory.limit_in_bytes'))) {
    if (!probe(mem)) return { version: 1, enforced: false, reason: 'the cgroup v1 memory hierarchy is not writable by the Berth process', root };
    return { version: 1, enforced: true, root };
  }
  return { version: null, enforced: false, reason: 'no cgroup hierarchy found', root };
}

/** One build's or app's group. */
export interface CgroupHandle {
  /** `controllers:relative/path` for `cgexec -g` (the process starts inside the group). */
  readonly cgexecSpec: string;
  readonly paths: string[];
  /** Moves a process into the group (each of its hierarchies); false when any move was refused. */
  addPid(pid: number): boolean;
  /** Every process in the group now. */
  pids(): number[];
  /** Kills every process in the group (and whatever it forks meanwhile), bounded. */
  killAll(): Promise<void>;
  /** Kills what is left and deletes the group. */
  remove(): Promise<void>;
  /** What the group's processes used so far (CPU, memory now, disk bytes): usage.ts. */
  usage(): Omit<UsageCounters, 'netRxBytes' | 'netTxBytes'>;
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function readPids(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Kills everything in the group rooted at the given directories: freeze (v1) or cgroup.kill (v2), SIGKILL, thaw, until empty. */
async function killGroupDirs(support: CgroupSupport, dirs: string[]): Promise<void> {
  const main = dirs[0];
  if (!main) return;
  if (support.version === 2 && tryWrite(path.join(main, 'cgroup.kill'), '1')) {
    for (let i = 0; i < 100 && readPids(main).length > 0; i++) await sleep(10);
    return;
  }
  const freezer = dirs.find((d) => d.includes(`${path.sep}freezer${path.sep}`));
  for (let round = 0; round < 100; round++) {
    const pids = new Set(dirs.flatMap(readPids));
    if (pids.size === 0) return;
    // Frozen processes cannot fork while they are being killed (a fork bomb cannot outrun the loop).
    if (freezer) tryWrite(path.join(freezer, 'freezer.state'), 'FROZEN');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    if (freezer) tryWrite(path.join(freezer, 'freezer.state'), 'THAWED');
    await sleep(round < 10 ? 5 : 20);
  }
}

function rmdirQuiet(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    /* busy or gone */
  }
}

/** The group's directories: v2 one, v1 one per mounted controller (memory first). */
function groupDirs(support: CgroupSupport, rel: string): { dirs: string[]; controllers: string[] } {
  if (support.version === 2) return { dirs: [path.join(support.root, rel)], controllers: ['memory', 'pids', 'cpu'] };
  const dirs: string[] = [];
  const controllers: string[] = [];
  for (const c of V1_CONTROLLERS) {
    if (c !== 'memory' && !existsSync(path.join(support.root, c, 'cgroup.procs'))) continue;
    dirs.push(path.join(support.root, c, rel));
    controllers.push(c);
  }
  return { dirs, controllers };
}

/**
 * Creates `berth/<instanceKey>/<name>` with the limits, or null when limits cannot be enforced here.
 */
export function createCgroup(support: CgroupSupport, instanceKey: string, name: string, limits: Limits): CgroupHandle | null {
  if (!support.enforced || !/^[A-Za-z0-9_.-]{1,100}$/.test(name) || !/^[A-Za-z0-9_-]{1,40}$/.test(instanceKey)) return null;
  const rel = path.join('berth', instanceKey, name);
  const memBytes = String(Math.round(limits.memoryMb * 1024 * 1024));
  const quota = String(Math.max(1000, Math.round(limits.cpuCores * PERIOD_US)));
  const pidsMax = String(Math.max(8, Math.round(limits.pidsMax ?? DEFAULT_PIDS_MAX)));
  const { dirs, controllers } = groupDirs(support, rel);
  const made: string[] = [];
  try {
    if (support.version === 2) {
      // Controllers must be enabled for the children at every level above the group.
      const root = support.root;
      for (const level of [root, path.join(root, 'berth'), path.join(root, 'berth', instanceKey)]) {
        mkdirSync(level, { recursive: true });
        tryWrite(path.join(level, 'cgroup.subtree_control'), '+memory +cpu +pids');
      }
      const dir = dirs[0]!;
      mkdirSync(dir, { recursive: true });
      made.push(dir);
      writeFileSync(path.join(dir, 'memory.max'), memBytes);
      tryWrite(path.join(dir, 'memory.swap.max'), '0');
      tryWrite(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
      tryWrite(path.join(dir, 'pids.max'), pidsMax);
    } else {
      for (const [i, dir] of dirs.entries()) {
        mkdirSync(dir, { recursive: true });
        made.push(dir);
        const c = controllers[i];
        if (c === 'memory') {
          writeFileSync(path.join(dir, 'memory.limit_in_bytes'), memBytes);
          tryWrite(path.join(dir, 'memory.memsw.limit_in_bytes'), memBytes);
        } else if (c === 'pids') {
          tryWrite(path.join(dir, 'pids.max'), pidsMax);
        } else if (c === 'cpu') {
          tryWrite(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
          tryWrite(path.join(dir, 'cpu.cfs_quota_us'), quota);
        }
      }
    }
  } catch {
    for (const p of made.reverse()) rmdirQuiet(p);
    return null;
  }
  const handle: CgroupHandle = {
    cgexecSpec: `${controllers.join(',')}:${rel.split(path.sep).join('/')}`,
    paths: dirs,
    addPid(pid: number) {
      let all = true;
      for (const p of dirs) all = tryWrite(path.join(p, 'cgroup.procs'), String(pid)) && all;
      return all;
    },
    pids() {
      return [...new Set(dirs.flatMap(readPids))];
    },
    killAll: () => killGroupDirs(support, dirs),
    usage: () => cgroupUsage(support.version, dirs),
    async remove() {
      await killGroupDirs(support, dirs);
      for (const p of dirs) rmdirQuiet(p);
    },
  };
  return handle;
}

/**
 * Kills every process in every group under `berth/<instanceKey>/` and removes the groups: what a
 * previous run of this Berth (crashed, or killed with -9) left behind. Returns how many groups held
 * processes.
 */
export async function reclaimCgroups(support: CgroupSupport, instanceKey: string): Promise<number> {
  if (!support.enforced) return 0;
  const names = new Set<string>();
  const bases = support.version === 2 ? [path.join(support.root, 'berth', instanceKey)] : V1_CONTROLLERS.map((c) => path.join(support.root, c, 'berth', instanceKey));
  for (const base of bases) {
    try {
      for (const n of readdirSync(base, { withFileTypes: true })) if (n.isDirectory()) names.add(n.name);
    } catch {
      /* none */
    }
  }
  let busy = 0;
  for (const name of names) {
    const { dirs } = groupDirs(support, path.join('berth', instanceKey, name));
    if (dirs.some((d) => readPids(d).length > 0)) busy++;
    await killGroupDirs(support, dirs);
    for (const d of dirs) rmdirQuiet(d);
  }
  return busy;
}

/**
 * Removes the empty `berth/<instanceKey>/` folders of every controller at shutdown (after every app
 * stopped): a data dir used once (a test's, a trial's) leaves nothing behind. A group still in use keeps
 * its folder and the instance's (rmdir refuses a folder that is not empty).
 */
export function removeInstanceCgroups(support: CgroupSupport, instanceKey: string): void {
  if (!support.enforced || !/^[A-Za-z0-9_-]{1,40}$/.test(instanceKey)) return;
  const bases = support.version === 2 ? [path.join(support.root, 'berth', instanceKey)] : V1_CONTROLLERS.map((c) => path.join(support.root, c, 'berth', instanceKey));
  for (const base of bases) rmdirQuiet(base);
}
