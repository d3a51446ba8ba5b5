import { existsSync, lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { inside } from '../lib/copy-tree.js';
import { vethUsage, type UsageCounters } from './usage.js';
import { createCgroup, reclaimCgroups, removeInstanceCgroups, type CgroupHandle, type CgroupSupport } from './cgroups.js';
import type { Box, BoxProcess, BoxSpec, DriverStatus, ExecOptions, RuntimeDriver } from './driver.js';
import { DriverUnavailableError } from './driver.js';
import { groupAlive, killGroup, startLauncher } from './box-process.js';
import { SpareLaunchers } from './spare-launchers.js';
import { splitBoxEnv } from './box-env.js';
import { boxResolvConf, indexOfAddress, NetworkPool, type NetNamespace } from './netns.js';
import { freePort } from './proc.js';
import { seccompFilter, SeccompUnsupportedError } from './seccomp.js';
import type { UidRange } from './uid-range.js';
import { span, timed } from '../lib/spans.js';

/**
 * The `sandbox` driver (default): every build step and app runs under bubblewrap.
 *
 * When the server is root (the supported production setup):
 *   nsenter --net (the box's own network namespace, see netns.ts), moved into the box's cgroup by the
 *      server right after it starts and before bwrap gets its arguments (bwrap reads them from fd 4 to
 *      their end before it forks anything), so nothing of the box is ever outside the cgroup
 *   -> bwrap (new mount, PID, IPC and UTS namespaces; the system read-only; /app, /data, /tmp, HOME;
 *      the seccomp filter of seccomp.ts, read from fd 3 and applied right before it execs setpriv)
 *   -> setpriv (the project's own uid/gid, no supplementary groups, no capabilities in any set,
 *      an empty bounding set, no_new_privs)
 *   -> the command.
 * bwrap runs as root only to build the mount namespace; the command never holds a capability.
 *
 * Without root there is no uid to switch to and no cgroup or namespace to create on the host:
 * bwrap then makes a user namespace itself (same outer uid as the server, nothing of the data dir
 * mounted, own PID namespace), the host network is shared, and `limits.note` says so.
 */

export interface SandboxBins {
  bwrap: string | null;
  nsenter: string | null;
  setpriv: string | null;
  cgexec: string | null;
  ip: string | null;
  /** coreutils' `env`: hands the loader's variables to the command after the uid switch (`splitBoxEnv`). */
  env: string | null;
  nft: string | null;
}

const SEARCH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function findProgram(name: string): string | null {
  for (const dir of SEARCH) {
    const p = path.join(dir, name);
    if (existsSync(p)) return p;
  }
  return null;
}

export function findSandboxBins(): SandboxBins {
  return {
    bwrap: process.env.BERTH_BWRAP_BIN ? (existsSync(process.env.BERTH_BWRAP_BIN) ? process.env.BERTH_BWRAP_BIN : null) : findProgram('bwrap'),
    nsenter: findProgram('nsenter'),
    setpriv: findProgram('setpriv'),
    cgexec: findProgram('cgexec'),
    ip: findProgram('ip'),
    nft: findProgram('nft'),
    env: findProgram('env'),
  };
}

/** Folders of the system shown read-only in every box (a symlink such as `/bin -> usr/bin` stays one). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

function uidOf(pid: number): number | null {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export class SandboxDriver implements RuntimeDriver {
  readonly name = 'sandbox' as const;
  readonly isolation = 'sandbox' as const;
  readonly limits: { enforced: boolean; note?: string };
  private readonly root: boolean;
  private readonly net: NetworkPool | null;
  private readonly systemArgs: string[];
  private readonly problem: string | null;
  /** The seccomp filter, built once per server start and handed to every bwrap (`--seccomp 3`). */
  private readonly seccomp: Buffer | null;
  /** Launchers waiting in spare namespaces for the next start of an app (spare-launchers.ts). */
  private readonly launchers: SpareLaunchers | null;

  constructor(
    private readonly bins: SandboxBins,
    private readonly cgroups: CgroupSupport,
    private readonly instanceKey: string,
    private readonly dataDir: string,
    /** The server's claimed sandbox uid range (`ctx.uidRange`), null when it claimed none. */
    private readonly uidRange: UidRange | null = null,
  ) {
    this.root = process.getuid?.() === 0;
    const filter = this.filter();
    this.seccomp = typeof filter === 'string' ? null : filter;
    this.problem = this.check() ?? (typeof filter === 'string' ? filter : null);
    this.launchers = this.root && !this.problem ? new SpareLaunchers((nsPath) => launchHead(bins, nsPath), 2) : null;
    const launchers = this.launchers;
    this.net = launchers
      ? new NetworkPool({ ip: bins.ip!, nft: bins.nft!, nsenter: bins.nsenter! }, instanceKey, undefined, {
          made: (ns) => launchers.prepare(ns.path, ns.port),
          released: (ns) => launchers.drop(ns.path),
        })
      : null;
    const notes: string[] = [];
    if (!cgroups.enforced) notes.push(`resource limits are not enforced: ${cgroups.reason}`);
    if (!this.root) notes.push('the server does not run as root: apps share the host network and the server\'s uid outside their user namespace');
    this.limits = notes.length ? { enforced: cgroups.enforced, note: notes.join('; ') } : { enforced: true };
    this.systemArgs = this.problem ? [] : this.systemMounts();
    // A box with a network of its own cannot reach a resolver on the host's loopback: it gets the upstream ones.
    const resolv = this.net && !this.problem ? boxResolvConf() : null;
    if (resolv) this.systemArgs.push('--ro-bind', resolv, '/etc/resolv.conf');
  }

  /** The seccomp filter's bytes, or why there cannot be one (no box runs without it). */
  private filter(): Buffer | string {
    try {
      if (process.platform === 'linux' && !/^Seccomp:/m.test(readFileSync('/proc/self/status', 'utf8'))) {
        return 'the kernel has no seccomp support (CONFIG_SECCOMP_FILTER), which the sandbox runtime needs: set BERTH_RUNTIME=docker';
      }
      return seccompFilter();
    } catch (e) {
      if (e instanceof SeccompUnsupportedError) return e.message;
      return `the sandbox's seccomp filter could not be made: ${(e as Error).message}`;
    }
  }

  private check(): string | null {
    if (process.platform !== 'linux') return 'the sandbox runtime needs Linux (set BERTH_RUNTIME=docker, or BERTH_RUNTIME=process for no isolation)';
    if (!this.bins.bwrap) return 'bubblewrap is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap), or set BERTH_RUNTIME=docker';
    if (this.root) {
      const missing = (['nsenter', 'setpriv', 'ip', 'nft', 'env'] as const).filter((b) => !this.bins[b]);
      const pkg: Record<string, string> = { nsenter: 'util-linux', setpriv: 'util-linux', ip: 'iproute2', nft: 'nftables', env: 'coreutils' };
      if (missing.length) return `the sandbox runtime needs ${missing.join(', ')}: install ${[...new Set(missing.map((m) => pkg[m]))].join(' ')} (apt-get install ...)`;
      if (!this.cgroups.enforced) return `the sandbox runtime needs writable cgroups to hold every process of a box: ${this.cgroups.reason}`;
    }
    return null;
  }

  sees(hostDir: string): boolean {
    if (SYSTEM_DIRS.some((d) => inside(hostDir, d))) return true;
    try {
      const prefix = path.dirname(path.dirname(realpathSync(process.execPath)));
      return prefix !== '/' && inside(hostDir, prefix);
    } catch {
      return false;
    }
  }

  private systemMounts(): string[] {
    const args: string[] = [];
    for (const dir of SYSTEM_DIRS) {
      let st;
      try {
        st = lstatSync(dir);
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    }
    // The Node.js that runs Berth, when it lives outside the system folders (nvm, a tarball).
    try {
      const prefix = path.dirname(path.dirname(realpathSync(process.execPath)));
      if (!SYSTEM_DIRS.some((d) => inside(prefix, d)) && prefix !== '/') args.push('--ro-bind', prefix, prefix);
    } catch {
      /* not found */
    }
    // The data dir is never visible, even when it lives below a system folder.
    if (SYSTEM_DIRS.some((d) => inside(this.dataDir, d))) args.push('--tmpfs', this.dataDir);
    return args;
  }

  status(): DriverStatus {
    return this.problem ? { driver: 'sandbox', ready: false, reason: this.problem } : { driver: 'sandbox', ready: true };
  }

  async reclaim(): Promise<void> {
    if (this.problem) return;
    await reclaimCgroups(this.cgroups, this.instanceKey);
    await this.net?.init();
  }

  shuttingDown(): void {
    this.net?.stopSpares();
  }

  async close(): Promise<void> {
    await this.net?.close();
    this.launchers?.close();
    removeInstanceCgroups(this.cgroups, this.instanceKey);
  }

  async ensureEgressRules(): Promise<unknown> {
    return this.net?.ensureRules();
  }

  async open(spec: BoxSpec): Promise<Box> {
    // A uid past the data dir's range may be another Berth's (uid-range.ts): never run one. (A uid
    // below it is a project's from before the range was claimed, docs/operating.md.)
    const range = this.uidRange;
    if (this.root && range && spec.identity && spec.identity.uid >= range.first + range.size) {
      throw new DriverUnavailableError(`uid ${spec.identity.uid} is past this data dir's sandbox uid range ${range.first}-${range.first + range.size - 1}: its range is used up (docs/runtime.md, "Sandbox uid ranges")`);
    }
    if (this.problem) throw new DriverUnavailableError(this.problem);
    if (this.root && (!spec.identity || spec.identity.uid === 0)) {
      throw new DriverUnavailableError('a sandboxed project needs its own uid');
    }
    const cgSpan = span('box.cgroup');
    const cg = createCgroup(this.cgroups, this.instanceKey, spec.name, spec.limits);
    cgSpan();
    if (this.root && !cg) throw new DriverUnavailableError('could not create the cgroup of the sandbox');
    let ns: NetNamespace | null = null;
    let port: number | null = null;
    try {
      if (this.net) {
        port = spec.kind === 'app' ? (spec.port ?? 3000) : null;
        const prefer = spec.service && spec.address ? indexOfAddress(spec.address) : null;
        ns = await timed('box.netns', () => this.net!.create(port, spec.service === true, prefer));
        // Pairs it with the same project's services (a client) or apps and builds (a service): service-links.ts.
        const made = ns;
        await this.net.links.attach(spec.projectId, made.sandboxAddr, spec.service ? port : null).catch(async (e: Error) => {
          await this.net!.release(made).catch(() => {});
          throw e;
        });
      } else if (spec.kind === 'app') {
        port = await freePort();
      }
    } catch (e) {
      await cg?.remove();
      throw e;
    }
    return new SandboxBox(this.bins, this.systemArgs, spec, cg, ns, port, this.net, this.root, this.seccomp!, this.launchers);
  }
}

/** The launch chain up to bwrap's `--` (its arguments come through fd 4): `nsenter --net` first when the box has a namespace. */
function launchHead(bins: SandboxBins, nsPath: string | null): string[] {
  return [...(nsPath ? [bins.nsenter!, `--net=${nsPath}`, '--'] : []), bins.bwrap!, '--args', '4', '--'];
}

class SandboxBox implements Box {
  readonly host: string;
  readonly bindHost: string;
  readonly paths: Box['paths'];
  private readonly leaders = new Set<number>();

  constructor(
    private readonly bins: SandboxBins,
    private readonly systemArgs: string[],
    private readonly spec: BoxSpec,
    private readonly cg: CgroupHandle | null,
    private readonly ns: NetNamespace | null,
    readonly port: number | null,
    private readonly net: NetworkPool | null,
    /** The server runs as root: the box switches to the project's uid and starts inside its cgroup. */
    private readonly root: boolean,
    /** The seccomp filter bwrap reads from fd 3 (see seccomp.ts). */
    private readonly seccomp: Buffer,
    private readonly launchers: SpareLaunchers | null,
  ) {
    this.host = ns ? ns.sandboxAddr : '127.0.0.1';
    this.bindHost = ns ? '0.0.0.0' : '127.0.0.1';
    this.paths = { app: '/app', data: spec.dataDir ? '/data' : null, home: spec.homeDir ? '/home/berth' : null, tmp: '/tmp', cache: spec.kind === 'build' && spec.cacheDir ? '/cache' : null };
  }

  inside(hostPath: string): string {
    const rel = path.relative(this.spec.appDir, hostPath);
    if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${hostPath} is outside the box`);
    return rel ? path.posix.join('/app', ...rel.split(path.sep)) : '/app';
  }

  private bwrapArgs(cwd: string): string[] {
    const s = this.spec;
    const a = [...this.systemArgs, '--dev', '/dev', '--proc', '/proc', '--perms', '1777', '--tmpfs', '/tmp'];
    a.push(s.kind === 'build' ? '--bind' : '--ro-bind', s.appDir, '/app');
    if (s.dataDir) a.push('--bind', s.dataDir, '/data');
    // The project's build cache: the one folder of the data dir a build sees besides its own (build-cache.ts).
    if (s.kind === 'build' && s.cacheDir) a.push('--bind', s.cacheDir, '/cache');
    // bwrap would make the missing /home 0700 root: the project's uid could not reach its HOME below it.
    if (s.homeDir) a.push('--perms', '0755', '--dir', '/home', '--bind', s.homeDir, '/home/berth');
    a.push('--chdir', this.inside(cwd));
    a.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--hostname', 'berth');
    a.push('--die-with-parent', '--new-session');
    // Read from fd 3 (exec passes it) inside the new namespaces, applied right before bwrap execs setpriv
    // (and in its PID 1): bwrap's own mounts come first, and setpriv's setresuid/setgroups/capset/prctl
    // are allowed by the filter.
    a.push('--seccomp', '3');
    if (!s.identity || !this.root) a.push('--unshare-user', '--cap-drop', 'ALL');
    return a;
  }

  exec(argv: string[], opts: ExecOptions): BoxProcess {
    if (argv.length === 0) throw new Error('empty command');
    const { setenv, late } = splitBoxEnv(opts.env);
    // bwrap's own arguments (host paths of the release, the volume, HOME) and the box's environment come
    // through fd 4, so the box's PID 1 (bwrap) shows none of the data dir's layout in /proc/1/cmdline.
    const hidden = Buffer.from([...this.bwrapArgs(opts.cwd), ...setenv].map((a) => `${a}\0`).join(''));
    const head = launchHead(this.bins, this.ns?.path ?? null);
    const chain: string[] = [];
    if (this.root && this.spec.identity) {
      const { uid, gid } = this.spec.identity;
      chain.push(this.bins.setpriv!, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--ambient-caps=-all', '--bounding-set=-all', '--no-new-privs', '--');
    }
    if (late.length) {
      if (!this.bins.env) throw new Error('coreutils\' env is not installed: the loader\'s variables (LD_PRELOAD, ...) cannot be handed to the command');
      // `env` takes the first word without "=" for the command.
      if (argv[0]!.includes('=')) throw new Error(`a command named with "=" (${argv[0]}) cannot run with ${late[0]!.split('=')[0]} set`);
      chain.push(this.bins.env, ...late);
    }
    chain.push(...argv);
    // The next spare namespace for this port gets a launcher for this command (an app that sleeps and
    // wakes finds it there); a managed service never takes spares. Not when the loader's variables are
    // in the command line (`env`'s words): no value of the box's environment waits in a process's.
    if (this.spec.kind === 'app' && !this.spec.service && this.port !== null && this.ns && !late.length) this.launchers?.hint(this.port, chain);
    // Into the box's cgroup before bwrap has its arguments (it forks nothing before), so the box's
    // processes and its cgroup namespace's root are the group's. One write per hierarchy: cgexec did
    // the same writes at the cost of its own start (libcgroup's, about 10 ms of every launch).
    const cg = this.cg;
    const enter = !cg ? undefined : this.root ? (pid: number) => {
      if (!cg.addPid(pid)) throw new Error('the box\'s process could not be moved into its cgroup');
    } : (pid: number) => void cg.addPid(pid);
    // A launcher already waiting in this box's namespace when it is this very command (a wake), else a
    // new one (its working directory on the host: somewhere that always exists; bwrap --chdir's inside).
    const whole = [...head, ...chain];
    const waiting = this.ns && this.launchers ? this.launchers.take(this.ns.path, whole) : null;
    const p = (waiting ?? startLauncher(whole, '/', {}, 2)).feed([this.seccomp, hidden], enter);
    if (p.pid) this.leaders.add(p.pid);
    // bwrap exits with 128+N when the command was killed by signal N: report it as that signal.
    const exited = p.exited.then((r) => {
      if (r.signal || r.code === null || r.code <= 128 || r.code > 128 + 31) return r;
      const name = Object.entries(osConstants.signals).find(([, n]) => n === r.code! - 128)?.[0];
      return name ? { code: null, signal: name } : r;
    });
    return { pid: p.pid, stdout: p.stdout, stderr: p.stderr, exited };
  }

  signalAll(signal: NodeJS.Signals): void {
    const uid = this.spec.identity?.uid;
    if (!this.cg || uid === undefined || !this.root) {
      // bwrap's own processes die with their parent, and take the sandbox with them.
      for (const pid of this.leaders) killGroup(pid, signal);
      return;
    }
    // The launcher (bwrap, root) would answer SIGTERM by killing the sandbox at once: signal only the
    // processes that run as the project, so the app gets its grace period.
    for (const pid of this.cg.pids()) {
      if (uidOf(pid) !== uid) continue;
      try {
        process.kill(pid, signal);
      } catch {
        /* gone */
      }
    }
  }

  pids(): number[] {
    return this.cg ? this.cg.pids() : [...this.leaders].filter((p) => groupAlive(p));
  }

  usage(): UsageCounters | null {
    if (!this.cg) return null;
    return { ...this.cg.usage(), ...(this.ns ? vethUsage(this.ns.hostIf) : { netRxBytes: null, netTxBytes: null }) };
  }

  async killAll(): Promise<void> {
    if (this.cg) await this.cg.killAll();
    for (const pid of this.leaders) killGroup(pid, 'SIGKILL');
  }

  async dispose(): Promise<void> {
    await this.killAll();
    this.leaders.clear();
    await this.cg?.remove();
    if (this.ns && this.net) await this.net.releaseBox(this.ns);
  }
}
