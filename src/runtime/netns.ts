import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HostFirewall, type FirewallReport } from './host-firewall.js';
import { CLAIMS_DIR, egressExceptions, hostRules, SUBNET_PREFIX } from './host-rules.js';
import { PAIRS_SET, ServiceLinks } from './service-links.js';
import { timed } from '../lib/spans.js';
import { NftWatch } from './nft-watch.js';

export { boxResolvConf, egressExceptions, SUBNET_PREFIX, type EgressExceptions } from './host-rules.js';

/**
 * A network namespace per sandbox (when the server runs as root), joined to the host by a veth pair
 * on a /30 of 10.88.0.0/16: the host side is `.1` of the /30, the sandbox `eth0` is `.2`. The host
 * routes and masquerades the sandbox's outbound traffic, so builds reach package registries, while
 * nftables rules keep everything else out:
 *
 * - host `input`: nothing that enters from a sandbox reaches a host address (the API, PostgreSQL, any
 *   service on loopback or another interface), replies excepted;
 * - host `forward`: sandboxes cannot reach each other, nor link-local (cloud metadata) addresses;
 * - host `output`: only the server's own user opens connections into the sandboxes (the edge and the
 *   health check), not other local users;
 * - the sandbox's own `input`: only the host side, only on the app's `PORT` (builds: nothing). A port
 *   the app binds besides it is unreachable from everywhere. A managed service's box instead admits
 *   only other boxes (never a host address) on its port, and the host's `forward` only lets the same
 *   project's app and build boxes through to it (service-links.ts): no host process, no edge, no other
 *   project reaches a service.
 *
 * The rules inside the namespace cannot be changed from inside: the sandbox has no capabilities over a
 * namespace the host's root owns.
 *
 * A /30 is claimed by creating `/run/berth-net/<index>` exclusively (atomic across every Berth on the
 * machine); the file names the owning instance key and pid, so a restart (or another server, once that
 * pid is gone) reclaims what a crashed server left.
 */

const POOL_SIZE = 16384;

export interface NetNamespace {
  index: number;
  name: string;
  /** `/run/netns/<name>`: what `nsenter --net=` joins. */
  path: string;
  /** The port its input rules admit (null: none); absent for one described only to be reclaimed. */
  port?: number | null;
  /** A managed service's: its port admits the same project's boxes only, never the host (no spares). */
  service?: boolean;
  hostIf: string;
  hostAddr: string;
  sandboxAddr: string;
}

function run(bin: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 2000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(bin)} ${args.slice(0, 3).join(' ')} failed: ${err.trim() || `exit ${code}`}`))));
    if (input !== undefined) child.stdin!.end(input);
  });
}

function addrOf(index: number, host: boolean): string {
  const base = index * 4;
  return `${SUBNET_PREFIX}.${base >> 8}.${(base & 255) + (host ? 1 : 2)}`;
}

/** The pool index whose box (sandbox side) has `addr`, or null when it is none of the pool's. */
export function indexOfAddress(addr: string): number | null {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(addr);
  if (!m || `${m[1]}.${m[2]}` !== SUBNET_PREFIX) return null;
  const n = Number(m[3]) * 256 + Number(m[4]) - 2;
  if (Number(m[3]) > 255 || Number(m[4]) > 255 || n % 4 !== 0) return null;
  const index = n / 4;
  return index > 0 && index < POOL_SIZE ? index : null;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Told when a spare namespace is ready and when any namespace is about to go (the sandbox's spare launchers). */
export interface SpareHooks {
  made(ns: NetNamespace): void;
  released(ns: NetNamespace): void;
}

/** Spare namespaces kept ready at most (each a veth pair and a /30; docs/runtime.md "Network"). */
const MAX_SPARES = 4;

export class NetworkPool {
  private ready: Promise<void> | null = null;
  private readonly spares: NetNamespace[] = [];
  private readonly making = new Map<number | null, Promise<void>>();
  private closing = false;
  readonly firewall: HostFirewall;
  /** Which boxes reach which services: a project's apps and builds its own services (service-links.ts). */
  readonly links: ServiceLinks;
  /** Whether the host rules are still in place, without a process per box (nft-watch.ts). */
  private readonly watch: NftWatch;
  private repair: NodeJS.Timeout | null = null;

  constructor(
    private readonly bins: { ip: string; nft: string; nsenter: string },
    private readonly instanceKey: string,
    firewall?: HostFirewall,
    private readonly hooks?: SpareHooks,
  ) {
    this.firewall = firewall ?? new HostFirewall();
    this.links = new ServiceLinks(bins.nft, () => run(this.bins.nft, ['-f', '-'], hostRules(process.getuid?.() ?? 0, egressExceptions())));
    this.watch = new NftWatch([bins.nft], 'inet berth', {
      run: (args) => run(this.bins.nft, args),
      check: () => this.rulesListed(),
      // Put back at once (the boxes already running need them too), then trusted again.
      removed: () => {
        if (this.repair || this.closing) return;
        this.repair = setTimeout(() => {
          this.repair = null;
          if (this.closing) return;
          void this.ensureRules()
            .then(() => this.watch.confirm())
            .catch(() => {});
        }, 20);
        this.repair.unref();
      },
    });
  }

  /** Whether this version's host rules are in place (the set of service pairs stands for its table). */
  private rulesListed(): Promise<boolean> {
    return run(this.bins.nft, ['list', 'set', 'inet', 'berth', PAIRS_SET]).then(
      () => true,
      () => false,
    );
  }

  /**
   * Host rules, forwarding on, the other firewalls of the host told to let boxes through
   * (host-firewall.ts), and what a previous run of this instance (or a dead server) left.
   */
  init(): Promise<void> {
    this.ready ??= (async () => {
      mkdirSync(CLAIMS_DIR, { recursive: true, mode: 0o700 });
      writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
      // Registered before the rules are written, so a server shutting down meanwhile keeps them.
      writeFileSync(path.join(CLAIMS_DIR, `server-${process.pid}`), `${this.instanceKey} ${process.pid}\n`, { mode: 0o600 });
      await run(this.bins.nft, ['-f', '-'], hostRules(process.getuid?.() ?? 0, egressExceptions()));
      await this.firewall.ensure();
      await this.reclaim();
      await this.watch.start();
    })();
    return this.ready;
  }

  /** Puts Berth's rules back where another firewall dropped them (a restarted dockerd, a firewall reload). */
  async ensureRules(): Promise<FirewallReport> {
    await this.init();
    // The set of service pairs stands for this version's table (an older server's rewrite has none).
    if (!(await this.rulesListed())) {
      await run(this.bins.nft, ['-f', '-'], hostRules(process.getuid?.() ?? 0, egressExceptions()));
      await this.links.reapply();
    }
    return this.firewall.ensure();
  }

  /**
   * Server shutdown: Berth's host rules (the `inet berth` table, the other firewalls' shims) are
   * removed, unless another live Berth on this machine still has boxes (claims) that need them.
   */
  async close(): Promise<void> {
    this.closing = true;
    this.watch.stop();
    if (this.repair) clearTimeout(this.repair);
    if (!this.ready) return;
    await this.ready.catch(() => {});
    await Promise.all(this.making.values());
    for (const ns of this.spares.splice(0)) await this.release(ns).catch(() => {});
    rmSync(path.join(CLAIMS_DIR, `server-${process.pid}`), { force: true });
    if (this.othersAlive()) return;
    await this.firewall.remove().catch(() => {});
    await run(this.bins.nft, ['delete', 'table', 'inet', 'berth']).catch(() => {});
  }

  /** Whether another live server (not this process) is registered or holds a claim in /run/berth-net. */
  private othersAlive(): boolean {
    let names: string[] = [];
    try {
      names = readdirSync(CLAIMS_DIR);
    } catch {
      return false;
    }
    for (const n of names) {
      if (!Number.isInteger(Number(n)) && !n.startsWith('server-')) continue;
      try {
        const pid = Number(readFileSync(path.join(CLAIMS_DIR, n), 'utf8').trim().split(' ')[1]);
        if (pid !== process.pid && pidAlive(pid)) return true;
      } catch {
        /* released meanwhile */
      }
    }
    return false;
  }

  private async reclaim(): Promise<void> {
    let names: string[] = [];
    try {
      names = readdirSync(CLAIMS_DIR);
    } catch {
      return;
    }
    const reclaimed = new Set<string>();
    for (const n of names) {
      const index = Number(n);
      if (n.startsWith('server-')) {
        // A server that died without its shutdown: its registration goes.
        if (!pidAlive(Number(n.slice(7)))) rmSync(path.join(CLAIMS_DIR, n), { force: true });
        continue;
      }
      if (!Number.isInteger(index)) continue;
      let owner = '';
      try {
        owner = readFileSync(path.join(CLAIMS_DIR, n), 'utf8');
      } catch {
        continue;
      }
      const [key, pidText] = owner.trim().split(' ');
      const pid = Number(pidText);
      const mine = key === this.instanceKey && pid !== process.pid;
      if (mine || !pidAlive(pid)) {
        reclaimed.add(this.describe(index).sandboxAddr);
        await this.release(this.describe(index)).catch(() => {});
      }
    }
    // The service pairs of the boxes it left go with them, before their addresses serve new boxes.
    await this.links.purge(reclaimed).catch(() => {});
  }

  private describe(index: number): NetNamespace {
    const name = `berth-${index}`;
    return { index, name, path: `/run/netns/${name}`, hostIf: `bth${index}`, hostAddr: addrOf(index, true), sandboxAddr: addrOf(index, false) };
  }

  /** Claims a free /30: `prefer` (a service's address of before) when it is free, else any. */
  private claim(prefer?: number | null): number {
    if (prefer) {
      try {
        writeFileSync(path.join(CLAIMS_DIR, String(prefer)), `${this.instanceKey} ${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return prefer;
      } catch {
        /* another box holds it now: the service gets another address */
      }
    }
    const start = Math.floor(Math.random() * POOL_SIZE);
    for (let i = 0; i < POOL_SIZE; i++) {
      const index = (start + i) % POOL_SIZE;
      if (index === 0) continue;
      try {
        writeFileSync(path.join(CLAIMS_DIR, String(index)), `${this.instanceKey} ${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return index;
      } catch {
        /* taken */
      }
    }
    throw new Error('no free sandbox network: all 16384 are in use');
  }

  /**
   * A namespace whose `input` admits the host side on `port` only (no port: nothing inbound): a spare
   * made for that port earlier when there is one (`prepareSpare`), else a new one. A service's
   * (`prefer`: the pool index of its address of before) gets that address again when it is free.
   */
  async create(port: number | null, service = false, prefer: number | null = null): Promise<NetNamespace> {
    await this.init();
    // Another Berth on this machine that stopped just as this one started may have taken the host
    // rules away (it found no other server registered yet), or a firewall reload flushed them: a box
    // never starts without them. While the monitor runs and has reported no removal, nothing to check
    // (nft-watch.ts); else the check runs beside the namespace's own setup (a process start on the
    // wake path) and is awaited before the namespace is handed out, a spare's too.
    const listed = this.watch.intact ? null : this.rulesListed();
    // A spare still being made for this port (a box released a moment ago) is nearer done than a new one.
    const inFlight = service ? undefined : this.making.get(port);
    if (inFlight && !this.spares.some((s) => s.port === port)) await inFlight;
    const ns = (service ? null : this.takeSpare(port)) ?? (await this.make(port, service, prefer));
    try {
      if (listed && !(await timed('netns.nft-list-wait', () => listed))) await this.ensureRules();
    } catch (e) {
      await this.release(ns).catch(() => {});
      throw e;
    }
    return ns;
  }

  /** A new namespace, set up whole (veth pair, addresses, route, its own input rules), or it is released. */
  private async make(port: number | null, service = false, prefer: number | null = null): Promise<NetNamespace> {
    const ns = { ...this.describe(this.claim(prefer)), port, ...(service ? { service } : {}) };
    try {
      await timed('netns.ip-host', () => run(this.bins.ip, ['-batch', '-'], [`netns add ${ns.name}`, `link add ${ns.hostIf} type veth peer name eth0 netns ${ns.name}`, `addr add ${ns.hostAddr}/30 dev ${ns.hostIf}`, `link set ${ns.hostIf} up`].join('\n') + '\n'));
      await timed('netns.ip-ns', () => run(this.bins.ip, ['-n', ns.name, '-batch', '-'], ['link set lo up', `addr add ${ns.sandboxAddr}/30 dev eth0`, 'link set eth0 up', `route add default via ${ns.hostAddr}`].join('\n') + '\n'));
      // A service: any box's address (`.2` of a /30; the host's sides are `.1`) the host forwards.
      const from = service ? `ip saddr ${SUBNET_PREFIX}.0.0/16 ip saddr & 0.0.0.3 == 0.0.0.2` : `ip saddr ${ns.hostAddr}`;
      const admit = port ? `    ${from} tcp dport ${port} accept\n` : '';
      const rules = `table inet sandbox {\n  chain input {\n    type filter hook input priority 0; policy drop;\n    ct state established,related accept\n    iif "lo" accept\n${admit}  }\n}\n`;
      await timed('netns.nft-ns', () => run(this.bins.nsenter, [`--net=${ns.path}`, '--', this.bins.nft, '-f', '-'], rules));
    } catch (e) {
      await this.release(ns).catch(() => {});
      throw e;
    }
    return ns;
  }

  /** A spare made for `port`, taken out of the pool (it is never handed out twice), or null. */
  private takeSpare(port: number | null): NetNamespace | null {
    const i = this.spares.findIndex((ns) => ns.port === port);
    if (i < 0) return null;
    return this.spares.splice(i, 1)[0]!;
  }

  /**
   * Makes a spare namespace for `port` in the background, unless one is there or being made: the next
   * box with that port (a wake, a redeploy) skips the three process starts of its setup. A spare is
   * exactly what `make` sets up for a box, and no box's process ever ran in it (`hooks.made` may start a
   * launcher that waits there for its arguments); at most MAX_SPARES are kept
   * (the oldest goes), and `close` releases them. Called when a box's namespace is released (an app
   * stopped, slept or was replaced), so the work is off every start's path.
   */
  prepareSpare(port: number | null): void {
    if (this.closing || this.spares.some((ns) => ns.port === port) || this.making.has(port)) return;
    const made = this.make(port)
      .then(async (ns) => {
        if (this.closing) return this.release(ns);
        this.spares.push(ns);
        this.hooks?.made(ns);
        while (this.spares.length > MAX_SPARES) await this.release(this.spares.shift()!);
      })
      .catch(() => {
        /* a spare is only a head start: the next box makes its own */
      })
      .finally(() => this.making.delete(port));
    this.making.set(port, made);
  }

  /** The ports of the spares ready now (null: a build's, nothing inbound). */
  sparePorts(): (number | null)[] {
    return this.spares.map((ns) => ns.port ?? null);
  }

  /** Server shutdown begins: no more spares are made (`close` releases those there are). */
  stopSpares(): void {
    this.closing = true;
  }

  /** A box's namespace, once its box is gone: released, and a spare made for the same port (`prepareSpare`). */
  async releaseBox(ns: NetNamespace): Promise<void> {
    await this.release(ns);
    if (ns.port !== undefined && !ns.service) this.prepareSpare(ns.port);
  }

  /** Deletes the namespace (its veth pair goes with it) and frees the /30. */
  async release(ns: NetNamespace): Promise<void> {
    this.hooks?.released(ns);
    await this.links.detach(ns.sandboxAddr).catch(() => {});
    // One process: the host side usually goes with the namespace, and `-force` goes on past a line that fails.
    try {
      await run(this.bins.ip, ['-force', '-batch', '-'], `netns delete ${ns.name}\nlink delete ${ns.hostIf}\n`);
    } catch {
      /* already gone, or the host side went with the namespace */
    }
    rmSync(path.join(CLAIMS_DIR, String(ns.index)), { force: true });
  }
}
