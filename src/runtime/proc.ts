import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1 (the kernel picks; the small race until the app binds is accepted). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface SpawnGroupOptions {
  cwd: string;
  env: Record<string, string>;
}

/**
 * Spawns `argv` (an argument array, never a shell string) as the leader of a new process group,
 * so the whole tree (npm -> node -> workers) can be signalled at once.
 */
export function spawnGroup(argv: string[], opts: SpawnGroupOptions): ChildProcess {
  if (argv.length === 0) throw new Error('empty command');
  return spawn(argv[0]!, argv.slice(1), {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

/**
 * Graceful stop of a group: SIGTERM, then SIGKILL after `graceMs` if the leader has not exited
 * (and any stragglers of the group after that).
 */
export async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  const pid = child.pid;
  if (!pid) return;
  const exited = child.exitCode !== null || child.signalCode !== null;
  const waitExit = exited
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  killGroup(pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    waitExit.then(() => false),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(true), graceMs);
    }),
  ]);
  if (timer) clearTimeout(timer);
  if (timedOut) {
    killGroup(pid, 'SIGKILL');
    await Promise.race([waitExit, new Promise((r) => setTimeout(r, 2000))]);
  }
  // Children that ignored the leader's death.
  if (groupAlive(pid)) {
    await new Promise((r) => setTimeout(r, 100));
    if (groupAlive(pid)) killGroup(pid, 'SIGKILL');
  }
}
