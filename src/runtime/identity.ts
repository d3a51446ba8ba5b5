import { spawn } from 'node:child_process';
import type { Identity } from './driver.js';

/** First uid (and gid) handed to a project when BERTH_SANDBOX_UID_BASE is not set. */
export const DEFAULT_UID_BASE = 200000;

/** The uid range projects get: from the base up, never 0 and never the server's own. */
export function uidBase(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.BERTH_SANDBOX_UID_BASE);
  return Number.isInteger(n) && n >= 1000 && n < 2 ** 31 - 100000 ? n : DEFAULT_UID_BASE;
}

/** Gives a folder and everything below it to `id` (symlinks themselves, never what they point at). */
export function chownTree(dir: string, id: Identity): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('chown', ['-R', '-h', `${id.uid}:${id.gid}`, '--', dir], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 1000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`could not hand the folder to the project's user: ${err.trim() || `exit ${code}`}`))));
  });
}
