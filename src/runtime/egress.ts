import { lookup } from 'node:dns/promises';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import type { Box, RuntimeDriver } from './driver.js';

/**
 * Whether Berth's boxes reach the internet (contract 18): the registry a build's install step needs is
 * tried from inside the build's box before the step runs, and a periodic check from a box of its own
 * feeds `GET /api/health` `runtime.egress`. When a box cannot reach a host that the server itself
 * reaches, something between them drops forwarded traffic (another firewall of the host) or the
 * box's resolver is out of its reach: the error says which, and where to read more.
 */

export interface EgressTarget {
  host: string;
  port: number;
  /** What it is, for messages: `the npm registry`. */
  what: string;
}

export type ProbeResult = { ok: true; address: string } | { ok: false; stage: 'resolve' | 'connect' | 'run'; code: string };

export interface EgressStatus {
  ok: boolean;
  checkedAt: string;
  error?: string;
}

const PROBE_TIMEOUT_MS = 5000;

/** The probe run inside a box: resolve, connect, print one JSON line. Node first; python3 where an image has no Node. */
const NODE_PROBE = `const dns=require('dns'),net=require('net');const [h,p,t]=process.argv.slice(1);const out=(o)=>{process.stdout.write(JSON.stringify(o)+'\\n');process.exit(0)};dns.lookup(h,(e,a)=>{if(e)return out({ok:false,stage:'resolve',code:e.code||'EAI_FAIL'});const s=net.connect({host:a,port:Number(p)});s.setTimeout(Number(t),()=>{s.destroy();out({ok:false,stage:'connect',code:'ETIMEDOUT'})});s.on('connect',()=>{s.destroy();out({ok:true,address:a})});s.on('error',(e)=>out({ok:false,stage:'connect',code:e.code||'ECONNREFUSED'}))})`;
const PYTHON_PROBE = `import json,socket,sys
h,p,t=sys.argv[1],int(sys.argv[2]),int(sys.argv[3])/1000
try:
  a=socket.getaddrinfo(h,p,socket.AF_INET,socket.SOCK_STREAM)[0][4][0]
except Exception as e:
  print(json.dumps({"ok":False,"stage":"resolve","code":"EAI_FAIL"}));sys.exit(0)
try:
  socket.create_connection((a,p),timeout=t).close();print(json.dumps({"ok":True,"address":a}))
except socket.timeout:
  print(json.dumps({"ok":False,"stage":"connect","code":"ETIMEDOUT"}))
except OSError as e:
  print(json.dumps({"ok":False,"stage":"connect","code":"ECONNREFUSED" if isinstance(e,ConnectionRefusedError) else "EHOSTUNREACH"}))
`;

/** The same probe from the server itself. */
export async function hostReaches(target: EgressTarget, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  let address: string;
  try {
    address = (await lookup(target.host, { family: 4 })).address;
  } catch (e) {
    return { ok: false, stage: 'resolve', code: (e as NodeJS.ErrnoException).code ?? 'EAI_FAIL' };
  }
  return new Promise((resolve) => {
    const s = net.connect({ host: address, port: target.port });
    s.setTimeout(timeoutMs, () => {
      s.destroy();
      resolve({ ok: false, stage: 'connect', code: 'ETIMEDOUT' });
    });
    s.once('connect', () => {
      s.destroy();
      resolve({ ok: true, address });
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve({ ok: false, stage: 'connect', code: e.code ?? 'ECONNREFUSED' }));
  });
}

/** Runs the probe in `box` (one process, bounded); `node` is the host's Node when the box shows the host's programs. */
export async function boxReaches(box: Box, target: EgressTarget, opts: { cwd: string; path: string; node: string | null }, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const args = [target.host, String(target.port), String(timeoutMs)];
  const tries: string[][] = [];
  if (opts.node) tries.push([opts.node, '-e', NODE_PROBE, ...args]);
  else tries.push(['node', '-e', NODE_PROBE, ...args]);
  tries.push(['python3', '-c', PYTHON_PROBE, ...args]);
  let last: ProbeResult = { ok: false, stage: 'run', code: 'ENOENT' };
  for (const argv of tries) {
    last = await runProbe(box, argv, opts, timeoutMs + 5000);
    if (last.ok || last.stage !== 'run') return last;
  }
  return last;
}

async function runProbe(box: Box, argv: string[], opts: { cwd: string; path: string }, limitMs: number): Promise<ProbeResult> {
  let p;
  try {
    p = box.exec(argv, { cwd: opts.cwd, env: { PATH: opts.path, HOME: box.paths.tmp } });
  } catch {
    return { ok: false, stage: 'run', code: 'ENOENT' };
  }
  let out = '';
  p.stdout?.on('data', (c: Buffer) => {
    if (out.length < 4096) out += c.toString();
  });
  p.stderr?.resume();
  const timer = setTimeout(() => void box.killAll(), limitMs);
  const r = await p.exited;
  clearTimeout(timer);
  const line = out.trim().split('\n').pop() ?? '';
  try {
    const parsed = JSON.parse(line) as ProbeResult;
    if (typeof parsed.ok === 'boolean') return parsed;
  } catch {
    /* not the probe's answer */
  }
  return { ok: false, stage: 'run', code: r.code === 127 || r.error ? 'ENOENT' : `exit ${r.code ?? r.signal}` };
}

/** Whether an address lies in a range boxes are kept out of (netns.ts: private, CGNAT, link-local, loopback, multicast). */
function internal(address: string): boolean {
  try {
    const range = ipaddr.parse(address).range();
    return ['private', 'carrierGradeNat', 'linkLocal', 'loopback', 'multicast', 'unspecified'].includes(range);
  } catch {
    return false;
  }
}

/** The host's nameservers (from /etc/resolv.conf), for the message when a box cannot resolve. */
function nameservers(text: string): string[] {
  return [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!);
}

/**
 * What to tell the user when the box did not reach `target`; null when it did, or when the server
 * cannot reach it either (offline host: nothing Berth can change, the step runs and may not need it).
 */
export function explainEgress(target: EgressTarget, box: ProbeResult, host: ProbeResult, resolvConf = ''): string | null {
  if (box.ok || !host.ok || box.stage === 'run') return null;
  const where = `${target.host}:${target.port} (${target.what})`;
  if (box.stage === 'connect' && internal(host.address)) {
    return `the build's sandbox cannot reach ${where}: ${host.address} is a private, link-local or host address, which builds and apps do not reach unless BERTH_OUTBOUND_ALLOW lists it; see docs/runtime.md "Egress on real hosts"`;
  }
  if (box.stage === 'resolve') {
    const ns = nameservers(resolvConf);
    const local = ns.filter((a) => a.startsWith('127.') || a === '::1');
    return (
      `the build's sandbox cannot resolve ${target.host} (${box.code}) while this server can: ` +
      (local.length
        ? `the host's resolver ${local.join(', ')} listens on its loopback, which sandboxes cannot reach; `
        : 'DNS queries from the sandbox are dropped on their way out (another firewall drops forwarded traffic); ') +
      'see docs/runtime.md "Egress on real hosts"'
    );
  }
  return `the build's sandbox cannot reach ${where}: ${box.code} while this server reaches it: another firewall drops forwarded traffic (Docker's FORWARD policy, ufw or firewalld); see docs/runtime.md "Egress on real hosts"`;
}

/** The registry host an install step of `runtime` talks to, from the step's variables or the default. */
export function registryOf(runtime: string, env: Record<string, string>, npmrc: string | null = null): EgressTarget | null {
  const fromUrl = (url: string | undefined, what: string): EgressTarget | null => {
    if (!url) return null;
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
      return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80), what };
    } catch {
      return null;
    }
  };
  const pick = (names: string[]) => names.map((n) => env[n]).find((v) => v);
  switch (runtime) {
    case 'node':
    case 'bun': {
      const rc = npmrc ? /^\s*registry\s*=\s*(\S+)/m.exec(npmrc)?.[1] : undefined;
      return fromUrl(pick(['npm_config_registry', 'NPM_CONFIG_REGISTRY']) ?? rc, 'the npm registry') ?? { host: 'registry.npmjs.org', port: 443, what: 'the npm registry' };
    }
    case 'python':
      return fromUrl(pick(['PIP_INDEX_URL', 'UV_INDEX_URL', 'UV_DEFAULT_INDEX']), 'the Python package index') ?? { host: 'pypi.org', port: 443, what: 'the Python package index' };
    case 'go': {
      const proxy = (env.GOPROXY ?? '').split(/[,|]/)[0];
      if (proxy === 'off' || proxy === 'direct') return null;
      return fromUrl(proxy, 'the Go module proxy') ?? { host: 'proxy.golang.org', port: 443, what: 'the Go module proxy' };
    }
    case 'rust':
      return { host: 'index.crates.io', port: 443, what: 'the crates.io index' };
    case 'ruby':
      return { host: 'rubygems.org', port: 443, what: 'RubyGems' };
    case 'php':
      return { host: 'repo.packagist.org', port: 443, what: 'Packagist' };
    case 'java':
      return { host: 'repo.maven.apache.org', port: 443, what: 'Maven Central' };
    case 'elixir':
      return { host: 'repo.hex.pm', port: 443, what: 'Hex' };
    case 'dotnet':
      return { host: 'api.nuget.org', port: 443, what: 'NuGet' };
    default:
      return null;
  }
}

/** The target of the periodic check: `BERTH_EGRESS_CHECK` (`host:port`), default the npm registry. */
export function egressCheckTarget(env: NodeJS.ProcessEnv = process.env): EgressTarget | null {
  const v = env.BERTH_EGRESS_CHECK?.trim();
  if (v === 'off') return null;
  if (v) {
    const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(v);
    if (m) return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]), what: 'BERTH_EGRESS_CHECK' };
  }
  return { host: 'registry.npmjs.org', port: 443, what: 'the npm registry' };
}

/**
 * The periodic check behind `runtime.egress`: every `intervalMs` a box of its own (a uid reserved
 * below the projects' range, no port, a throwaway folder) tries the target; `before` runs first (the
 * sandbox puts its firewall rules back where a restarted firewall removed them).
 */
export class EgressMonitor {
  private last: EgressStatus | undefined;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<EgressStatus> | null = null;

  constructor(
    private readonly driver: RuntimeDriver,
    private readonly target: EgressTarget,
    /** `boxUid`: the uid the check's box runs as (the one just below the server's project uids). */
    private readonly opts: { intervalMs: number; boxUid: number; before?: () => Promise<unknown>; resolvConf?: () => string },
  ) {}

  status(): EgressStatus | undefined {
    return this.last;
  }

  start(): void {
    if (this.timer) return;
    void this.check();
    this.timer = setInterval(() => void this.check(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Resolves when no check is in flight (its box is gone). */
  async idle(): Promise<void> {
    await this.running?.catch(() => {});
  }

  /** One check now (a check in flight is shared). */
  check(): Promise<EgressStatus> {
    this.running ??= this.checkOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async checkOnce(): Promise<EgressStatus> {
    const checkedAt = new Date().toISOString();
    let status: EgressStatus;
    try {
      await this.opts.before?.();
      const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-egress-'));
      chmodSync(dir, 0o755);
      let box: Box | null = null;
      try {
        const base = this.opts.boxUid;
        box = await this.driver.open({ kind: 'build', projectId: 'egress-check', name: `egress-check-${process.pid}`, identity: { uid: base, gid: base }, limits: { cpuCores: 0.5, memoryMb: 256 }, appDir: dir, runtime: 'node' });
        const boxResult = await boxReaches(box, this.target, { cwd: dir, path: this.driver.boxPath ?? '/usr/local/bin:/usr/bin:/bin', node: this.driver.boxPath === undefined ? process.execPath : null });
        if (boxResult.ok) status = { ok: true, checkedAt };
        else {
          const hostResult = await hostReaches(this.target);
          const why = explainEgress(this.target, boxResult, hostResult, this.opts.resolvConf?.() ?? '');
          status = {
            ok: false,
            checkedAt,
            error: why ?? (hostResult.ok ? `the check could not run in a box (${boxResult.code})` : `${this.target.host}:${this.target.port} is not reachable from this server either (${hostResult.code}): the host has no way out to it`),
          };
        }
      } finally {
        await box?.dispose().catch(() => {});
        rmSync(dir, { recursive: true, force: true });
      }
    } catch (e) {
      status = { ok: false, checkedAt, error: `the egress check could not open a box: ${(e as Error).message}` };
    }
    this.last = status;
    return status;
  }
}

/**
 * Before a build's install step: the box must reach the registry its plan uses. Fails at once naming
 * the host and the likely cause when the box cannot and the server can; when the server cannot either,
 * says so and lets the step run (an offline host, a vendored or cached install may not need it).
 */
export async function checkInstallEgress(
  box: Box,
  target: EgressTarget,
  opts: { cwd: string; path: string; node: string | null; resolvConf: string },
  note: (line: string) => void,
): Promise<string | null> {
  const inBox = await boxReaches(box, target, opts);
  if (inBox.ok) return null;
  if (inBox.stage === 'run') {
    note(`could not check the way to ${target.host} from the build's sandbox (no node or python3 in it); the install runs anyway`);
    return null;
  }
  const fromHost = await hostReaches(target);
  const why = explainEgress(target, inBox, fromHost, opts.resolvConf);
  if (why) return why;
  note(`${target.host}:${target.port} (${target.what}) is not reachable from this server either (${fromHost.ok ? 'ok' : fromHost.code}); the install runs anyway`);
  return null;
}

/** What the runtime holds of its egress check: the last answer, and a stop. */
export interface EgressCheck {
  status(): EgressStatus | undefined;
  /** Stops the timer and waits for a check in flight (its box is gone then). */
  stop(): Promise<void>;
}

/**
 * `runtime.egress`, checked every `intervalMs`: from inside a box of its own under the sandbox (whose
 * traffic the host forwards; its firewall rules are put back first), from the server itself under the
 * other drivers (the process runtime is the host's network; the engine forwards containers' traffic).
 * Null when BERTH_EGRESS_CHECK is `off`.
 */
export function startEgressCheck(driver: RuntimeDriver, intervalMs: number, boxUid: number, env: NodeJS.ProcessEnv = process.env): EgressCheck | null {
  const target = egressCheckTarget(env);
  if (!target) return null;
  if (driver.name === 'sandbox' && driver.ensureEgressRules) {
    const monitor = new EgressMonitor(driver, target, { intervalMs, boxUid, before: () => driver.ensureEgressRules!() });
    monitor.start();
    return {
      status: () => monitor.status(),
      stop: async () => {
        monitor.stop();
        await monitor.idle();
      },
    };
  }
  let last: EgressStatus | undefined;
  const probe = async () => {
    const r = await hostReaches(target);
    const checkedAt = new Date().toISOString();
    last = r.ok ? { ok: true, checkedAt } : { ok: false, checkedAt, error: `${target.host}:${target.port} (${target.what}) is not reachable from this server: ${r.code}` };
  };
  void probe();
  const timer = setInterval(() => void probe(), intervalMs);
  timer.unref();
  return {
    status: () => last,
    stop: async () => clearInterval(timer),
  };
}
