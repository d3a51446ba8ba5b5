import { lstat, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { invalid } from '../../lib/errors.js';

/**
 * Local backup destinations lie under one folder the operator chooses, `BERTH_LOCAL_BACKUP_ROOT`
 * (default `<data-dir>/backups`; contract 18): the server writes backups as root, so a destination
 * elsewhere (`/etc`, `/root`, `/proc/self/cwd`, the data dir's own folders), or one that leaves the
 * root through `..` or a link, would let any account make the server write there. The path is
 * checked as written (lexically) when a destination is saved, and again, component by component
 * without following links, whenever its folder is made or used.
 */

const within = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);

/** The lexical check: absolute, no `..`, under the root. Throws a 400 naming `path`. */
export function checkLocalDestinationPath(root: string, p: string): void {
  if (!path.isAbsolute(p)) throw invalid('path', 'path must be an absolute folder path');
  if (p.split(/[\\/]/).includes('..')) throw invalid('path', 'path must not contain ".."');
  if (!within(path.resolve(p), path.resolve(root))) throw invalid('path', `path must lie under the local backup root ${path.resolve(root)} (BERTH_LOCAL_BACKUP_ROOT)`);
}

/**
 * Makes the destination's folder (and the root) without following links, and answers its real path:
 * every component below the root must be a real folder (made here when missing), never a link.
 * `create: false` only checks what exists (saving a destination); a missing part is fine then.
 */
export async function localDestinationDir(root: string, p: string, opts: { create: boolean } = { create: true }): Promise<string> {
  checkLocalDestinationPath(root, p);
  const base = path.resolve(root);
  if (opts.create) await mkdir(base, { recursive: true, mode: 0o700 });
  let real: string;
  try {
    real = await realpath(base);
  } catch {
    if (!opts.create) return path.resolve(p);
    throw invalid('path', `the local backup root ${base} cannot be made`);
  }
  let cur = real;
  for (const part of path.relative(base, path.resolve(p)).split(path.sep).filter(Boolean)) {
    cur = path.join(cur, part);
    if (opts.create) {
      try {
        await mkdir(cur, { mode: 0o700 });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    let st;
    try {
      st = await lstat(cur);
    } catch (e) {
      if (!opts.create && (e as NodeJS.ErrnoException).code === 'ENOENT') return path.resolve(p);
      throw e;
    }
    if (st.isSymbolicLink()) throw invalid('path', `path leaves the local backup root through a link (${part})`);
    if (!st.isDirectory()) throw invalid('path', `path names a file, not a folder (${part})`);
  }
  return cur;
}
