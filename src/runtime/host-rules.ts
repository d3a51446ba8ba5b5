import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isIP } from 'node:net';
import { BLOCKED_V4, nameserversOf } from './docker/egress-rules.js';
import { PAIRS_SET } from './service-links.js';
import { parseOutboundAllow } from '../lib/outbound.js';

/** The host side of the sandboxes' networks (netns.ts): the `inet berth` table's rules and the boxes' resolver. */

export const SUBNET_PREFIX = '10.88';
export const CLAIMS_DIR = '/run/berth-net';

/** What the forward rules let through despite the blocked ranges: the boxes' nameservers (DNS only) and BERTH_OUTBOUND_ALLOW's addresses. */
export interface EgressExceptions {
  nameservers: string[];
  allow: string[];
}

/** The exceptions on this host: the nameservers boxes use, and the allow list's IPv4 addresses and CIDRs. */
export function egressExceptions(env: NodeJS.ProcessEnv = process.env, resolvConf = boxResolvConf() ?? '/etc/resolv.conf'): EgressExceptions {
  let text = '';
  try {
    text = readFileSync(resolvConf, 'utf8');
  } catch {
    /* none */
  }
  let allow: string[] = [];
  try {
    allow = parseOutboundAllow(env.BERTH_OUTBOUND_ALLOW).filter((e) => isIP(e.split('/')[0]!) === 4);
  } catch {
    /* config names the bad entry at start */
  }
  return { nameservers: nameserversOf(text).filter((a) => isIP(a) === 4), allow };
}

/**
 * The host-wide rules: one table, whose chains are emptied and filled again atomically by whichever
 * server starts. The set of service pairs (service-links.ts) is declared, never emptied: its elements
 * are other live servers' boxes. Boxes reach each other only as a pair of that set (a project's app or
 * build to its own service's port), and replies.
 */
export function hostRules(serverUid: number, except: EgressExceptions): string {
  const pool = `${SUBNET_PREFIX}.0.0/16`;
  const set = (items: string[]) => `{ ${items.join(', ')} }`;
  const exceptions = [
    ...(except.nameservers.length ? [`    iifname "bth*" ip daddr ${set(except.nameservers)} meta l4proto { tcp, udp } th dport 53 accept`] : []),
    ...(except.allow.length ? [`    iifname "bth*" ip daddr ${set(except.allow)} accept`] : []),
  ];
  const chains = { input: 'filter hook input priority -10', forward: 'filter hook forward priority -10', output: 'filter hook output priority -10', postrouting: 'nat hook postrouting priority 100' };
  return `table inet berth {
  set ${PAIRS_SET} { type ipv4_addr . ipv4_addr . inet_service; }
${Object.entries(chains).map(([name, hook]) => `  chain ${name} { type ${hook}; policy accept; }`).join('\n')}
}
${Object.keys(chains).map((name) => `flush chain inet berth ${name}`).join('\n')}
table inet berth {
  chain input {
    iifname "bth*" ct state established,related accept
    iifname "bth*" drop
  }
  chain forward {
    iifname "bth*" oifname "bth*" ct state established,related accept
    iifname "bth*" oifname "bth*" ip saddr . ip daddr . tcp dport @${PAIRS_SET} accept
    iifname "bth*" oifname "bth*" drop
    iifname "bth*" ip daddr { 169.254.0.0/16, ${pool} } drop
${exceptions.join('\n')}${exceptions.length ? '\n' : ''}    iifname "bth*" ip daddr ${set(BLOCKED_V4)} drop
    iifname "bth*" accept
    oifname "bth*" ct state established,related accept
    oifname "bth*" drop
  }
  chain output {
    ip daddr ${pool} ct state new meta skuid != ${serverUid} drop
  }
  chain postrouting {
    ip saddr ${pool} oifname != "bth*" masquerade
  }
}
`;
}

/**
 * The resolver configuration boxes get. A box has its own network, so a nameserver on the host's
 * loopback (systemd-resolved's 127.0.0.53, a local dnsmasq) is out of its reach: then the upstream
 * servers systemd-resolved lists (`/run/systemd/resolve/resolv.conf`) are written into a file of
 * Berth's that boxes see as `/etc/resolv.conf`. Null: the host's own file works as it is.
 */
export function boxResolvConf(files = { etc: '/etc/resolv.conf', resolved: '/run/systemd/resolve/resolv.conf', out: path.join(CLAIMS_DIR, 'resolv.conf') }): string | null {
  const servers = (text: string) => [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!);
  const loopback = (a: string) => a.startsWith('127.') || a === '::1';
  let etc = '';
  try {
    etc = readFileSync(files.etc, 'utf8');
  } catch {
    return null;
  }
  const own = servers(etc);
  if (own.length === 0 || !own.every(loopback)) return null;
  let upstream: string[] = [];
  try {
    upstream = servers(readFileSync(files.resolved, 'utf8')).filter((a) => !loopback(a));
  } catch {
    /* no systemd-resolved */
  }
  if (upstream.length === 0) return null;
  const search = /^\s*(search|domain)\s+.*$/m.exec(etc)?.[0];
  mkdirSync(path.dirname(files.out), { recursive: true, mode: 0o700 });
  writeFileSync(files.out, [`# written by Berth: the host's resolver listens on its loopback, which boxes cannot reach`, ...upstream.slice(0, 3).map((a) => `nameserver ${a}`), ...(search ? [search] : []), ''].join('\n'), { mode: 0o644 });
  return files.out;
}

