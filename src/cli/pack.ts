/**
 * Packing a folder for `berth deploy`: which files go (the rules of src/lib/pack-rules.ts, shared
 * with the dashboard: gitignore rules, a root `.berthignore` last, version control and installed
 * dependencies always left out; symlinks never followed out of the folder), the gzipped tarball,
 * and the progress bars on stderr.
 */
import { createWriteStream, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { create as tarCreate } from 'tar';
import { alwaysLeftOut, BERTHIGNORE, GITIGNORE, PackRules } from '../lib/pack-rules.js';

// ---------------------------------------------------------------- which files go

/** The text of an ignore file, or null when there is none (or it cannot be read). */
function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

export interface PackList {
  /** Paths relative to the root, sorted by folder walk order. */
  files: string[];
  /** Their total size in bytes (a symlink counts as the file it points to). */
  bytes: number;
  skipped: { path: string; reason: string }[];
}

/**
 * Lists the files to pack under `root` by the rules of src/lib/pack-rules.ts (the dashboard's folder
 * upload applies the same): each .gitignore applies to its folder and below (a deeper one wins),
 * `.berthignore` at the root applies last; `.git`, `.hg`, `.svn`, `node_modules` and `.DS_Store` are
 * always left out, and so is the root's `.berth` (the folder link); `.env.local` and `.env.*.local`
 * unless an ignore file brings them back. Ignored folders are never entered. Symlinks are never
 * followed out of the folder: a link to a file inside is packed as that file, links to folders or
 * outside are skipped (and reported).
 */
export function listFiles(root: string): PackList {
  const realRoot = realpathSync(root);
  const out: PackList = { files: [], bytes: 0, skipped: [] };
  const rules = new PackRules();
  const berth = readText(path.join(root, BERTHIGNORE));
  if (berth !== null) rules.setBerthignore(berth);
  const walk = (rel: string) => {
    const abs = path.join(root, rel);
    const local = readText(path.join(abs, GITIGNORE));
    if (local !== null) rules.addGitignore(rel, local);
    let names: string[];
    try {
      names = readdirSync(abs).sort();
    } catch {
      out.skipped.push({ path: rel || '.', reason: 'unreadable folder' });
      return;
    }
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      let st;
      try {
        st = lstatSync(path.join(root, r));
      } catch {
        continue; // gone while we walked
      }
      const isDir = st.isDirectory();
      if (alwaysLeftOut(name, isDir, !rel) || rules.ignored(r, isDir)) continue;
      if (isDir) walk(r);
      else if (st.isFile()) {
        out.files.push(r);
        out.bytes += st.size;
      } else if (st.isSymbolicLink()) {
        let real: string;
        try {
          real = realpathSync(path.join(root, r));
        } catch {
          out.skipped.push({ path: r, reason: 'broken symlink' });
          continue;
        }
        if (!real.startsWith(realRoot + path.sep)) out.skipped.push({ path: r, reason: 'symlink leading outside the folder' });
        else {
          const target = statSync(real);
          if (target.isFile()) {
            out.files.push(r);
            out.bytes += target.size;
          } else out.skipped.push({ path: r, reason: 'symlink to a folder' });
        }
      } else out.skipped.push({ path: r, reason: 'not a regular file' });
    }
  };
  walk('');
  return out;
}

// ---------------------------------------------------------------- progress on stderr

export function human(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * A progress bar on stderr: redrawn in place (at most every 100 ms) on a terminal; elsewhere (a
 * pipe, a CI log) a line at most every second, and always the last one.
 */
export class ProgressBar {
  private last = 0;
  private shown = -1;
  private readonly tty = !!process.stderr.isTTY;
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly detail: (done: number) => string,
  ) {}

  update(done: number, force = false): void {
    const now = Date.now();
    if (!force && now - this.last < (this.tty ? 100 : 1000)) return;
    if (done === this.shown) return;
    this.last = now;
    this.shown = done;
    const width = 30;
    const frac = this.total ? Math.min(1, done / this.total) : 1;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '-');
    const line = `${this.label} [${bar}] ${String(Math.round(frac * 100)).padStart(3)}% ${this.detail(done)}`;
    process.stderr.write(this.tty ? `\r${line}\x1b[K` : `${line}\n`);
  }

  done(): void {
    this.update(this.total, true);
    if (this.tty) process.stderr.write('\n');
  }
}

// ---------------------------------------------------------------- the tarball

/**
 * Packs `list` of `root` into a gzipped tarball at `dest` (symlinks in the list are stored as the
 * files they point to), with a progress bar of files and bytes added. Answers the tarball's size.
 */
export async function packFiles(root: string, list: PackList, dest: string, opts: { progress?: boolean } = {}): Promise<number> {
  if (!list.files.length) throw new Error('nothing to deploy: every file is ignored');
  const count = list.files.length;
  let files = 0;
  let bytes = 0;
  const bar = opts.progress === false ? null : new ProgressBar('packing  ', list.bytes || count, () => `${files}/${count} files ${human(bytes)}/${human(list.bytes)}`);
  const stream = tarCreate(
    {
      gzip: true,
      cwd: root,
      portable: true,
      follow: true,
      noDirRecurse: true,
      onWriteEntry: (entry) => {
        files += 1;
        bytes += entry.stat?.size ?? 0;
        bar?.update(list.bytes ? bytes : files);
      },
    },
    list.files,
  ) as unknown as NodeJS.ReadableStream;
  await pipeline(stream, createWriteStream(dest, { mode: 0o600 }));
  bar?.done();
  return statSync(dest).size;
}
