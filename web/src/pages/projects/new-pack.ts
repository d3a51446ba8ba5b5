/**
 * Which files of a folder picked in the browser go into the upload: the rules `berth deploy` applies
 * too, from one module (src/lib/pack-rules.ts): every `.gitignore` applies to its folder and below (a
 * deeper one wins), a root `.berthignore` applies last, `.git`, `.hg`, `.svn` and `node_modules` (at
 * any depth), `.DS_Store` and the root's `.berth` are always left out, and so are `.env.local` and
 * `.env.*.local` unless an ignore file brings them back.
 */
import { ALWAYS_DIRS, alwaysLeftOut, PackRules } from '../../../../src/lib/pack-rules';
import { gzip, tarStream, type TarFile } from './new-tar';

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

/** Decides which picked files go, reading the ignore files among them. */
export async function planPack(picked: PickedFile[]): Promise<PackPlan> {
  const skipped = new Map<string, string>();
  const skip = (what: string, why: string) => {
    if (!skipped.has(what)) skipped.set(what, why);
  };
  // First the fixed rules, which also keep ignore files inside node_modules/ from counting.
  const candidates: PickedFile[] = [];
  for (const p of picked) {
    const parts = p.path.split('/');
    const dirAt = parts.slice(0, -1).findIndex((seg, i) => alwaysLeftOut(seg, true, i === 0));
    if (dirAt >= 0) {
      skip(`${parts.slice(0, dirAt + 1).join('/')}/`, 'always');
      continue;
    }
    if (alwaysLeftOut(parts[parts.length - 1]!, false, parts.length === 1)) {
      skip(p.path, 'always');
      continue;
    }
    candidates.push(p);
  }
  // The ignore files: .gitignore per folder, .berthignore at the root.
  const rules = new PackRules();
  for (const p of candidates) {
    const which = PackRules.ignoreFileOf(p.path);
    if (which?.kind === 'berth') rules.setBerthignore(await p.file.text());
    else if (which?.kind === 'git') rules.addGitignore(which.dir, await p.file.text());
  }
  const files: TarFile[] = [];
  let bytes = 0;
  for (const p of candidates) {
    const slash = p.path.lastIndexOf('/');
    const dir = slash < 0 ? '' : p.path.slice(0, slash);
    if (rules.dirIgnored(dir)) {
      // Report the outermost ignored folder.
      const parts = dir.split('/');
      const top = parts.findIndex((_, i) => rules.dirIgnored(parts.slice(0, i + 1).join('/')));
      skip(`${parts.slice(0, top + 1).join('/')}/`, 'ignore file');
      continue;
    }
    if (rules.ignored(p.path, false)) {
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
