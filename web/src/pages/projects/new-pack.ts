/**
 * Which files of a folder picked in the browser go into the upload, with the same rules as
 * `berth deploy` (src/cli/pack.ts): every `.gitignore` applies to its folder and below (a deeper one
 * wins), a root `.berthignore` applies last, `.git`, `.hg`, `.svn` and `node_modules` (at any
 * depth), `.DS_Store` and the root's `.berth` are always left out, and so are `.env.local` and
 * `.env.*.local` unless an ignore file brings them back. Rules are read with the `ignore` package
 * (the CLI's), loaded only when packing.
 */
import type { Ignore } from 'ignore';
import { gzip, tarStream, type TarFile } from './new-tar';

const ALWAYS_DIRS = new Set(['.git', '.hg', '.svn', 'node_modules']);
const ALWAYS_FILES = new Set(['.DS_Store']);
const ROOT_ONLY_DIRS = new Set(['.berth']);
const DEFAULT_RULES = ['.env.local', '.env.*.local'];

/** A file as picked: its path under the chosen folder (`src/app.js`) and its contents. */
export interface PickedFile {
  path: string;
  file: File;
}

export interface PackPlan {
  files: TarFile[];
  bytes: number;
  /** What was left out and why, for the page: `node_modules/ (always)`, `dist/ (.gitignore)`. */
  skipped: string[];
  skippedCount: number;
}

/**
 * The files of an `<input webkitdirectory>` (or a drop) with the chosen folder's own name removed
 * from their paths: `my-app/src/a.js` -> `src/a.js`. Answers the folder's name too.
 */
export function fromDirectoryInput(list: ArrayLike<File>): { folder: string; files: PickedFile[] } {
  const files: PickedFile[] = [];
  let folder = '';
  for (const file of Array.from(list)) {
    const rel = (file.webkitRelativePath || file.name).replace(/\\/g, '/');
    const slash = rel.indexOf('/');
    if (slash < 0) files.push({ path: rel, file });
    else {
      folder ||= rel.slice(0, slash);
      files.push({ path: rel.slice(slash + 1), file });
    }
  }
  return { folder, files };
}

interface Scope {
  base: string;
  ig: Ignore;
}

/** The last scope with a matching rule decides (as in git); a scope that ignores the parent has no say inside. */
function ignoredBy(scopes: Scope[], rel: string, isDir: boolean): boolean {
  let ignored = false;
  for (const s of scopes) {
    const sub = s.base ? (rel.startsWith(`${s.base}/`) ? rel.slice(s.base.length + 1) : null) : rel;
    if (sub === null) continue;
    const slash = sub.lastIndexOf('/');
    if (slash > 0 && s.ig.test(sub.slice(0, slash + 1)).ignored) continue;
    const r = s.ig.test(isDir ? `${sub}/` : sub);
    if (r.ignored) ignored = true;
    else if (r.unignored) ignored = false;
  }
  return ignored;
}

/** Decides which picked files go, reading the ignore files among them. */
export async function planPack(picked: PickedFile[]): Promise<PackPlan> {
  const { default: ignore } = await import('ignore');
  const make = (text: string | string[]) => ignore({ ignorecase: false }).add(text);
  const skipped = new Map<string, string>();
  const skip = (what: string, why: string) => {
    if (!skipped.has(what)) skipped.set(what, why);
  };
  // First the fixed rules, which also keep ignore files inside node_modules/ from counting.
  const candidates: PickedFile[] = [];
  for (const p of picked) {
    const parts = p.path.split('/');
    const dirAt = parts.slice(0, -1).findIndex((seg, i) => ALWAYS_DIRS.has(seg) || (i === 0 && ROOT_ONLY_DIRS.has(seg)));
    if (dirAt >= 0) {
      skip(`${parts.slice(0, dirAt + 1).join('/')}/`, 'always');
      continue;
    }
    if (ALWAYS_FILES.has(parts[parts.length - 1]!)) {
      skip(p.path, 'always');
      continue;
    }
    candidates.push(p);
  }
  // The ignore files: .gitignore per folder, .berthignore at the root.
  const gitignores = new Map<string, Ignore>();
  let berth: Ignore | null = null;
  for (const p of candidates) {
    if (p.path === '.berthignore') berth = make(await p.file.text());
    else if (p.path === '.gitignore' || p.path.endsWith('/.gitignore')) gitignores.set(p.path.slice(0, -'.gitignore'.length).replace(/\/$/, ''), make(await p.file.text()));
  }
  const base: Scope = { base: '', ig: make(DEFAULT_RULES) };
  const scopesOf = new Map<string, Scope[]>();
  /** The scopes in effect inside `dir` ('' for the root): the root's, then each deeper folder's, then .berthignore. */
  const scopesFor = (dir: string): Scope[] => {
    let s = scopesOf.get(dir);
    if (s) return s;
    const parts = dir ? dir.split('/') : [];
    s = [base];
    for (let i = 0; i <= parts.length; i++) {
      const d = parts.slice(0, i).join('/');
      const ig = gitignores.get(d);
      if (ig) s.push({ base: d, ig });
    }
    if (berth) s.push({ base: '', ig: berth });
    scopesOf.set(dir, s);
    return s;
  };
  const dirIgnored = new Map<string, boolean>();
  /** Is this folder left out, itself or through a parent (a walk would never enter it)? */
  const isDirIgnored = (dir: string): boolean => {
    const known = dirIgnored.get(dir);
    if (known !== undefined) return known;
    const slash = dir.lastIndexOf('/');
    const parent = slash < 0 ? '' : dir.slice(0, slash);
    const out = (parent !== '' && isDirIgnored(parent)) || ignoredBy(scopesFor(parent), dir, true);
    dirIgnored.set(dir, out);
    return out;
  };
  const files: TarFile[] = [];
  let bytes = 0;
  for (const p of candidates) {
    const slash = p.path.lastIndexOf('/');
    const dir = slash < 0 ? '' : p.path.slice(0, slash);
    if (dir && isDirIgnored(dir)) {
      // Report the outermost ignored folder.
      const parts = dir.split('/');
      const top = parts.findIndex((_, i) => isDirIgnored(parts.slice(0, i + 1).join('/')));
      skip(`${parts.slice(0, top + 1).join('/')}/`, 'ignore file');
      continue;
    }
    if (ignoredBy(scopesFor(dir), p.path, false)) {
      skip(p.path, 'ignore file');
      continue;
    }
    files.push({ path: p.path, file: p.file, mtime: Math.floor((p.file.lastModified || Date.now()) / 1000) });
    bytes += p.file.size;
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, bytes, skipped: [...skipped].map(([what, why]) => `${what} (${why})`), skippedCount: picked.length - files.length };
}

/** Packs the planned files into a gzipped tarball, reporting files and bytes done. */
export function pack(plan: PackPlan, onProgress: (files: number, bytes: number) => void): Promise<Blob> {
  return gzip(tarStream(plan.files, onProgress));
}

/** The files of a dropped folder (DataTransfer entries), walked recursively. */
export async function fromDrop(items: DataTransferItemList): Promise<{ folder: string; files: PickedFile[]; archive?: File }> {
  const entries = Array.from(items)
    .map((i) => i.webkitGetAsEntry?.())
    .filter((e): e is FileSystemEntry => !!e);
  if (entries.length === 1 && entries[0]!.isFile) {
    const file = await new Promise<File>((res, rej) => (entries[0] as FileSystemFileEntry).file(res, rej));
    return { folder: '', files: [], archive: file };
  }
  const out: PickedFile[] = [];
  const readAll = (dir: FileSystemDirectoryEntry) =>
    new Promise<FileSystemEntry[]>((res, rej) => {
      const reader = dir.createReader();
      const all: FileSystemEntry[] = [];
      const next = () =>
        reader.readEntries((batch) => {
          if (batch.length === 0) res(all);
          else {
            all.push(...batch);
            next();
          }
        }, rej);
      next();
    });
  const walk = async (entry: FileSystemEntry, prefix: string): Promise<void> => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isFile) {
      const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
      out.push({ path: rel, file });
    } else if (entry.isDirectory) {
      // Installed dependencies are never read (they can be huge).
      if (ALWAYS_DIRS.has(entry.name)) return;
      for (const child of await readAll(entry as FileSystemDirectoryEntry)) await walk(child, rel);
    }
  };
  // One folder dropped: its contents are the root; several items: they all are.
  if (entries.length === 1 && entries[0]!.isDirectory) {
    for (const child of await readAll(entries[0] as FileSystemDirectoryEntry)) await walk(child, '');
    return { folder: entries[0]!.name, files: out };
  }
  for (const e of entries) await walk(e, '');
  return { folder: '', files: out };
}
