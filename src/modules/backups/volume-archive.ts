import { existsSync, readdirSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { copyContents, imageOf, isMounted } from '../../runtime/disk-image.js';
import { BLOCK_BYTES, BlockGunzip, BlockGzip, CHUNK_BYTES } from '../../lib/blockgzip.js';
import { syncFilesystemOf } from '../../lib/sync-fs.js';
import { DeferredLinks } from './volume-links.js';

/**
 * A volume (a folder) as one artifact and back: a blocked-gzip tar of its contents, its size
 * estimate, extraction into a fresh folder, and the swap that puts a restored folder's contents in
 * place so the target is always whole (with the repair of a swap a crash interrupted). The tar and
 * the extraction run in a child process of their own (volume-child.ts, started by volume-process.ts).
 */

export const GZIP_LEVEL = 6;

/**
 * The gzipped tar of a folder, in this process: volume-child.ts's `pack` (the server uses
 * volume-process.ts `volumeSource`/`packIntoFile`): tar and blocked gzip (src/lib/blockgzip.ts:
 * 1 MiB blocks compressed on all cores, still one ordinary `.tar.gz` to gzip/tar).
 */
export function packVolume(dir: string): Readable {
  const pack = tar.c({ cwd: dir, portable: true, noMtime: false, maxReadSize: CHUNK_BYTES }, ['.']) as unknown as AsyncIterable<Buffer>;
  const gzip = new BlockGzip(GZIP_LEVEL);
  const src = Readable.from(pack, { objectMode: false, highWaterMark: 1024 * 1024 });
  src.on('error', (e) => gzip.destroy(e));
  return src.pipe(gzip);
}

/**
 * An upper estimate of the gzipped tar of `dir`: the tar's own size (a 512-byte header per entry, data
 * padded to 512 bytes, long names in an extra header, two end blocks), plus gzip's worst case for
 * incompressible data. Symbolic links and other non-regular entries count as a header each.
 */
export async function volumeSizeHint(dir: string): Promise<number> {
  let bytes = 1024;
  const walk = async (d: string): Promise<void> => {
    let names: Dirent[];
    try {
      names = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of names) {
      const p = path.join(d, e.name);
      bytes += 1024;
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const st = await lstat(p).catch(() => null);
        if (st) bytes += Math.ceil(st.size / 512) * 512;
      }
    }
  };
  await walk(dir);
  return Math.ceil(bytes * 1.001) + 64 * 1024;
}

/** Extracts a gzipped tar stream into `dir` (which must be fresh), in this process: volume-child.ts's `unpack`. */
export async function extractInto(source: Readable, dir: string, signal?: AbortSignal): Promise<void> {
  await mkdir(dir, { recursive: true });
  // Symbolic links are made last, exactly as archived (volume-links.ts).
  const links = new DeferredLinks(dir);
  const unpack = new tar.Unpack({ cwd: dir, strict: true, preservePaths: false, processUmask: 0, filter: links.filter });
  const sink = new Writable({
    highWaterMark: 1024 * 1024,
    write(chunk, _enc, cb) {
      if (unpack.write(chunk)) cb();
      else unpack.once('drain', () => cb());
    },
    final(cb) {
      unpack.once('close', () => cb());
      unpack.end();
    },
  });
  let unpackErr: Error | undefined;
  unpack.on('error', (e: Error) => {
    unpackErr = e;
    sink.destroy(e);
  });
  try {
    // Inflated output in 1 MiB chunks (one block's worth): a quarter of the write calls of 256 KiB
    // chunks, 10-20% off an extraction's time for about 5 MB more peak memory (docs/decisions.md).
    await pipeline(source, new BlockGunzip(BLOCK_BYTES), sink, { signal });
  } catch (e) {
    // Let the files the unpacker already opened finish, so the caller can remove the folder for good.
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 5000);
      unpack.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      try {
        unpack.end();
      } catch {
        clearTimeout(t);
        resolve();
      }
    });
    throw e;
  }
  if (unpackErr) throw unpackErr;
  await links.create();
}

/**
 * A volume on its disk image (docs/runtime.md "Disk limits") is read and written only where that image is
 * mounted: elsewhere (another instance sharing the data dir, a server whose runtime has not mounted it)
 * the folder is an empty mount point, and a backup of it would be empty.
 */
export function assertVolumeHere(dir: string): void {
  if (existsSync(imageOf(dir)) && !isMounted(dir)) throw new Error('the volume is on a disk image that is not mounted on this instance (it is mounted where its app runs, or when the server starts its runtime)');
}

/**
 * Where a restore of `target` unpacks before `swapIn`: beside the folder (`<target>.restore-<tag>`), or,
 * for a volume on its own image, inside it as the swap's `.berth-new-<tag>` (0700, root's), so the
 * swap is renames only. Unpacked beside an image and copied in, 1 GiB was written twice: a restore ran
 * at 0.58 of `tar xzf` (docs/benchmarks.md). The image holds the old and the new contents at once
 * either way; a restore that does not fit fails with ENOSPC and leaves the old contents whole.
 */
export async function stagingFor(target: string, tag: string): Promise<string> {
  if (existsSync(target) && (await isMountRoot(target))) {
    const fresh = path.join(target, `.berth-new-${tag}`);
    await rm(fresh, { recursive: true, force: true });
    await mkdir(fresh, { mode: 0o700 });
    return fresh;
  }
  const beside = `${target}.restore-${tag}`;
  await rm(beside, { recursive: true, force: true });
  return beside;
}

/** Names of the swap's own folders inside a volume (`.berth-new-<tag>`, `.berth-old-<tag>`). */
const SWAP_RE = /^\.berth-(new|old)-/;
/** Written into `.berth-old-<tag>` once every old entry is in it: from then on the new contents win. */
const MOVED = '.moved';

async function sameDevice(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([lstat(a), lstat(b)]);
  return x.dev === y.dev;
}

/** Is `dir` the root of its own filesystem (a volume's image mounted there)? */
async function isMountRoot(dir: string): Promise<boolean> {
  return !(await sameDevice(dir, path.dirname(dir)));
}

/** Moves every entry of `from` into `to` (same filesystem), but the swap's own folders and `keep`. */
async function moveEntries(from: string, to: string, keep: (name: string) => boolean): Promise<void> {
  for (const n of await readdir(from)) {
    if (SWAP_RE.test(n) || keep(n)) continue;
    await rename(path.join(from, n), path.join(to, n));
  }
}

/**
 * Swaps the contents of `staged` in as the contents of `target`, so the target can be a mount point
 * (a volume on its own filesystem image, which refuses a rename: docs/runtime.md "Disk limits"). The
 * target is always whole:
 *
 * 1. the staged contents are brought into `<target>/.berth-new-<tag>` (a rename on the same
 *    filesystem, else a copy keeping owners, modes and times: `cp -a`; a copy that fails, e.g. ENOSPC
 *    on an image without room for both, is removed and the target is untouched);
 * 2. the old entries are moved into `<target>/.berth-old-<tag>`, which is then marked `.moved`;
 * 3. the new entries are moved up into the target, and `.berth-new-<tag>` is removed.
 *
 * Between steps 1 and 2 the new contents are flushed to disk (`syncFilesystemOf`, one syncfs), so
 * the mark never names contents a crash could still lose.
 * Steps 2 and 3 are renames inside one filesystem. A failure in step 2 puts the old entries back; a
 * crash is repaired by `repairVolume` (back to the old contents before the mark, forward after it).
 * The caller removes the answered `old` folder once the restore is reported.
 */
export async function swapIn(staged: string, target: string, tag: string): Promise<{ old: string | null }> {
  await mkdir(target, { recursive: true, mode: 0o700 });
  const fresh = path.join(target, `.berth-new-${tag}`);
  const old = path.join(target, `.berth-old-${tag}`);
  // Staged where step 1 would bring it (`stagingFor` on an image): nothing to bring.
  const inPlace = path.resolve(staged) === fresh;
  if (!inPlace) await rm(fresh, { recursive: true, force: true });
  await rm(old, { recursive: true, force: true });
  // An image's own lost+found stays where it is (the filesystem's, not the volume's contents).
  const mountRoot = await isMountRoot(target);
  const keep = (n: string) => mountRoot && n === 'lost+found';
  if (inPlace) {
    /* already there */
  } else if (await sameDevice(staged, target)) await rename(staged, fresh);
  else {
    try {
      await mkdir(fresh, { mode: 0o700 });
      await copyContents(staged, fresh);
    } catch (e) {
      await rm(fresh, { recursive: true, force: true }).catch(() => {});
      throw e;
    }
  }
  // The new contents are on disk before the mark that makes a crash's repair go forward (and the old
  // contents go): without it a crash soon after could leave the restored files empty, the old ones gone.
  await syncFilesystemOf(fresh);
  await mkdir(old, { mode: 0o700 });
  try {
    await moveEntries(target, old, keep);
    await writeFile(path.join(old, MOVED), '');
  } catch (e) {
    await moveEntries(old, target, (n) => n === MOVED).catch(() => {});
    await rm(fresh, { recursive: true, force: true }).catch(() => {});
    await rm(old, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
  await finishForward(fresh, target, keep);
  // A plain folder: the old contents leave the volume at once (a rename beside it); on an image they
  // stay inside until the caller removes them.
  if (!mountRoot) {
    const beside = `${target}.old-${tag}`;
    await rm(beside, { recursive: true, force: true });
    await rename(old, beside);
    await rm(path.join(beside, MOVED), { force: true });
    return { old: beside };
  }
  return { old };
}

/** Step 3: the new entries into the target (a restored `lost+found` gives way to the image's own). */
async function finishForward(fresh: string, target: string, keep: (name: string) => boolean): Promise<void> {
  for (const n of await readdir(fresh)) {
    if (keep(n) && existsSync(path.join(target, n))) await rm(path.join(fresh, n), { recursive: true, force: true });
    else await rename(path.join(fresh, n), path.join(target, n));
  }
  await rm(fresh, { recursive: true, force: true });
}

/**
 * After a crash mid-swap: inside the target, a `.berth-new-*` without the old folder's `.moved` mark
 * goes (the old entries are moved back), one with it is finished; `.berth-old-*` folders go. Left
 * from an older Berth that renamed folders: `<target>.old-*` put back when the target is missing.
 * Staging leftovers (`<target>.restore-*`) are dropped.
 */
export async function repairVolume(target: string): Promise<void> {
  const parent = path.dirname(target);
  const base = path.basename(target);
  if (!existsSync(parent)) return;
  const names = readdirSync(parent);
  const olds = names.filter((n) => n.startsWith(`${base}.old-`));
  if (!existsSync(target) && olds.length > 0) await rename(path.join(parent, olds[0]!), target);
  for (const n of readdirSync(parent)) {
    if (n.startsWith(`${base}.old-`) || n.startsWith(`${base}.restore-`)) await rm(path.join(parent, n), { recursive: true, force: true });
  }
  if (!existsSync(target)) return;
  const mountRoot = await isMountRoot(target);
  const keep = (n: string) => mountRoot && n === 'lost+found';
  const inner = await readdir(target);
  for (const n of inner.filter((x) => x.startsWith('.berth-new-'))) {
    const tag = n.slice('.berth-new-'.length);
    const old = path.join(target, `.berth-old-${tag}`);
    const fresh = path.join(target, n);
    if (existsSync(path.join(old, MOVED))) await finishForward(fresh, target, keep);
    else {
      if (existsSync(old)) await moveEntries(old, target, (x) => x === MOVED || keep(x));
      await rm(fresh, { recursive: true, force: true });
    }
  }
  for (const n of await readdir(target)) {
    if (n.startsWith('.berth-old-')) await rm(path.join(target, n), { recursive: true, force: true });
  }
}
