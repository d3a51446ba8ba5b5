import { spawn } from 'node:child_process';
import type { Identity } from './driver.js';
import { claimUidRange, DEFAULT_UID_BASE, DEFAULT_UID_REGISTRY, type UidRange } from './uid-range.js';

/**
 * Claims the data dir's sandbox uid range (uid-range.ts) for a server: `berth serve` does, before
 * anything runs, when it runs builds and apps under uids of their own (root, sandbox or docker
 * runtime), and hands the range to buildApp (`ctx.uidRange`). Refuses (UidRangeError) when another
 * data dir on this host claimed an overlapping range.
 */
export function claimServerUidRange(dataDir: string, env: NodeJS.ProcessEnv = process.env): UidRange {
  const base = env.BERTH_SANDBOX_UID_BASE ? Number(env.BERTH_SANDBOX_UID_BASE) : null;
  return claimUidRange({ dataDir, registry: env.BERTH_UID_REGISTRY || DEFAULT_UID_REGISTRY, base });
}

/**
 * The first uid projects get: the server's claimed range's (null: a server built in-process, or not
 * running as root), else BERTH_SANDBOX_UID_BASE, else the default; never 0 and never the server's
 * own. The uid just below it is the egress check's box.
 */
export function uidBase(range: UidRange | null, env: NodeJS.ProcessEnv = process.env): number {
  if (range) return range.first + 1;
  const n = Number(env.BERTH_SANDBOX_UID_BASE);
  return Number.isInteger(n) && n >= 1000 && n < 2 ** 31 - 100000 ? n : DEFAULT_UID_BASE;
}

/** Gives a folder (or several, one process) and everything below it to `id` (symlinks themselves, never what they point at). */
export function chownTree(dir: string | string[], id: Identity): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('chown', ['-R', '-h', `${id.uid}:${id.gid}`, '--', ...(Array.isArray(dir) ? dir : [dir])], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 1000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`could not hand the folder to the project's user: ${err.trim() || `exit ${code}`}`))));
  });
}
