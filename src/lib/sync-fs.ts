import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Flushes the filesystem holding `dir` to disk (`sync -f`, the syncfs(2) call): what makes a folder
 * written without fsync (a database initialised or bulk-loaded with its fsync off) durable in one call
 * instead of one fsync per file. A folder not made yet stands for its nearest existing parent (the
 * same filesystem, as far as Berth's folders go). Argument array, no shell; rejects when sync fails.
 */
export function syncFilesystemOf(folder: string): Promise<void> {
  let dir = path.resolve(folder);
  while (!existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/sync', ['-f', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => reject(new Error(`sync could not run: ${e.message}`)));
    child.on('exit', (code, sig) => (code === 0 ? resolve() : reject(new Error(`sync -f ${dir} failed (${code ?? sig}): ${err.trim()}`))));
  });
}
