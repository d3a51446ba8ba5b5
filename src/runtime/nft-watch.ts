import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Knows, without starting a process per box, whether Berth's host rules are still in place: one
 * long-lived `nft monitor destroy` (netlink events, printed one per line) reports every table, chain
 * or set removed on the machine. A removal of the watched table or of anything in it (another Berth
 * that stopped, `nft flush ruleset` from a firewall reload or `systemctl restart nftables`) calls
 * `removed`, which puts the rules back at once, for the boxes already running as well as the next one.
 *
 * `intact` is true only while the monitor runs and nothing was removed since the last check that saw
 * the rules in place (`confirm`); the network pool checks with a process (`nft list ...`) whenever it
 * is false. The monitor is known to listen once it has reported the removal of a marker table it
 * made itself: removals before that point are caught by the check that follows it.
 */
export class NftWatch {
  private child: ChildProcess | null = null;
  /** Bumped by every removal reported: a check that started before one cannot confirm. */
  private removals = 0;
  private listening = false;
  private confirmed = false;
  private stopped = false;
  private restarts = 0;
  private marker: string;

  constructor(
    /** The program and leading arguments that run nft (tests run it in a namespace of their own). */
    private readonly nft: string[],
    /** `inet berth`: family and name of the watched table. */
    private readonly table: string,
    private readonly hooks: {
      /** Runs `nft` with arguments (rejects on failure). */
      run(args: string[]): Promise<void>;
      /** Whether the rules are in place now (the process check). */
      check(): Promise<boolean>;
      /** Something of the table was removed: put it back (then call `confirm`). */
      removed(): void;
    },
  ) {
    this.marker = `${table.split(' ')[1]}_watch_${process.pid}`;
  }

  /** Nothing of the table was removed since the rules were last seen in place, and the monitor runs. */
  get intact(): boolean {
    return this.listening && this.confirmed && !this.stopped;
  }

  /** Starts the monitor; resolves once it listens and the rules were checked (or it could not start). */
  async start(): Promise<void> {
    if (this.stopped || this.child) return;
    const [bin, ...pre] = this.nft;
    const child = spawn(bin!, [...pre, 'monitor', 'destroy'], { stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    this.child = child;
    const family = this.table.split(' ')[0];
    const listening = new Promise<void>((resolve) => {
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        if (line.startsWith(`delete table ${family} ${this.marker}`)) {
          this.listening = true;
          return resolve();
        }
        if (this.concerns(line)) this.removal();
      });
      child.once('close', () => resolve());
    });
    let ended = false;
    const onEnd = (restart: boolean) => {
      if (ended) return;
      ended = true;
      if (this.child === child) this.child = null;
      this.listening = false;
      this.confirmed = false;
      if (this.stopped || !restart) return;
      // Restarted a few times (an nft that cannot monitor exits at once: then checks stay per box).
      if (++this.restarts <= 5) setTimeout(() => void this.start(), 1000 * this.restarts).unref();
    };
    // A program that cannot start emits `error` (and maybe no `exit`): checks stay per box.
    child.once('error', () => onEnd(false));
    child.once('exit', () => onEnd(true));
    // A table of its own, made and removed: its removal, once reported, says the monitor listens.
    await this.hooks.run(['add', 'table', family!, this.marker]).catch(() => {});
    await this.hooks.run(['delete', 'table', family!, this.marker]).catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([listening, new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
    if (this.listening) await this.confirm();
  }

  /** Checks the rules with a process; they count as intact if in place and nothing was removed meanwhile. */
  async confirm(): Promise<boolean> {
    const before = this.removals;
    const ok = await this.hooks.check().catch(() => false);
    if (ok && this.removals === before) this.confirmed = true;
    return ok;
  }

  /** Stops the monitor (before the server removes the table itself). */
  stop(): void {
    this.stopped = true;
    this.child?.kill('SIGTERM');
    this.child = null;
  }

  /** A line of `nft monitor destroy` about the watched table or a chain, set or rule in it? */
  private concerns(line: string): boolean {
    // `delete table inet berth`, `delete chain inet berth forward`, `delete set inet berth svc_pairs`;
    // rules deleted by a chain flush come back in the same transaction when Berth rewrites its rules.
    const m = /^delete (table|chain|set) (\S+ \S+)/.exec(line);
    return !!m && m[2] === this.table;
  }

  private removal(): void {
    this.removals++;
    this.confirmed = false;
    this.hooks.removed();
  }
}
