import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Berth's boxes route through the host (netns.ts), so their traffic crosses the host's `forward`
 * hook, where every firewall of the host has its say: in nftables an `accept` in one base chain does
 * not stop another base chain at the same hook from dropping the packet. Docker Engine sets the
 * iptables `FORWARD` policy to DROP, ufw does the same by default, firewalld rejects what no zone
 * allows. Berth's own `inet berth` table decides what a box may reach (its drops are final); the
 * shims here only tell the other firewalls to let through what that table already let pass:
 *
 * - iptables (Docker, ufw, plain; iptables-nft or legacy, whichever `iptables` is): a chain of its
 *   own, `BERTH-FORWARD`, accepting packets from `bth*` and replies to them, jumped to from Docker's
 *   `DOCKER-USER` (the chain Docker keeps for its users and evaluates first) when it exists, else
 *   from the top of `FORWARD`.
 * - firewalld: the `bth+` interfaces in the `trusted` zone (runtime configuration only, never
 *   permanent).
 *
 * `ensure()` adds what is missing (called at start and by the periodic egress check, so a restarted
 * dockerd or a reloaded firewall gets the rules back); `remove()` takes every one of them away again.
 */

export const BERTH_CHAIN = 'BERTH-FORWARD';
const IF_MATCH = 'bth+';
const SBIN = ['/usr/sbin', '/sbin', '/usr/bin', '/bin', '/usr/local/sbin'];

function which(name: string): string | null {
  for (const d of SBIN) {
    const p = path.join(d, name);
    if (existsSync(p)) return p;
  }
  return null;
}

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

function run(bin: string, args: string[], timeoutMs = 10_000): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      if (out.length < 64_000) out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      if (err.length < 4000) err += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, out, err: e.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

export interface FirewallReport {
  /** Which other firewalls were found and told to let boxes through (`iptables:DOCKER-USER`, `iptables:FORWARD`, `firewalld`). */
  shims: string[];
  /** What could not be done (the egress check reports it when boxes cannot reach out). */
  problems: string[];
}

export class HostFirewall {
  private readonly iptables: string | null;
  private readonly firewallCmd: string | null;
  private lastReport: FirewallReport = { shims: [], problems: [] };
  private readonly chain: string;

  constructor(bins: { iptables?: string | null; firewallCmd?: string | null; chain?: string } = {}) {
    this.chain = bins.chain ?? BERTH_CHAIN;
    this.iptables = bins.iptables === undefined ? which('iptables') : bins.iptables;
    this.firewallCmd = bins.firewallCmd === undefined ? which('firewall-cmd') : bins.firewallCmd;
  }

  get report(): FirewallReport {
    return this.lastReport;
  }

  /** Adds Berth's rules where they are missing; answers what is in place. */
  async ensure(): Promise<FirewallReport> {
    const report: FirewallReport = { shims: [], problems: [] };
    if (this.iptables) await this.ensureIptables(this.iptables, report);
    if (this.firewallCmd && (await this.firewalldRunning(this.firewallCmd))) {
      const r = await run(this.firewallCmd, ['--zone=trusted', `--add-interface=${IF_MATCH}`]);
      if (r.code === 0 || /ALREADY_ENABLED|ZONE_CONFLICT/.test(r.err + r.out)) report.shims.push('firewalld');
      else report.problems.push(`firewalld refused the trusted zone for ${IF_MATCH}: ${(r.err || r.out).trim().slice(0, 200)}`);
    }
    this.lastReport = report;
    return report;
  }

  private async ensureIptables(bin: string, report: FirewallReport): Promise<void> {
    // No filter table (no iptables at all in this kernel's view): nothing of it can drop either.
    const forward = await run(bin, ['-w', '-t', 'filter', '-S', 'FORWARD']);
    if (forward.code !== 0) return;
    const exists = (await run(bin, ['-w', '-t', 'filter', '-S', this.chain])).code === 0;
    if (!exists) {
      const made = await run(bin, ['-w', '-t', 'filter', '-N', this.chain]);
      if (made.code !== 0) {
        report.problems.push(`iptables -N ${this.chain} failed: ${made.err.trim().slice(0, 200)}`);
        return;
      }
    }
    const want = [
      ['-A', this.chain, '-i', IF_MATCH, '-j', 'ACCEPT'],
      ['-A', this.chain, '-o', IF_MATCH, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'],
    ];
    let complete = true;
    for (const rule of want) if ((await run(bin, ['-w', '-t', 'filter', '-C', ...rule.slice(1)])).code !== 0) complete = false;
    if (!complete) {
      await run(bin, ['-w', '-t', 'filter', '-F', this.chain]);
      for (const rule of want) {
        const r = await run(bin, ['-w', '-t', 'filter', ...rule]);
        if (r.code !== 0) report.problems.push(`iptables ${rule.join(' ')} failed: ${r.err.trim().slice(0, 200)}`);
      }
    }
    const dockerUser = (await run(bin, ['-w', '-t', 'filter', '-S', 'DOCKER-USER'])).code === 0;
    const chain = dockerUser ? 'DOCKER-USER' : 'FORWARD';
    const has = (await run(bin, ['-w', '-t', 'filter', '-C', chain, '-j', this.chain])).code === 0;
    if (!has) {
      const r = await run(bin, ['-w', '-t', 'filter', '-I', chain, '1', '-j', this.chain]);
      if (r.code !== 0) {
        report.problems.push(`iptables -I ${chain} failed: ${r.err.trim().slice(0, 200)}`);
        return;
      }
    }
    report.shims.push(`iptables:${chain}`);
  }

  private async firewalldRunning(bin: string): Promise<boolean> {
    const r = await run(bin, ['--state'], 5000);
    return r.code === 0 && r.out.trim() === 'running';
  }

  /** Takes every rule of Berth's away again (server shutdown, when no other Berth on the machine uses them). */
  async remove(): Promise<void> {
    const bin = this.iptables;
    if (bin) {
      for (const chain of ['DOCKER-USER', 'FORWARD']) {
        // -D removes one match at a time; a bounded loop removes duplicates too.
        for (let i = 0; i < 8; i++) if ((await run(bin, ['-w', '-t', 'filter', '-D', chain, '-j', this.chain])).code !== 0) break;
      }
      await run(bin, ['-w', '-t', 'filter', '-F', this.chain]);
      await run(bin, ['-w', '-t', 'filter', '-X', this.chain]);
    }
    if (this.firewallCmd && (await this.firewalldRunning(this.firewallCmd))) {
      await run(this.firewallCmd, ['--zone=trusted', `--remove-interface=${IF_MATCH}`]);
    }
    this.lastReport = { shims: [], problems: [] };
  }
}
