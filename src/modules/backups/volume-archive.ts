import { existsSync, readdirSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { copyContents, imageOf, isMounted } from '../../runtime/disk-image.js';
import { BLOCK_BYTES, BlockGunzip, BlockGzip, CHUNK_BYTES } from '../../lib/blockgzip.js';
import { syncFilesystemOf } from '../../lib/sync-fs.js';
import { startNodeChild } from '../../lib/node-child.js';
import type { ChildProcess } from 'node:child_process';

/**
 * A volume (a folder) as one artifact and back: a blocked-gzip tar of its contents, its size
 * estimate, extraction into a fresh folder, and the swap that puts a restored folder's contents in
 * place so the target is always whole (with the repair of a swap a crash interrupted).
 */

export const GZIP_LEVEL = 6;

/**
 * A gzipped tar stream of the folder's contents (entries relative to the folder), made by a process of
 * its own (volume-child.ts `pack`): the stdout of that child. Why a child (docs/backups.md, docs/decisions.md):
 * every chunk of the tar and of the gzip is a fresh buffer, and in the server's process V8 lets tens of
 * megabytes of dead ones pile up before it collects them, which the server's RSS keeps after the
 * backup; a child's memory ends with it. The stream fails when the child fails or is killed (in
 * Berth's words; its stderr's tail is the error's `detail`, for the server log only); `signal` kills it,
 * and so does destroying the stream.
 */
export function volumeSource(dir: string, signal?: AbortSignal): Readable {
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  if (signal?.aborted) {
    process.nextTick(() => out.destroy(abortError(signal)));
    return out;
  }
  const child = startNodeChild(import.meta.url, 'volume-child', ['pack', dir], { stdio: ['ignore', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  child.stdout!.pipe(out, { end: false });
  child.on('error', (e) => {
    if ((e as Error).name !== 'AbortError') out.destroy(new Error(`the volume could not be archived: its process did not start (${e.message})`));
  });
  child.on('close', (code, sig) => {
    if (code === 0) out.end();
    else if (signal?.aborted) out.destroy(abortError(signal));
    else out.destroy(childFailure('archiving the volume', code, sig, stderr));
  });
  out.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return out;
}

/**
 * The in-process half of `volumeSource`, run by volume-child.ts: tar and blocked gzip (src/lib/blockgzip.ts:
 * 1 MiB blocks compressed on all cores, still one ordinary `.tar.gz` to gzip/tar).
 */
export function packVolume(dir: string): Readable {
  const pack = tar.c({ cwd: dir, portable: true, noMtime: false, maxReadSize: CHUNK_BYTES }, ['.']) as unknown as AsyncIterable<Buffer>;
  const gzip = new BlockGzip(GZIP_LEVEL);
  const src = Readable.from(pack, { objectMode: false, highWaterMark: 1024 * 1024 });
  src.on('error', (e) => gzip.destroy(e));
  return src.pipe(gzip);
}

/** A child's failure in Berth's words; its stderr's tail goes along as `detail` (the server log's). */
function childFailure(what: string, code: number | null, sig: NodeJS.Signals | null, stderr: string): Error {
  const words = sig ? `${what} stopped: its process was killed (${sig})` : `${what} failed (exit ${code}); the server log has its output`;
  return Object.assign(new Error(words), { detail: stderr.trim().slice(-4000) });
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR', cause: signal.reason });
}

/** What a volume child reports on fd 3 (volume-child.ts): progress, then done (with what it read or wrote) or its error. */
type Report = { done?: boolean; error?: string; code?: string; bytes?: number; sha256?: string };

/**
 * Starts a volume child whose fd 3 carries its reports, and answers once it has exited (all its stdio
 * closed): its last report (done or error), its exit, its stderr's tail. `onProgress` hears the
 * bytes it reports on the way.
 */
function runVolumeChild(
  args: string[],
  stdio: ['pipe' | 'ignore' | number, 'ignore' | number],
  signal: AbortSignal | undefined,
  onProgress: ((bytes: number) => void) | undefined,
): { child: ChildProcess; ended: Promise<{ result: Report | null; code: number | null; sig: NodeJS.Signals | null; stderr: string; spawnError: Error | null }> } {
  const child = startNodeChild(import.meta.url, 'volume-child', args, { stdio: [...stdio, 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  let result: Report | null = null;
  let pending = '';
  const reports = child.stdio[3] as Readable;
  reports.setEncoding('utf8');
  reports.on('data', (text: string) => {
    pending += text;
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      try {
        const m = JSON.parse(line) as Report;
        if (m.done || m.error !== undefined) result = m;
        else if (typeof m.bytes === 'number') onProgress?.(m.bytes);
      } catch {
        /* not a report */
      }
    }
  });
  let spawnError: Error | null = null;
  child.on('error', (e) => {
    // An abort's kill is reported as an error too: the caller answers the abort itself.
    if ((e as Error).name !== 'AbortError') spawnError = e;
  });
  const ended = new Promise<{ code: number | null; sig: NodeJS.Signals | null }>((resolve) => child.on('close', (code, sig) => resolve({ code, sig }))).then(({ code, sig }) => ({
    result,
    code,
    sig,
    stderr,
    spawnError,
  }));
  return { child, ended };
}

/**
 * Writes the blocked-gzip tar of `dir` into the open file `fd` (a local destination's temporary
 * object, opened by the storage) from a process of its own (volume-child.ts `pack`), which hashes
 * what it writes: answers sha256 and size. The server touches none of the bytes, so none of their
 * buffers pile up in its heap (docs/backups.md). `signal` kills the child; every way out waits for it
 * to have exited.
 */
export async function packIntoFile(dir: string, fd: number, opts: { signal?: AbortSignal; onProgress?: (bytes: number) => void } = {}): Promise<{ sha256: string; sizeBytes: number }> {
  const { signal, onProgress } = opts;
  signal?.throwIfAborted();
  const { ended } = runVolumeChild(['pack', dir], ['ignore', fd], signal, onProgress);
  const { result, code, sig, stderr, spawnError } = await ended;
  if (result?.done && code === 0 && typeof result.sha256 === 'string') {
    onProgress?.(result.bytes ?? 0);
    return { sha256: result.sha256, sizeBytes: result.bytes ?? 0 };
  }
  if (signal?.aborted) throw abortError(signal);
  if (spawnError) throw new Error(`the volume could not be archived: its process did not start (${(spawnError as Error).message})`);
  throw childFailure('archiving the volume', code, sig, result?.error ? `${stderr}\n${result.error}` : stderr);
}

/** Where `extractInChild` reads the artifact: a stream the server pipes in, or a file it opened (its fd). */
export type ExtractInput = { stream: Readable } | { fd: number };

/**
 * Extracts a gzipped tar into `dir` (which must be fresh) in a process of its own (volume-child.ts
 * `unpack`, running `extractInto`): from a stream this process pipes into the child's stdin, or from an
 * open file the child reads itself (`fd` becomes its stdin: the exact file the caller opened). Answers
 * the bytes the child read; `onProgress` hears them as they go. The extraction's error (its message and
 * code) wins over the source's, which that failure stopped; a failing source kills the child and
 * rejects with the source's error; `signal` kills it and answers `AbortError`. Every way out waits for
 * the child to have exited, so the caller can remove the folder.
 */
export async function extractInChild(input: ExtractInput, dir: string, opts: { signal?: AbortSignal; onProgress?: (bytes: number) => void } = {}): Promise<{ bytes: number }> {
  const { signal, onProgress } = opts;
  signal?.throwIfAborted();
  const source = 'stream' in input ? input.stream : null;
  const { child, ended } = runVolumeChild(['unpack', dir], ['stream' in input ? 'pipe' : input.fd, 'ignore'], signal, onProgress);
  let exited = false;
  let sourceError: unknown = null;
  if (source) {
    const stdin = child.stdin!;
    stdin.on('error', () => {
      /* the child stopped reading (it failed, or was killed): its own answer says why */
    });
    void ended.then(() => {
      exited = true;
      // A failed or stopped extraction stops reading its source (a storage's download) too.
      if (!source.readableEnded) source.destroy();
    });
    void (async () => {
      try {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          if (exited || stdin.destroyed) break;
          if (!stdin.write(chunk)) {
            await new Promise<void>((resolve) => {
              const go = () => {
                stdin.off('drain', go);
                stdin.off('close', go);
                resolve();
              };
              stdin.on('drain', go);
              stdin.on('close', go);
            });
          }
        }
        stdin.end();
      } catch (e) {
        if (exited) return;
        sourceError = e;
        child.kill('SIGKILL');
      }
    })();
  }
  const { result, code, sig, stderr, spawnError } = await ended;
  if (result?.done && code === 0) {
    onProgress?.(result.bytes ?? 0);
    return { bytes: result.bytes ?? 0 };
  }
  if (result?.error !== undefined) throw Object.assign(new Error(result.error), result.code ? { code: result.code } : {});
  if (sourceError) throw sourceError;
  if (signal?.aborted) throw abortError(signal);
  if (spawnError) throw new Error(`the volume could not be extracted: its process did not start (${(spawnError as Error).message})`);
  throw childFailure('extracting the volume', code, sig, stderr);
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
  const unpack = new tar.Unpack({ cwd: dir, strict: true, preservePaths: false, processUmask: 0 });
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
