import path from 'node:path';
import { createCgroup, reclaimCgroups, removeInstanceCgroups, type CgroupHandle, type CgroupSupport } from './cgroups.js';
import type { Box, BoxProcess, BoxSpec, DriverStatus, ExecOptions, RuntimeDriver } from './driver.js';
import { groupAlive, killGroup, spawnBoxProcess } from './box-process.js';
import { freePort } from './proc.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The `process` driver: no isolation. Builds and apps run as the server's own user with the host's
 * files and network, each as a process group, inside a cgroup with the project's limits when cgroups
 * are writable. Chosen only explicitly (`BERTH_RUNTIME=process`), refused in cloud mode, and
 * `berth serve` warns at start.
 */
export class ProcessDriver implements RuntimeDriver {
  readonly name = 'process' as const;
  readonly isolation = 'none' as const;
  readonly limits: { enforced: boolean; note?: string };

  constructor(
    private readonly cgroups: CgroupSupport,
    private readonly instanceKey: string,
    /** `cgexec`, to start a process inside its group (else it is moved there right after it starts). */
    private readonly cgexec: string | null = null,
  ) {
    this.limits = cgroups.enforced ? { enforced: true } : { enforced: false, note: `resource limits are not enforced: ${cgroups.reason}` };
  }

  status(): DriverStatus {
    return { driver: 'process', ready: true };
  }

  async reclaim(): Promise<void> {
    await reclaimCgroups(this.cgroups, this.instanceKey);
  }

  /** Server shutdown, after every app stopped: the instance's empty cgroup folders go. */
  async close(): Promise<void> {
    removeInstanceCgroups(this.cgroups, this.instanceKey);
  }

  async open(spec: BoxSpec): Promise<Box> {
    const cg = createCgroup(this.cgroups, this.instanceKey, spec.name, spec.limits);
    const port = spec.kind === 'app' ? await freePort() : null;
    return new ProcessBox(spec, cg, port, this.cgexec);
  }
}

class ProcessBox implements Box {
  readonly host = '127.0.0.1';
  readonly bindHost = '127.0.0.1';
  readonly paths: Box['paths'];
  private readonly leaders = new Set<number>();

  constructor(
    private readonly spec: BoxSpec,
    private readonly cg: CgroupHandle | null,
    readonly port: number | null,
    private readonly cgexec: string | null,
  ) {
    this.paths = { app: spec.appDir, data: spec.dataDir ?? null, home: spec.homeDir ?? null, tmp: '/tmp', cache: spec.cacheDir ?? null };
  }

  inside(hostPath: string): string {
    return path.resolve(hostPath);
  }

  exec(argv: string[], opts: ExecOptions): BoxProcess {
    const inGroup = !!(this.cg && this.cgexec && process.getuid?.() === 0);
    const p = spawnBoxProcess(inGroup ? [this.cgexec!, '-g', this.cg!.cgexecSpec, ...argv] : argv, opts.cwd, opts.env);
    if (p.pid) {
      if (!inGroup) this.cg?.addPid(p.pid);
      this.leaders.add(p.pid);
    }
    return p;
  }

  signalAll(signal: NodeJS.Signals): void {
    for (const pid of this.leaders) killGroup(pid, signal);
  }

  pids(): number[] {
    return this.cg ? this.cg.pids() : [...this.leaders].filter((p) => groupAlive(p));
  }

  async killAll(): Promise<void> {
    if (this.cg) {
      await this.cg.killAll();
      return;
    }
    for (const pid of this.leaders) killGroup(pid, 'SIGKILL');
    for (let i = 0; i < 50 && [...this.leaders].some((p) => groupAlive(p)); i++) await sleep(10);
  }

  async dispose(): Promise<void> {
    await this.killAll();
    this.leaders.clear();
    await this.cg?.remove();
  }
}
