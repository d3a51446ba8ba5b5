import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseOutboundAllow } from '../../lib/outbound.js';
import type { DockerEngine } from './engine.js';

/**
 * The docker runtime's host firewall (contract 18, issue 33): one nftables table, `inet berth-docker`,
 * rewritten whole (atomic, idempotent; every Berth on the machine writes the same), for the project
 * bridges (`bbr*`) and the engine's default bridge (`docker0`), where BuildKit runs a Dockerfile's
 * `RUN` steps (it takes no other network: only default, host or none).
 * - input: new connections from those bridges to the host itself (any of its addresses, the
 *   gateway's, 0.0.0.0 listeners) are dropped; answers to connections the host opened pass.
 * - forward: new connections from them to link-local (169.254.0.0/16, fe80::/10), loopback,
 *   private (RFC 1918, CGNAT 100.64.0.0/10, ULA fc00::/7), unspecified and multicast destinations are
 *   dropped, unless an address or CIDR of `BERTH_OUTBOUND_ALLOW` lists them; DNS (port 53) to the
 *   host's own non-loopback nameservers passes (the engine's resolver forwards from the container).
 *   Traffic that stays on the bridge it came from passes (a project's own containers; Docker's own
 *   rules isolate one network from another). A drop here is final whatever Docker's chains say.
 */

/** Destinations no box or container opens connections to unless BERTH_OUTBOUND_ALLOW lists them (the sandbox's too: netns.ts). */
export const BLOCKED_V4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16', '224.0.0.0/4', '240.0.0.0/4'];
const BLOCKED_V6 = ['::/128', '::1/128', '::ffff:0:0/96', 'fc00::/7', 'fe80::/10', 'ff00::/8'];
/** The engine's default bridge when it does not say (`com.docker.network.bridge.name` of `bridge`). */
const DEFAULT_BRIDGE = 'docker0';

export interface EgressRuleInput {
  /** The engine's default bridge interface (BuildKit's RUN steps). */
  defaultBridge: string;
  /** `BERTH_OUTBOUND_ALLOW`'s addresses and CIDRs (host names cannot be firewall rules: left out). */
  allow: string[];
  /** The host's non-loopback nameservers. */
  nameservers: string[];
}

const v6 = (cidr: string) => isIP(cidr.split('/')[0]!) === 6;
const set = (items: string[]) => `{ ${items.join(', ')} }`;

/** The whole table, as `nft -f` reads it. */
export function egressRules(input: EgressRuleInput): string {
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(input.defaultBridge)) throw new Error(`the engine's default bridge "${input.defaultBridge}" is not an interface name`);
  const ifaces = ['"bbr*"', `"${input.defaultBridge}"`];
  const input4 = [];
  const fwd = [];
  for (const i of ifaces) {
    input4.push(`    iifname ${i} ct state established,related accept`, `    iifname ${i} drop`);
    fwd.push(`    iifname ${i} ct state established,related accept`, `    iifname ${i} oifname ${i} accept`);
    const ns4 = input.nameservers.filter((a) => isIP(a) === 4);
    const ns6 = input.nameservers.filter((a) => isIP(a) === 6);
    if (ns4.length) fwd.push(`    iifname ${i} ip daddr ${set(ns4)} meta l4proto { tcp, udp } th dport 53 accept`);
    if (ns6.length) fwd.push(`    iifname ${i} ip6 daddr ${set(ns6)} meta l4proto { tcp, udp } th dport 53 accept`);
    const allow4 = input.allow.filter((c) => !v6(c));
    const allow6 = input.allow.filter(v6);
    if (allow4.length) fwd.push(`    iifname ${i} ip daddr ${set(allow4)} accept`);
    if (allow6.length) fwd.push(`    iifname ${i} ip6 daddr ${set(allow6)} accept`);
    fwd.push(`    iifname ${i} ip daddr ${set(BLOCKED_V4)} drop`, `    iifname ${i} ip6 daddr ${set(BLOCKED_V6)} drop`);
  }
  return `table inet berth-docker
delete table inet berth-docker
table inet berth-docker {
  chain input {
    type filter hook input priority -10; policy accept;
${input4.join('\n')}
  }
  chain forward {
    type filter hook forward priority -10; policy accept;
${fwd.join('\n')}
  }
}
`;
}

/** The non-loopback nameservers of a resolv.conf text. */
export function nameserversOf(text: string): string[] {
  return [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!.replace(/%.*$/, '')).filter((a) => isIP(a) && !a.startsWith('127.') && a !== '::1');
}

/** What the rules are made of, on this host: the engine's default bridge, the allow list, the nameservers. */
export async function egressRuleInput(engine: DockerEngine, env: NodeJS.ProcessEnv): Promise<EgressRuleInput> {
  let defaultBridge = DEFAULT_BRIDGE;
  try {
    const n = (await engine.api.getNetwork('bridge').inspect()) as { Options?: Record<string, string> };
    defaultBridge = n.Options?.['com.docker.network.bridge.name'] || DEFAULT_BRIDGE;
  } catch {
    /* no default bridge (dockerd --bridge=none): docker0 matches nothing */
  }
  let resolv = '';
  try {
    resolv = readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    /* none */
  }
  let allow: string[] = [];
  try {
    allow = parseOutboundAllow(env.BERTH_OUTBOUND_ALLOW).filter((e) => isIP(e.split('/')[0]!) !== 0);
  } catch {
    /* config checks it at start and names the entry */
  }
  return { defaultBridge, allow, nameservers: nameserversOf(resolv) };
}

let installed: { nft: string; done: Promise<void> } | null = null;

/** Installs the table once per process (again after a failure); rejects naming what failed. */
export function installEgressRules(nft: string, engine: DockerEngine, env: NodeJS.ProcessEnv): Promise<void> {
  if (installed?.nft === nft) return installed.done;
  const done = (async () => runNft(nft, egressRules(await egressRuleInput(engine, env))))().catch((e) => {
    installed = null;
    throw new Error(`could not install the host firewall rules of the docker runtime: ${(e as Error).message}`);
  });
  installed = { nft, done };
  return done;
}

function runNft(nft: string, rules: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(nft, ['-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 2000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`nft failed: ${err.trim() || `exit ${code}`}`))));
    child.stdin!.end(rules);
  });
}
