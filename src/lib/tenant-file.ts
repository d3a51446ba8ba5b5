/**
 * Reading a tenant's file on the host (contract section 18: the server never blocks on, follows or
 * trusts a tenant's file). Whatever the server reads from a source or a release (`package.json`,
 * `Procfile`, `railpack.json`, lockfiles, ...) goes through here:
 *
 * - the path below the root is checked component by component with lstat: a folder on the way that
 *   is a link (`src -> /etc`) is not followed, nor is `..`;
 * - the file is opened with O_NOFOLLOW (a link, also one swapped in after the check, fails with
 *   ELOOP), O_NONBLOCK (opening a FIFO returns at once instead of waiting for a writer) and
 *   O_NOCTTY (a terminal device never becomes the server's);
 * - fstat of the open file must say a regular file of at most `max` bytes (1 MiB by default), and
 *   the read stops at `max` bytes even if the file grows meanwhile;
 * - where /proc is there, the open file's own path must still lie inside the root (a folder on the
 *   way swapped for a link between the check and the open is caught).
 *
 * A regular file never blocks a read indefinitely, so the synchronous variant (for detection, which
 * is synchronous) is bounded too; the asynchronous one runs on libuv's thread pool.
 *
 * Each read answers the text, or why it was ignored, so callers can write a build-log line
 * (`ignoredLine`).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, readlinkSync, realpathSync } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** The largest tenant file the server reads (contract section 18). */
export const TENANT_FILE_MAX_BYTES = 1024 * 1024;

export type TenantFileProblem = 'missing' | 'a link' | 'not a regular file' | 'too large' | 'outside the source' | 'unreadable';

export type TenantFile = { text: string; problem: null } | { text: null; problem: TenantFileProblem };

export interface TenantReadOptions {
  /** Files larger than this are refused as `too large` (default 1 MiB). */
  max?: number;
  /** Read only the first `head` bytes, whatever the file's size (a lockfile's header). */
  head?: number;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (constants.O_NOCTTY ?? 0);

/** `[berth] ignored <name>: <why>` without the prefix: what a caller writes into the build log. */
export function ignoredLine(name: string, problem: TenantFileProblem): string {
  return `ignored ${name}: ${problem}`;
}

/** The components of `rel` below the root, or null when it climbs out (`..`) or is absolute. */
function componentsOf(rel: string): string[] | null {
  if (path.isAbsolute(rel)) return null;
  const parts = rel.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (!parts.length || parts.some((p) => p === '..')) return null;
  return parts;
}

/** What an error of lstat or open means for the caller. */
function problemOf(e: unknown): TenantFileProblem {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
  if (code === 'ELOOP') return 'a link';
  // ENXIO: a socket; ENODEV / EOPNOTSUPP: a device or special file that cannot be opened.
  if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') return 'not a regular file';
  return 'unreadable';
}

/** The check of one folder on the way (lstat's answer): null when it may be entered. */
function folderProblem(st: { isSymbolicLink(): boolean; isDirectory(): boolean }): TenantFileProblem | null {
  if (st.isSymbolicLink()) return 'a link';
  return st.isDirectory() ? null : 'missing';
}

function isInside(real: string, realRoot: string): boolean {
  return real === realRoot || real.startsWith(realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep);
}

/** The fstat check: null when the open file may be read. */
function fileProblem(st: { isFile(): boolean; size: number }, opts: TenantReadOptions): TenantFileProblem | null {
  if (!st.isFile()) return 'not a regular file';
  if (opts.head === undefined && st.size > (opts.max ?? TENANT_FILE_MAX_BYTES)) return 'too large';
  return null;
}

/** How many bytes to read at most: the head, or one more than `max` (so a file that grew is seen to). */
function capOf(size: number, opts: TenantReadOptions): number {
  if (opts.head !== undefined) return Math.max(0, opts.head);
  return Math.min(size, opts.max ?? TENANT_FILE_MAX_BYTES) + 1;
}

function finish(buf: Buffer, n: number, opts: TenantReadOptions): TenantFile {
  if (opts.head === undefined && n > (opts.max ?? TENANT_FILE_MAX_BYTES)) return { text: null, problem: 'too large' };
  return { text: buf.subarray(0, n).toString('utf8'), problem: null };
}

/**
 * Reads `rel` below `root` (a folder the server made: a build's source folder) as a tenant's file,
 * asynchronously; see the module's comment for what is refused.
 */
export async function readTenantFile(root: string, rel: string, opts: TenantReadOptions = {}): Promise<TenantFile> {
  const parts = componentsOf(rel);
  if (!parts) return { text: null, problem: 'outside the source' };
  let fh: FileHandle | null = null;
  try {
    let at = root;
    for (const part of parts.slice(0, -1)) {
      at = path.join(at, part);
      const p = folderProblem(await lstat(at));
      if (p) return { text: null, problem: p };
    }
    fh = await open(path.join(root, ...parts), OPEN_FLAGS);
    const st = await fh.stat();
    const p = fileProblem(st, opts);
    if (p) return { text: null, problem: p };
    if (!(await openedInside(`/proc/self/fd/${fh.fd}`, root))) return { text: null, problem: 'outside the source' };
    const cap = capOf(st.size, opts);
    const buf = Buffer.alloc(cap);
    let n = 0;
    while (n < cap) {
      const { bytesRead } = await fh.read(buf, n, cap - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return finish(buf, n, opts);
  } catch (e) {
    return { text: null, problem: problemOf(e) };
  } finally {
    await fh?.close().catch(() => {});
  }
}

/** Whether the open file (its /proc/self/fd link) lies inside `root`; true where /proc is not there. */
async function openedInside(fdLink: string, root: string): Promise<boolean> {
  let real: string;
  try {
    real = await readlink(fdLink);
  } catch {
    return true;
  }
  return isInside(real, await realpath(root));
}

/**
 * The same read, synchronously, for detection (synchronous code): it cannot block either, since the
 * file is opened without waiting (O_NONBLOCK) and only a regular file of bounded size is read.
 */
export function readTenantFileSync(root: string, rel: string, opts: TenantReadOptions = {}): TenantFile {
  const parts = componentsOf(rel);
  if (!parts) return { text: null, problem: 'outside the source' };
  let fd: number | null = null;
  try {
    let at = root;
    for (const part of parts.slice(0, -1)) {
      at = path.join(at, part);
      const p = folderProblem(lstatSync(at));
      if (p) return { text: null, problem: p };
    }
    fd = openSync(path.join(root, ...parts), OPEN_FLAGS);
    const st = fstatSync(fd);
    const p = fileProblem(st, opts);
    if (p) return { text: null, problem: p };
    if (!openedInsideSync(`/proc/self/fd/${fd}`, root)) return { text: null, problem: 'outside the source' };
    const cap = capOf(st.size, opts);
    const buf = Buffer.alloc(cap);
    let n = 0;
    while (n < cap) {
      const read = readSync(fd, buf, n, cap - n, n);
      if (read === 0) break;
      n += read;
    }
    return finish(buf, n, opts);
  } catch (e) {
    return { text: null, problem: problemOf(e) };
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

function openedInsideSync(fdLink: string, root: string): boolean {
  let real: string;
  try {
    real = readlinkSync(fdLink);
  } catch {
    return true;
  }
  return isInside(real, realpathSync(root));
}
