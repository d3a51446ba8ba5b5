import { spawn } from 'node:child_process';
import type { BoxProcess } from './driver.js';

/**
 * Starts `argv` (an argument array, never a shell string) as the leader of a new process group and
 * wraps it as a BoxProcess. The group lets a driver without cgroups still signal the whole tree.
 * `fds`, when given, are what the process reads from its fd 3, 4, ... (then end of file): the
 * sandbox hands bubblewrap its seccomp filter (fd 3) and its own arguments (fd 4) this way.
 * `beforeInput`, when given, runs once the process exists and before any of those bytes is written:
 * the sandbox moves the launcher into the box's cgroup there, while bubblewrap still waits for its
 * arguments (it reads fd 4 to its end before it creates anything). When it throws, the process is
 * killed unfed and `exited` carries that error.
 */
export function spawnBoxProcess(argv: string[], cwd: string, env: Record<string, string>, fds: Buffer[] = [], beforeInput?: (pid: number) => void): BoxProcess {
  if (argv.length === 0) throw new Error('empty command');
  const stdio: ('ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe', ...fds.map(() => 'pipe' as const)];
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio });
  let refused: Error | null = null;
  if (beforeInput && child.pid) {
    try {
      beforeInput(child.pid);
    } catch (e) {
      refused = e as Error;
      killGroup(child.pid, 'SIGKILL');
    }
  }
  fds.forEach((bytes, i) => {
    const extra = child.stdio[3 + i];
    if (!extra || !('end' in extra)) return;
    // A launcher that exits before reading it must not raise EPIPE in the server. Once written, the
    // bytes wait in the launcher's end of the socket pair: the server's end is closed at once.
    extra.on('error', () => {});
    if (refused) extra.destroy();
    else extra.end(bytes, () => extra.destroy());
  });
  const exited = new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('close', (code, signal) => resolve(refused ? { code, signal, error: refused } : { code, signal }));
  });
  return {
    pid: child.pid,
    stdout: child.stdout,
    stderr: child.stderr,
    exited,
  };
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
