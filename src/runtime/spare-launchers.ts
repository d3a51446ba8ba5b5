import { startLauncher, type Launcher } from './box-process.js';

/** Commands remembered at most (one per app port in use; the oldest goes). */
const MAX_HINTS = 64;

/**
 * Launchers started ahead of need in the sandbox's spare network namespaces (netns.ts `prepareSpare`):
 * `nsenter --net=<spare> -- bwrap --args 4 -- <the command>`, waiting for its arguments on fd 4. bwrap
 * reads them to their end before it creates anything, so a waiting launcher is one idle process in an
 * empty namespace, outside every box. A wake that takes the spare namespace finds its launcher already
 * forked and exec'd: the server's own fork (10-29 ms of a ~130 MB process) and two execs leave the
 * wake's path (docs/benchmarks.md, docs/decisions.md "Launchers started ahead of need").
 *
 * Which command: the one the app box last released with that port ran (`hint`), the likeliest next
 * start there (an app that went to sleep and wakes, a restart). A launcher is used only when the
 * command a box starts is exactly its own (the uid switch and the command are in it; the mounts, the
 * environment and the seccomp filter come through fd 3 and 4 as for any launch), else it is killed
 * and the box starts its own. A launcher that is never fed and loses the server reads an empty fd 4:
 * bwrap then builds an empty root with nothing in it to exec, and exits.
 */
export class SpareLaunchers {
  /** By port: the command tail (what follows bwrap's `--`) of the app box that started last with it. */
  private readonly hints = new Map<number, string[]>();
  /** By namespace path: the launcher waiting in it. */
  private readonly waiting = new Map<string, Launcher>();

  constructor(
    /** The launch chain up to bwrap's `--` for a namespace. */
    private readonly head: (nsPath: string) => string[],
    /** How many descriptors a launch is fed (fd 3, 4, ...). */
    private readonly fdCount: number,
  ) {}

  /** An app box with `port` starts `tail`: the next spare for that port waits with it. */
  hint(port: number, tail: string[]): void {
    this.hints.delete(port);
    this.hints.set(port, tail);
    if (this.hints.size > MAX_HINTS) this.hints.delete(this.hints.keys().next().value!);
  }

  /** A spare namespace is ready: a launcher for the command last started with its port waits in it. */
  prepare(nsPath: string, port: number | null | undefined): void {
    this.drop(nsPath);
    const tail = port ? this.hints.get(port) : undefined;
    if (!tail) return;
    try {
      this.waiting.set(nsPath, startLauncher([...this.head(nsPath), ...tail], '/', {}, this.fdCount));
    } catch {
      /* only a head start: the box starts its own */
    }
  }

  /** The launcher waiting in `nsPath`, taken, when it is alive and exactly `argv`; any other is killed. */
  take(nsPath: string, argv: readonly string[]): Launcher | null {
    const l = this.waiting.get(nsPath);
    if (!l) return null;
    this.waiting.delete(nsPath);
    if (l.alive() && l.argv.length === argv.length && l.argv.every((a, i) => a === argv[i])) return l;
    l.discard();
    return null;
  }

  /** The namespace goes (released, or handed to a box that will not use its launcher): its launcher is killed. */
  drop(nsPath: string): void {
    this.waiting.get(nsPath)?.discard();
    this.waiting.delete(nsPath);
  }

  /** How many wait now (for tests and the bench). */
  count(): number {
    return this.waiting.size;
  }

  close(): void {
    for (const l of this.waiting.values()) l.discard();
    this.waiting.clear();
  }
}
