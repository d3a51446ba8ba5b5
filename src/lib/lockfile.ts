import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class LockHeldError extends Error {
  constructor(readonly pid: number, readonly file: string) {
    super(`another berth server (pid ${pid}) is already using this data dir (${path.dirname(file)}); stop it first or pass another --data-dir`);
    this.name = 'LockHeldError';
  }
}

/**
 * Takes `<dir>/berth.lock` for this process (exclusive create, holding our pid). A lock left by a
 * process that is gone is taken over. Returns a release function.
 */
export function acquireDirLock(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'berth.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let pid = NaN;
      try {
        pid = Number(readFileSync(file, 'utf8').trim());
      } catch {
        /* vanished between open and read: try again */
      }
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new LockHeldError(pid, file);
      try {
        unlinkSync(file);
      } catch {
        /* someone else removed it */
      }
    }
  }
  throw new Error(`could not take the lock ${file}`);
}
