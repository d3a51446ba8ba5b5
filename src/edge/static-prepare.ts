import { createReadStream, createWriteStream, constants as fsc } from 'node:fs';
import { lstat, mkdir, open, opendir, readdir, realpath, rm, stat, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { constants as zc, createBrotliCompress, createGzip } from 'node:zlib';
import { inside, resolvePhysical } from '../lib/copy-tree.js';

/**
 * Puts a static site's built output where the edge serves it from (src/edge/static-site.ts): a copy
 * the server owns, holding regular files and folders only, with `.br` and `.gz` variants beside the
 * files worth compressing.
 */

/** The extensions worth compressing (text, wasm, icons, uncompressed fonts), with brotli's mode for each. */
const COMPRESSIBLE: ReadonlyMap<string, number> = new Map([
  ...['html', 'htm', 'xhtml', 'css', 'js', 'mjs', 'cjs', 'json', 'jsonld', 'map', 'svg', 'xml', 'rss', 'atom', 'txt', 'md', 'csv', 'webmanifest'].map((e) => [e, zc.BROTLI_MODE_TEXT] as const),
  ...['wasm', 'ico'].map((e) => [e, zc.BROTLI_MODE_GENERIC] as const),
  ...['ttf', 'otf', 'eot'].map((e) => [e, zc.BROTLI_MODE_FONT] as const),
]);

/** Files smaller than this are not compressed (the saving would not pay for the header). */
export const MIN_COMPRESS_BYTES = 1024;
/** Files larger than this are served as they are (compressing them would hold up a deployment). */
export const MAX_COMPRESS_BYTES = 256 * 1024 * 1024;
/** Brotli quality 10 up to this size; above it, 9 (quality 10 is ~7x slower on large files). */
const BROTLI_Q10_MAX_BYTES = 1024 * 1024;

function extensionOf(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** Is a file of this name (and size) one `prepareStaticSite` compresses, so it may have variants? */
export function isCompressible(name: string, size?: number): boolean {
  if (size !== undefined && (size < MIN_COMPRESS_BYTES || size > MAX_COMPRESS_BYTES)) return false;
  return COMPRESSIBLE.has(extensionOf(name));
}

export interface PrepareOptions {
  /** At most this many files, and as many folders (default 100 000). */
  maxFiles?: number;
  /** Folders nested at most this deep (default 64). */
  maxDepth?: number;
  /**
   * A folder `from` must lie in once every link on its way is resolved (the build's workspace):
   * `from` itself may not be a link, but a parent could be (`outputDirectory: "out/dist"` with `out`
   * a link the build made). Unchecked when absent.
   */
  within?: string;
}

export interface PreparedSite {
  /** Regular files copied (the `.br`/`.gz` variants made here not counted). */
  files: number;
  /** Their bytes. */
  bytes: number;
  /** Entries left out: symbolic links, devices, FIFOs, sockets (and a folder swapped for a link while copied). */
  skipped: number;
  /** Dotfiles and dot-folders left out (never served; `.git` would only cost time and space), but for a top-level `.well-known`. */
  hidden: number;
}

/** Runs `fn` over `items`, at most `limit` at a time; after a failure no new item starts, and the first error is thrown once all have stopped. */
async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}

/**
 * Copies one regular file: opened with O_NOFOLLOW (an entry swapped for a symlink since it was listed
 * is not followed) and O_NONBLOCK (one swapped for a FIFO does not hang the copy), then checked to be
 * a regular file. Answers its size, or null when it is not a regular file (any more).
 */
async function copyRegular(from: string, to: string): Promise<number | null> {
  let fh;
  try {
    fh = await open(from, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') return null;
    throw e;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return null;
    let bytes = 0;
    const src = fh.createReadStream({ autoClose: false, start: 0 });
    src.on('data', (c: Buffer | string) => (bytes += c.length));
    await pipeline(src, createWriteStream(to, { flags: 'wx', mode: 0o644 }));
    return bytes;
  } finally {
    await fh.close();
  }
}

/**
 * Writes `file` compressed to `out`; keeps it only when smaller than the file. Answers its size, or
 * null when it was not kept.
 */
async function compressTo(file: string, out: string, encoding: 'br' | 'gz', size: number): Promise<number | null> {
  const z =
    encoding === 'br'
      ? createBrotliCompress({
          params: {
            [zc.BROTLI_PARAM_QUALITY]: size <= BROTLI_Q10_MAX_BYTES ? 10 : 9,
            [zc.BROTLI_PARAM_MODE]: COMPRESSIBLE.get(extensionOf(file)) ?? zc.BROTLI_MODE_GENERIC,
            [zc.BROTLI_PARAM_SIZE_HINT]: size,
          },
        })
      : createGzip({ level: 9 });
  await pipeline(createReadStream(file), z, createWriteStream(out, { flags: 'wx', mode: 0o644 }));
  const n = (await stat(out)).size;
  if (n < size) return n;
  await unlink(out);
  return null;
}

/**
 * Makes `<file>.br` (brotli, quality 10, 9 above 1 MiB) and `<file>.gz` (gzip level 9) beside a
 * compressible file, each kept only when smaller. A variant the build made itself (its name is in
 * `names`, as is every folder's) is left as it is. The variants get the file's mtime (one Last-Modified for all three);
 * their ETags (size and mtime) differ by size, so a `.gz` as large as the `.br` is dropped.
 */
async function precompress(dest: string, rel: string, size: number, names: ReadonlySet<string>): Promise<void> {
  const file = path.join(dest, rel);
  const made: Array<{ path: string; size: number }> = [];
  for (const encoding of ['br', 'gz'] as const) {
    if (names.has(`${rel}.${encoding}`)) continue;
    const out = `${file}.${encoding}`;
    const n = await compressTo(file, out, encoding, size);
    if (n === null) continue;
    if (made.some((m) => m.size === n)) {
      await unlink(out);
      continue;
    }
    made.push({ path: out, size: n });
  }
  if (!made.length) return;
  // Set on the file too: the kernel keeps nanoseconds, utimes takes what a Date holds (milliseconds).
  const { atime, mtime } = await stat(file);
  for (const p of [file, ...made.map((m) => m.path)]) await utimes(p, atime, mtime);
}

/** Makes `to` an empty folder of ours: created (answers true), or already there and empty (false). */
async function freshFolder(to: string): Promise<boolean> {
  await mkdir(path.dirname(to), { recursive: true });
  try {
    await mkdir(to, { mode: 0o755 });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = await lstat(to);
  if (!st.isDirectory()) throw new Error(`the static site folder ${to} exists and is not a folder`);
  if ((await readdir(to)).length) throw new Error(`the static site folder ${to} is not empty`);
  return false;
}

/**
 * Copies a static site's built output (`from`, a real folder, not a symlink) into `to`, a fresh folder
 * the server owns (created; or one that exists and is empty), for the edge to serve:
 *
 * - regular files and folders only, and no dotfiles (which the edge never serves) but a top-level
 *   `.well-known`: symbolic links (to files or folders), devices, FIFOs and sockets
 *   are left out and never followed (a build could link to /etc/shadow or the server's data). Files
 *   are opened with O_NOFOLLOW and folders re-checked with realpath, so an entry swapped for a link
 *   while the copy runs is not followed either. (The build should have stopped: a process still
 *   writing the folder could at most swap entries, never make the copy follow a link.)
 * - bounded: at most `maxFiles` files and as many folders, folders at most `maxDepth` deep; over
 *   either, it throws.
 * - then every compressible file (HTML, CSS, JS, JSON, SVG, XML, text, source maps, wasm, web
 *   manifests, icons, fonts) of 1 KiB to 256 MiB gets `.br` and `.gz` variants (see `precompress`),
 *   made by zlib streams on the thread pool, two files at a time (the edge's own file reads share
 *   that pool).
 *
 * Throws a plain Error when `from` is missing, not a folder or a symlink (or leads outside
 * `opts.within`), when `to` is not an empty folder or overlaps `from`, or over the bounds; what it
 * copied so far is then removed.
 */
export async function prepareStaticSite(from: string, to: string, opts: PrepareOptions = {}): Promise<PreparedSite> {
  const top = await buildOutputFolder(from, opts.within);
  const dest = resolvePhysical(path.resolve(to)) ?? path.resolve(to);
  if (inside(dest, top) || inside(top, dest)) throw new Error(`the static site folder ${to} and the build output ${from} overlap`);
  const created = await freshFolder(dest);
  try {
    // 1. List (breadth first, so the bounds stop a runaway tree early) and make the folders.
    const tree = await listAndMakeFolders(top, dest, opts.maxFiles ?? 100_000, opts.maxDepth ?? 64);
    let skipped = tree.skipped;

    // 2. Copy the files.
    const copied: Array<{ rel: string; size: number }> = [];
    let bytes = 0;
    await eachLimit(tree.files, 8, async (rel) => {
      const n = await copyRegular(path.join(top, rel), path.join(dest, rel));
      if (n === null) {
        skipped++;
        return;
      }
      copied.push({ rel, size: n });
      bytes += n;
    });

    // 3. Precompress.
    // Names taken in the copy (files and folders): a variant is never written over one.
    const names = new Set([...copied.map((c) => c.rel), ...tree.folders]);
    const compressible = copied.filter((c) => isCompressible(c.rel, c.size));
    await eachLimit(compressible, 2, (c) => precompress(dest, c.rel, c.size, names));
    return { files: copied.length, bytes, skipped, hidden: tree.hidden };
  } catch (e) {
    if (created) await rm(dest, { recursive: true, force: true });
    else for (const name of await readdir(dest).catch(() => [] as string[])) await rm(path.join(dest, name), { recursive: true, force: true });
    throw e;
  }
}

/** The build output folder's real path: it exists, is a folder and not a symlink, and is inside `within` when given. */
async function buildOutputFolder(from: string, within: string | undefined): Promise<string> {
  // resolve: no trailing slash, which would make lstat follow a link.
  const src = path.resolve(from);
  let st;
  try {
    st = await lstat(src);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') {
      throw new Error(`the build output folder ${from} does not exist`);
    }
    throw e;
  }
  if (st.isSymbolicLink()) throw new Error(`the build output folder ${from} is a symbolic link; it must be a folder`);
  if (!st.isDirectory()) throw new Error(`the build output ${from} is not a folder`);
  // Parents may be links (/tmp on some systems); the folder itself is not.
  const top = await realpath(src);
  if (within !== undefined && !inside(top, await realpath(within))) throw new Error(`the build output folder ${from} leads outside ${within}`);
  return top;
}

/**
 * The regular files under `top` (paths relative to it) and its folders ('' for `top` itself), breadth
 * first, each folder made under `dest` as it is reached; dotfiles but a top-level `.well-known` are
 * counted as hidden, links and special files as skipped. Throws over the bounds.
 */
async function listAndMakeFolders(top: string, dest: string, maxFiles: number, maxDepth: number): Promise<{ files: string[]; folders: string[]; skipped: number; hidden: number }> {
  const files: string[] = [];
  let folders = 0;
  let skipped = 0;
  let hidden = 0;
  const queue: Array<{ rel: string; depth: number }> = [{ rel: '', depth: 0 }];
  for (let q = 0; q < queue.length; q++) {
    const { rel, depth } = queue[q]!;
    const abs = rel ? path.join(top, rel) : top;
    if (rel) {
      // Listed as a folder; one swapped for a link since then is not followed.
      if ((await realpath(abs).catch(() => '')) !== abs) {
        skipped++;
        continue;
      }
      await mkdir(path.join(dest, rel), { mode: 0o755 });
    }
    for await (const ent of await opendir(abs)) {
      const r = rel ? `${rel}/${ent.name}` : ent.name;
      if (ent.name.startsWith('.') && r !== '.well-known') {
        hidden++;
        continue;
      }
      if (ent.isDirectory()) {
        if (depth + 1 > maxDepth) throw new Error(`the build output nests folders deeper than ${maxDepth} levels (${r})`);
        if (++folders > maxFiles) throw new Error(`the build output has more than ${maxFiles} folders`);
        queue.push({ rel: r, depth: depth + 1 });
      } else if (ent.isFile()) {
        if (files.length >= maxFiles) throw new Error(`the build output has more than ${maxFiles} files`);
        files.push(r);
      } else {
        skipped++;
      }
    }
  }
  return { files, folders: queue.map((d) => d.rel), skipped, hidden };
}
