import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Limits {
  cpuCores: number;
  memoryMb: number;
}

export interface CgroupSupport {
  version: 1 | 2 | null;
  /** Limits are enforced (the hierarchy is there and writable by this process). */
  enforced: boolean;
  /** Why they are not, when they are not. */
  reason?: string;
}

const PERIOD_US = 100000;

/**
 * Which cgroup hierarchy this machine has under `root`, and whether Berth may create groups in it:
 * v2 (unified, `cgroup.controllers` at the root) or v1 (a `memory` and a `cpu` hierarchy). The probe
 * creates and removes one directory. `BERTH_CGROUPS=off` turns enforcement off.
 */
export function detectCgroups(root = '/sys/fs/cgroup', env: NodeJS.ProcessEnv = process.env): CgroupSupport {
  if (env.BERTH_CGROUPS === 'off') return { version: null, enforced: false, reason: 'disabled by BERTH_CGROUPS=off' };
  if (process.platform !== 'linux') return { version: null, enforced: false, reason: 'cgroups need Linux' };
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
    if (!/\bmemory\b/.test(controllers)) return { version: 2, enforced: false, reason: 'the memory controller is not available in the cgroup v2 hierarchy' };
    if (!probe(root)) return { version: 2, enforced: false, reason: 'the cgroup v2 hierarchy is not writable by the Berth process' };
    return { version: 2, enforced: true };
  }
  const mem = path.join(root, 'memory');
  if (existsSync(path.join(mem, 'memory.limit_in_bytes'))) {
    if (!probe(mem)) return { version: 1, enforced: false, reason: 'the cgroup v1 memory hierarchy is not writable by the Berth process' };
    return { version: 1, enforced: true };
  }
  return { version: null, enforced: false, reason: 'no cgroup hierarchy found' };
}

/** One app's (or build's) group; `addPid` moves a process into it, `remove` deletes it once empty. */
export interface CgroupHandle {
  addPid(pid: number): void;
  remove(): void;
  readonly paths: string[];
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/** Creates `berth/<name>` with the limits, or null when limits cannot be enforced here. */
export function createCgroup(support: CgroupSupport, name: string, limits: Limits, root = '/sys/fs/cgroup'): CgroupHandle | null {
  if (!support.enforced || !/^[A-Za-z0-9_.-]{1,100}$/.test(name)) return null;
  const memBytes = String(Math.round(limits.memoryMb * 1024 * 1024));
  const quota = String(Math.max(1000, Math.round(limits.cpuCores * PERIOD_US)));
  const paths: string[] = [];
  try {
    if (support.version === 2) {
      const parent = path.join(root, 'berth');
      mkdirSync(parent, { recursive: true });
      tryWrite(path.join(root, 'cgroup.subtree_control'), '+memory +cpu');
      tryWrite(path.join(parent, 'cgroup.subtree_control'), '+memory +cpu');
      const dir = path.join(parent, name);
      mkdirSync(dir, { recursive: true });
      paths.push(dir);
      writeFileSync(path.join(dir, 'memory.max'), memBytes);
      tryWrite(path.join(dir, 'memory.swap.max'), '0');
      tryWrite(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
    } else {
      const memDir = path.join(root, 'memory', 'berth', name);
      mkdirSync(memDir, { recursive: true });
      paths.push(memDir);
      writeFileSync(path.join(memDir, 'memory.limit_in_bytes'), memBytes);
      const cpuRoot = path.join(root, 'cpu');
      if (existsSync(path.join(cpuRoot, 'cpu.cfs_quota_us'))) {
        const cpuDir = path.join(cpuRoot, 'berth', name);
        try {
          mkdirSync(cpuDir, { recursive: true });
          paths.push(cpuDir);
          tryWrite(path.join(cpuDir, 'cpu.cfs_period_us'), String(PERIOD_US));
          tryWrite(path.join(cpuDir, 'cpu.cfs_quota_us'), quota);
        } catch {
          /* cpu limit not enforceable; memory still is */
        }
      }
    }
  } catch {
    for (const p of paths.reverse()) {
      try {
        rmdirSync(p);
      } catch {
        /* ignore */
      }
    }
    return null;
  }
  return {
    paths,
    addPid(pid: number) {
      for (const p of paths) tryWrite(path.join(p, 'cgroup.procs'), String(pid));
    },
    remove() {
      for (const p of paths) {
        try {
          rmdirSync(p);
        } catch {
          /* still has processes, or gone */
        }
      }
    },
  };
}
