import { spawn } from 'node:child_process';
import type { BoxProcess } from './driver.js';

/**
 * A started process that has not been given its input yet (fd 3, 4, ... are open and empty): bubblewrap
 * waits for its arguments on fd 4 and does nothing before. `feed` hands it the bytes and wraps it as a
 * BoxProcess; a launcher that is never fed is `discard`ed. The sandbox starts some ahead of need
 * (spare-launchers.ts), so a wake does not pay for the server's fork.
 */
export interface Launcher {
  readonly pid: number | undefined;
  readonly argv: readonly string[];
  /** It has not exited (a launcher started ahead of need may have been killed meanwhile). */
  alive(): boolean;
  /**
   * `fds` are what the process reads from its fd 3, 4, ... (then end of file). `beforeInput`, when
   * given, runs before any of those bytes is written: the sandbox moves the launcher into the box's
   * cgroup there. When it throws, the process is killed unfed and `exited` carries that error.
   */
  feed(fds: Buffer[], beforeInput?: (pid: number) => void): BoxProcess;
  /** Kills it unfed (a spare that is not needed). */
  discard(): void;
}

/**
 * Starts `argv` (an argument array, never a shell string) as the leader of a new process group, with
 * `fdCount` more descriptors (3, 4, ...) to be written later by `feed`. The group lets a driver without
 * cgroups still signal the whole tree.
 */
export function startLauncher(argv: string[], cwd: string, env: Record<string, string>, fdCount: number): Launcher {
  if (argv.length === 0) throw new Error('empty command');
  const stdio: ('ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe', ...Array.from({ length: fdCount }, () => 'pipe' as const)];
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio });
  let ended = false;
  let startError: Error | null = null;
  // Listened to from the start: a launcher that waits for its input may be killed before anyone feeds it.
  const closed = new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
    child.once('error', (error) => {
      ended = true;
      startError = error;
      resolve({ code: null, signal: null, error });
    });
    child.once('exit', () => (ended = true));
    child.once('close', (code, signal) => {
      ended = true;
      resolve({ code, signal });
    });
  });
  let fed = false;
  return {
    pid: child.pid,
    argv,
    alive: () => !ended && !startError && child.exitCode === null && child.signalCode === null,
    discard: () => {
      if (fed) return;
      fed = true;
      killGroup(child.pid, 'SIGKILL');
      // Nobody reads them: without this their descriptors would stay open until collected.
      for (const s of child.stdio) (s as { destroy?: () => void } | null)?.destroy?.();
    },
    feed: (fds, beforeInput) => {
      if (fed) throw new Error('a launcher is fed once');
      fed = true;
      let refused: Error | null = null;
      if (beforeInput && child.pid) {
        try {
          beforeInput(child.pid);
        } catch (e) {
          refused = e as Error;
          killGroup(child.pid, 'SIGKILL');
        }
      }
      for (let i = 0; i < fdCount; i++) {
        const extra = child.stdio[3 + i];
        if (!extra || !('end' in extra)) continue;
        // A launcher that exits before reading it must not raise EPIPE in the server. Once written, the
        // bytes wait in the launcher's end of the socket pair: the server's end is closed at once.
        extra.on('error', () => {});
        const bytes = fds[i];
        if (refused || !bytes) extra.destroy();
        else extra.end(bytes, () => extra.destroy());
      }
      const exited = closed.then((r) => (refused ? { ...r, error: refused } : r));
      return { pid: child.pid, stdout: child.stdout, stderr: child.stderr, exited };
    },
  };
}

/**
 * Starts `argv` and gives it its input at once (`startLauncher`, then `feed`). `fds`, when given, are
 * what the process reads from its fd 3, 4, ...: the sandbox hands bubblewrap its seccomp filter (fd 3)
 * and its own arguments (fd 4) this way.
 */
export function spawnBoxProcess(argv: string[], cwd: string, env: Record<string, string>, fds: Buffer[] = [], beforeInput?: (pid: number) => void): BoxProcess {
  return startLauncher(argv, cwd, env, fds.length).feed(fds, beforeInput);
}

/** Sends `signal` to the process group led by `pid`; false when it is gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    try {
      process.kill(pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** Is any process of the group led by `pid` still alive? */
export function groupAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
