import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

export class LockHeldError extends Error {
  constructor(
    readonly pid: number,
    readonly file: string,
    /** Set for an instance lock (PostgreSQL): the instance's name. */
    readonly instance?: string,
  ) {
    const who = `another berth server (${pid > 0 ? `pid ${pid}` : 'pid unknown'})`;
    super(
      instance === undefined
        ? `${who} is already using this data dir (${path.dirname(file)}); stop it first or pass another --data-dir`
        : `${who} is already running as instance "${instance}" on this data dir (${path.dirname(path.dirname(file))}); stop it first, or give each instance its own BERTH_INSTANCE_NAME`,
    );
    this.name = 'LockHeldError';
  }
}

/** util-linux's `flock` program, found on PATH. */
const FLOCK = 'flock';

/**
 * Takes an exclusive, non-blocking flock(2) on the open file `fd`, or says it is held. Node has no
 * flock binding, so a short-lived `flock --exclusive --nonblock 3` child gets `fd` as its fd 3: a
 * flock belongs to the open file description, which the child shares with this process, so the lock
 * stays with this process's `fd` after the child exits, and the kernel drops it when this process
 * closes the fd or dies (also on kill -9). Node opens files close-on-exec, so apps and builds this
 * server spawns never inherit the fd (and never keep the lock alive).
 */
function tryFlock(fd: number): 'taken' | 'held' {
  const r = spawnSync(FLOCK, ['--exclusive', '--nonblock', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd], timeout: 10000 });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT'
        ? `the data-dir lock needs the flock program (util-linux) and it was not found (${FLOCK}); install util-linux`
        : `could not run ${FLOCK} to lock the data dir: ${r.error.message}`,
    );
  }
  if (r.status === 0) return 'taken';
  // flock exits 1 when --nonblock finds the lock held.
  if (r.status === 1) return 'held';
  throw new Error(`${FLOCK} failed to lock the data dir (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '').trim()}`);
}

function readPid(file: string): number {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : 0;
  } catch {
    return 0;
  }
}

/**
 * Takes `<dir>/berth.lock` for this process: an flock on the file, held as long as this process keeps
 * the file open (so a server killed with kill -9 leaves no lock, only the file, which the next server
 * reuses). The file holds the holder's pid, for the message of a server that is refused. Returns a
 * release function (closes the lock and removes the file).
 */
export function acquireDirLock(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  return acquireLockFile(path.join(dir, 'berth.lock'));
}

/**
 * On PostgreSQL several instances share one data dir (docs/scale-out.md): each takes
 * `<dir>/instances/<name>.lock` the same way instead, so two processes never run as the same
 * instance (the same boxes, the same cgroups), while differently named ones start side by side.
 */
export function acquireInstanceLock(dir: string, name: string): () => void {
  const folder = path.join(dir, 'instances');
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  return acquireLockFile(path.join(folder, `${path.basename(name)}.lock`), name);
}

function acquireLockFile(file: string, instance?: string): () => void {
  for (let attempt = 0; attempt < 5; attempt++) {
    const fd = openSync(file, 'a+', 0o600);
    let state: 'taken' | 'held';
    try {
      state = tryFlock(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    if (state === 'held') {
      closeSync(fd);
      throw new LockHeldError(readPid(file), file, instance);
    }
    // A releasing server unlinks the file while it holds the lock: if ours is no longer the file at
    // this path, the lock is on an orphaned inode; open the path again.
    let same = false;
    try {
      const a = fstatSync(fd);
      const b = statSync(file);
      same = a.ino === b.ino && a.dev === b.dev;
    } catch {
      same = false;
    }
    if (!same) {
      closeSync(fd);
      continue;
    }
    ftruncateSync(fd, 0);
    writeSync(fd, `${process.pid}\n`, 0);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Unlink while still holding the lock, then let the lock go.
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
      try {
        closeSync(fd);
      } catch {
        /* already closed */
      }
    };
  }
  throw new Error(`could not take the lock ${file}`);
}

/**
 * Runs `fn` holding an exclusive flock(2) on `file` (made when missing, never removed: removing it
 * would let a waiter lock an unlinked inode), waiting up to `waitSeconds` for another holder. For
 * short critical sections shared by every Berth on the host (the sandbox uid registry,
 * src/runtime/uid-range.ts); the lock goes with the fd when `fn` returns or throws.
 */
export function withFileLock<T>(file: string, fn: () => T, waitSeconds = 10): T {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  const fd = openSync(file, 'a+', 0o600);
  try {
    const r = spawnSync(FLOCK, ['--exclusive', '--wait', String(waitSeconds), '3'], { stdio: ['ignore', 'ignore', 'pipe', fd], timeout: (waitSeconds + 5) * 1000 });
    if (r.error) {
      const code = (r.error as NodeJS.ErrnoException).code;
      throw new Error(code === 'ENOENT' ? `the lock ${file} needs the flock program (util-linux) and it was not found; install util-linux` : `could not run ${FLOCK} to lock ${file}: ${r.error.message}`);
    }
    // flock exits 1 when --wait runs out.
    if (r.status === 1) throw new Error(`another process has held ${file} for more than ${waitSeconds} s; try again, or see which process holds it (fuser ${file})`);
    if (r.status !== 0) throw new Error(`${FLOCK} failed to lock ${file} (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '').trim()}`);
    return fn();
  } finally {
    closeSync(fd);
  }
}
