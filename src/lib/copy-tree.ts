import { chmodSync, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, readdirSync, readlinkSync, realpathSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

export interface CopyTreeOptions {
  /** The folders a symlink may point into (BERTH_LOCAL_ROOTS); resolved to real paths here. */
  roots: string[];
  /** Entry names not copied at any depth below the top (`.git`, `node_modules`). */
  skipNames?: ReadonlySet<string>;
  /** Told about each entry left out for safety: its path relative to the source and why. */
  onSkip?(relPath: string, why: string): void;
}

export interface SkippedEntry {
  path: string;
  why: string;
}

/** Is `child` the folder `parent` or below it (by path, no links resolved)? */
export function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

const MAX_LINKS = 40;

/**
 * Where the absolute path `p` leads, resolved as the kernel does (component by component; a link is
 * followed where it stands, and a `..` after it climbs from the link's target, not lexically). From
 * the first component that does not exist on, the rest is taken lexically: that is where the path
 * would lead once it is created. Null for a link loop.
 */
export function resolvePhysical(p: string, budget = { links: MAX_LINKS }): string | null {
  const parts = p.split(path.sep).filter((x) => x !== '' && x !== '.');
  let cur: string = path.sep;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '..') {
      cur = path.dirname(cur);
      continue;
    }
    const next = path.join(cur, part);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      return path.resolve(next, ...parts.slice(i + 1));
    }
    if (!isLink) {
      cur = next;
      continue;
    }
    if (--budget.links < 0) return null;
    const text = readlinkSync(next);
    const target = resolvePhysical(path.isAbsolute(text) ? text : `${cur}${path.sep}${text}`, budget);
    if (target === null) return null;
    cur = target;
  }
  return cur;
}

const BUF_BYTES = 64 * 1024;

/** Copies one regular file without following a symlink at `from` (O_NOFOLLOW) and without blocking on a FIFO. */
function copyFile(from: string, to: string, buf: Buffer): 'copied' | 'not-regular' {
  let src: number;
  try {
    src = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    // ELOOP: the entry became a symlink since it was listed.
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') return 'not-regular';
    throw e;
  }
  try {
    const st = fstatSync(src);
    if (!st.isFile()) return 'not-regular';
    const dst = openSync(to, 'wx', 0o600);
    try {
      for (;;) {
        const n = readSync(src, buf, 0, buf.length, null);
        if (n === 0) break;
        let off = 0;
        while (off < n) off += writeSync(dst, buf, off, n - off);
      }
    } finally {
      closeSync(dst);
    }
    chmodSync(to, st.mode & 0o7777);
    return 'copied';
  } finally {
    closeSync(src);
  }
}

/**
 * Copies the folder `src` to `dest` (which must not exist yet), like `cpSync(src, dest, { recursive,
 * verbatimSymlinks })` but never carrying a way out of BERTH_LOCAL_ROOTS into the copy:
 *
 * - a symlink whose target (resolved through every link as the kernel does, `resolvePhysical`) lies
 *   inside `src` is copied as it is, also when the target does not exist yet (a `node_modules/.bin`
 *   the build installs); a relative one is checked again in the finished copy (below);
 * - one whose existing target lies elsewhere inside a root is copied pointing at that real target
 *   (its text, if relative, would mean another place from inside the copy);
 * - one that points outside every root, or at nothing outside the source, is left out and reported
 *   (`onSkip`);
 * - FIFOs, sockets and devices are left out and reported (a FIFO would hang the copy);
 * - symlinked folders are never followed; files are opened with O_NOFOLLOW, so an entry swapped for a
 *   link while the copy runs is not followed either.
 *
 * Answers the entries it left out.
 */
export function copyTreeWithinRoots(src: string, dest: string, opts: CopyTreeOptions): SkippedEntry[] {
  const top = realpathSync(src);
  const roots = opts.roots.map(realOr);
  const skipped: SkippedEntry[] = [];
  const skip = (rel: string, why: string) => {
    skipped.push({ path: rel, why });
    opts.onSkip?.(rel, why);
  };
  const buf = Buffer.allocUnsafe(BUF_BYTES);
  const dirModes: Array<[string, number]> = [];
  const stack: string[] = [''];
  /** Relative links copied as they are (checked again in the finished copy). */
  const kept: string[] = [];
  while (stack.length) {
    const rel = stack.pop()!;
    const from = path.join(top, rel);
    const to = path.join(dest, rel);
    // Every folder reached here was listed as a folder, not a link; one replaced by a link since is refused.
    if (realOr(from) !== from) {
      skip(rel, 'it became a symlink while it was copied');
      continue;
    }
    mkdirSync(to, { recursive: rel === '', mode: 0o700 });
    dirModes.push([to, lstatSync(from).mode & 0o7777]);
    for (const ent of readdirSync(from, { withFileTypes: true })) {
      if (opts.skipNames?.has(ent.name)) continue;
      const r = rel ? path.join(rel, ent.name) : ent.name;
      const f = path.join(from, ent.name);
      const t = path.join(to, ent.name);
      if (ent.isDirectory()) {
        stack.push(r);
      } else if (ent.isFile()) {
        if (copyFile(f, t, buf) === 'not-regular') skip(r, 'it is not a regular file');
      } else if (ent.isSymbolicLink()) {
        const text = readlinkSync(f);
        const target = resolvePhysical(path.isAbsolute(text) ? text : `${from}${path.sep}${text}`);
        if (target !== null && inside(target, top)) {
          // Into the source (also a dangling one, into a `node_modules` the build installs): as it is.
          symlinkSync(text, t);
          if (!path.isAbsolute(text)) kept.push(r);
        } else if (target !== null && existsSync(target) && roots.some((root) => inside(target, root))) {
          symlinkSync(target, t);
        } else {
          skip(r, `the symlink points outside BERTH_LOCAL_ROOTS or at nothing (${text})`);
        }
      } else {
        skip(r, 'it is not a file, folder or symlink');
      }
    }
  }
  // A relative link resolves from its place in the copy, which is not where the source is: one that
  // climbs out of the source and back in (`sub/self/../../<source>/x`, with `self -> .`) would lead out
  // of the copy. Each kept relative link is resolved again in the finished copy; one that leads outside
  // the copy and the roots goes. Removing a link only breaks paths through it (they then lead inside
  // the copy, or nowhere), so one more pass after a removal settles it.
  const destReal = realpathSync(dest);
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = kept.length - 1; i >= 0; i--) {
      const r = kept[i]!;
      const link = path.join(destReal, r);
      const target = resolvePhysical(link);
      if (target !== null && (inside(target, destReal) || (existsSync(target) && roots.some((root) => inside(target, root))))) continue;
      unlinkSync(link);
      kept.splice(i, 1);
      changed = true;
      skip(r, 'the symlink leads outside the copy and BERTH_LOCAL_ROOTS');
    }
  }
  // Folder modes last: a read-only folder could not have been filled.
  for (const [dir, mode] of dirModes.reverse()) chmodSync(dir, mode);
  return skipped;
}
