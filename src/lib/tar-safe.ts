/**
 * Safe extraction of an untrusted gzipped tarball into a fresh directory.
 *
 * node-tar is used only to PARSE the archive (headers, PAX, long names); every write is made here,
 * and only two kinds of things are ever written: regular files and directories. No symlink, hardlink,
 * device or FIFO is ever created, so nothing in the tree can redirect a later write outside the root
 * (the whole family of node-tar link advisories cannot apply). On top of that:
 *
 * - every entry path is checked: no `..` segment, not absolute, no drive letter (`C:`), no backslash,
 *   no NUL, at most `maxDepth` segments and 4096 bytes;
 * - links whose target would leave the root are refused as hostile; links that stay inside are skipped
 *   (not written) and reported; devices, FIFOs and unknown types are refused;
 * - modes are reduced to 0644 / 0755 (no setuid, setgid or sticky bits); owners are never changed;
 * - files are opened with O_NOFOLLOW; directories are created only by this code, under the root;
 * - caps: entry count, total extracted bytes (announced sizes are checked before a byte is written),
 *   decompressed stream size (gzip bombs), path depth;
 * - a corrupt gzip stream or tar header is an error (`kind: 'invalid'`).
 *
 * The caller owns the root: on any error it removes the whole directory.
 */
import { closeSync, constants as fsc, createWriteStream, mkdirSync, openSync, promises as fsp, writeSync } from 'node:fs';
import path from 'node:path';
import { createGunzip, type Gunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';

export interface ExtractLimits {
  maxEntries: number;
  maxBytes: number;
  maxDepth: number;
  /** Cap on the decompressed tar stream (headers included): stops gzip bombs of zeros or headers. */
  maxDecompressedBytes: number;
}

export const DEFAULT_LIMITS: ExtractLimits = {
  maxEntries: 100_000,
  maxBytes: 1024 ** 3,
  maxDepth: 64,
  maxDecompressedBytes: 1024 ** 3 + 256 * 1024 ** 2,
};

export type ExtractErrorKind = 'invalid' | 'hostile' | 'limit';

export class ExtractError extends Error {
  constructor(
    readonly kind: ExtractErrorKind,
    message: string,
    readonly entry?: string,
  ) {
    super(message);
    this.name = 'ExtractError';
  }
}

export interface ExtractResult {
  files: number;
  directories: number;
  bytes: number;
  /** Links that stay inside the root: not written (only files and directories are). */
  skipped: { path: string; type: string }[];
}

const MAX_PATH_BYTES = 4096;
const MAX_SEGMENT_BYTES = 255;
const SMALL_FILE = 256 * 1024;
const MAX_PENDING_BYTES = 32 * 1024 * 1024;
/** Above the entry cap, so a flood of empty entries meets the cap before it meets this wait. */
const MAX_QUEUED_FILES = 150_000;
const WRITE_FLAGS = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | (fsc.O_NOFOLLOW ?? 0);

/**
 * The entry path as a clean relative POSIX path ('' for the root itself), or an ExtractError.
 * Exported for tests and for the CLI packer.
 */
export function safeEntryPath(raw: string, maxDepth = DEFAULT_LIMITS.maxDepth): string {
  const show = JSON.stringify(raw.slice(0, 200));
  if (raw.includes('\0')) throw new ExtractError('hostile', `entry ${show} has a NUL byte in its path`, raw);
  if (Buffer.byteLength(raw) > MAX_PATH_BYTES) throw new ExtractError('hostile', `entry path is longer than ${MAX_PATH_BYTES} bytes`, raw.slice(0, 200));
  if (raw.includes('\\')) throw new ExtractError('hostile', `entry ${show} has a backslash in its path`, raw);
  if (raw.startsWith('/')) throw new ExtractError('hostile', `entry ${show} has an absolute path`, raw);
  if (/^[A-Za-z]:/.test(raw)) throw new ExtractError('hostile', `entry ${show} has a drive-letter path`, raw);
  const parts: string[] = [];
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') throw new ExtractError('hostile', `entry ${show} leaves the upload root (..)`, raw);
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES) throw new ExtractError('hostile', `entry ${show} has a path segment longer than ${MAX_SEGMENT_BYTES} bytes`, raw);
    parts.push(seg);
  }
  if (parts.length > maxDepth) throw new ExtractError('limit', `entry ${show} is nested deeper than ${maxDepth} folders`, raw);
  return parts.join('/');
}

/** Does a link target (relative to `base`, a relative dir inside the root) stay inside the root? */
function linkStaysInside(base: string, target: string): boolean {
  if (!target || target.includes('\0') || target.includes('\\') || target.startsWith('/') || /^[A-Za-z]:/.test(target)) return false;
  const joined = path.posix.normalize(path.posix.join(base || '.', target));
  return joined !== '..' && !joined.startsWith('../') && !path.posix.isAbsolute(joined);
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const DIR_TYPES = new Set(['Directory', 'GNUDumpDir']);

/**
 * A streaming extractor: `write()` compressed chunks as they arrive (it resolves when the data may
 * continue), then `end()`. Any failure rejects the pending and every later call with an ExtractError.
 * `root` must be an existing, empty directory made for this extraction.
 */
export class SafeExtractor {
  private readonly gunzip: Gunzip;
  private readonly parser: Parser;
  private failure: ExtractError | null = null;
  private failWaiters: ((e: ExtractError) => void)[] = [];
  private decompressed = 0;
  private entries = 0;
  private bytes = 0;
  private files = 0;
  private directories = 0;
  private readonly skipped: ExtractResult['skipped'] = [];
  private readonly madeDirs = new Set<string>(['']);
  private pending = new Set<Promise<void>>();
  private pendingBytes = 0;
  private parserDone: Promise<void>;
  private sniffed = false;
  private sawEof = false;
  private queue: { rel: string; parent: string; abs: string; mode: number; chunks: Buffer[]; size: number }[] = [];
  private queueBytes = 0;
  private pumping = false;
  private queueWaiters: (() => void)[] = [];
  private afterEof = 0;

  constructor(
    private readonly root: string,
    private readonly limits: ExtractLimits = DEFAULT_LIMITS,
  ) {
    this.gunzip = createGunzip({ chunkSize: 256 * 1024 });
    this.parser = new Parser({ strict: true, maxMetaEntrySize: 64 * 1024 });
    this.parser.on('entry', (e: ReadEntry) => this.onEntry(e));
    this.parser.on('error', (e: Error) => this.fail(new ExtractError('invalid', `not a valid tar archive: ${cleanTarMessage(e)}`)));
    this.parser.on('warn', (_code: string, msg: string | Error) => this.fail(new ExtractError('invalid', `not a valid tar archive: ${cleanTarMessage(msg)}`)));
    this.gunzip.on('error', (e: Error) => this.fail(new ExtractError('invalid', `not a valid gzip stream: ${e.message}`)));
    this.gunzip.on('data', (c: Buffer) => {
      if (this.failure) return;
      this.decompressed += c.length;
      if (this.decompressed > this.limits.maxDecompressedBytes) {
        this.fail(new ExtractError('limit', `the archive expands to more than ${this.limits.maxDecompressedBytes} bytes`));
        return;
      }
      if (this.sawEof) {
        // Trailing bytes after the end-of-archive blocks are ignored, up to a little slack.
        this.afterEof += c.length;
        if (this.afterEof > 1024 * 1024) this.fail(new ExtractError('limit', 'the archive carries more than 1 MiB of data after its end (a gzip bomb?)'));
        return;
      }
      if (!this.parser.write(c)) this.gunzip.pause();
    });
    this.parser.on('eof', () => {
      this.sawEof = true;
      this.gunzip.resume();
    });
    this.parser.on('drain', () => this.gunzip.resume());
    this.parserDone = new Promise<void>((resolve) => {
      this.gunzip.on('end', () => {
        if (this.failure) return resolve();
        this.parser.end();
      });
      this.parser.on('end', () => resolve());
      this.failWaiters.push(() => resolve());
    });
  }

  get failed(): ExtractError | null {
    return this.failure;
  }

  private fail(e: ExtractError): void {
    if (this.failure) return;
    this.failure = e;
    try {
      this.gunzip.removeAllListeners('data');
      this.gunzip.on('error', () => {});
      this.gunzip.destroy();
      this.parser.removeAllListeners('entry');
      this.parser.on('error', () => {});
      this.parser.abort(e);
    } catch {
      /* already torn down */
    }
    const ws = this.failWaiters;
    this.failWaiters = [];
    for (const w of ws) w(e);
  }

  private failedPromise(): Promise<never> {
    return new Promise<never>((_, reject) => {
      if (this.failure) return reject(this.failure);
      this.failWaiters.push(reject);
    });
  }

  /** Feeds compressed bytes; resolves when more may be written. */
  async write(chunk: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.sniffed && chunk.length > 0) {
      this.sniffed = true;
      if (chunk.length >= 2 && (chunk[0] !== 0x1f || chunk[1] !== 0x8b)) {
        this.fail(new ExtractError('invalid', 'not a gzip stream: send a gzipped tarball (tar czf)'));
        throw this.failure;
      }
    }
    const ok = this.gunzip.write(chunk);
    const waits: Promise<unknown>[] = [];
    if (!ok) waits.push(new Promise((r) => this.gunzip.once('drain', r)));
    if (this.pendingBytes > MAX_PENDING_BYTES) waits.push(Promise.race([...this.pending]));
    if (this.queueBytes > MAX_PENDING_BYTES || this.queue.length > MAX_QUEUED_FILES) waits.push(this.queueDrained());
    if (waits.length) await Promise.race([Promise.all(waits), this.failedPromise()]);
    if (this.failure) throw this.failure;
  }

  /** Ends the stream and waits until every entry is on disk. */
  async end(): Promise<ExtractResult> {
    if (this.failure) throw this.failure;
    this.gunzip.end();
    await Promise.race([this.parserDone, this.failedPromise()]);
    await Promise.race([this.queueDrained(), this.failedPromise()]);
    while (this.pending.size && !this.failure) await Promise.race([Promise.all([...this.pending]), this.failedPromise()]);
    if (this.failure) throw this.failure;
    if (!this.sniffed) throw new ExtractError('invalid', 'the upload is empty');
    return { files: this.files, directories: this.directories, bytes: this.bytes, skipped: this.skipped };
  }

  /** File bytes committed so far (announced sizes, counted before a byte of the file is written). */
  get committedBytes(): number {
    return this.bytes;
  }

  /** Stops everything (the caller removes the root). */
  abort(reason = 'aborted'): void {
    this.fail(new ExtractError('invalid', reason));
  }

  private track(p: Promise<void>, size: number): void {
    this.pendingBytes += size;
    const t = p.then(
      () => {
        this.pending.delete(t);
        this.pendingBytes -= size;
      },
      (e: NodeJS.ErrnoException) => {
        this.pending.delete(t);
        this.pendingBytes -= size;
        this.fail(writeError(e));
      },
    );
    this.pending.add(t);
  }

  private async ensureDir(rel: string): Promise<void> {
    if (this.madeDirs.has(rel)) return;
    // Only this code creates directories under the fresh root, and it never makes links, so every
    // component is a real directory made here (mkdir refuses a path through a file).
    await fsp.mkdir(path.join(this.root, rel), { recursive: true, mode: 0o755 });
    let p = rel;
    while (p && !this.madeDirs.has(p)) {
      this.madeDirs.add(p);
      p = path.posix.dirname(p) === '.' ? '' : path.posix.dirname(p);
    }
  }

  private schedulePump(): void {
    if (this.pumping) return;
    this.pumping = true;
    setImmediate(() => this.pump());
  }

  /**
   * Writes queued small files synchronously, in slices of a few milliseconds so the event loop
   * stays responsive. Parsing runs ahead of the writes, so the entry cap or a hostile entry is
   * usually met before the files in front of it were written.
   */
  private pump(): void {
    const until = performance.now() + 8;
    if (this.failure) this.queue = [];
    try {
      while (this.queue.length && !this.failure && performance.now() < until) {
        const q = this.queue.shift()!;
        this.queueBytes -= q.size;
        this.ensureDirSync(q.parent);
        const fd = openSync(q.abs, WRITE_FLAGS, q.mode);
        try {
          for (const c of q.chunks) writeSync(fd, c);
        } finally {
          closeSync(fd);
        }
      }
    } catch (e) {
      this.fail(writeError(e as NodeJS.ErrnoException));
    }
    if (this.failure) {
      this.queue = [];
      this.queueBytes = 0;
    }
    if (this.queue.length) setImmediate(() => this.pump());
    else {
      this.pumping = false;
      const ws = this.queueWaiters;
      this.queueWaiters = [];
      for (const w of ws) w();
    }
  }

  private queueDrained(): Promise<void> {
    if (!this.queue.length && !this.pumping) return Promise.resolve();
    return new Promise((r) => this.queueWaiters.push(r));
  }

  private ensureDirSync(rel: string): void {
    if (this.madeDirs.has(rel)) return;
    mkdirSync(path.join(this.root, rel), { recursive: true, mode: 0o755 });
    let p = rel;
    while (p && !this.madeDirs.has(p)) {
      this.madeDirs.add(p);
      p = path.posix.dirname(p) === '.' ? '' : path.posix.dirname(p);
    }
  }

  private onEntry(entry: ReadEntry): void {
    if (this.failure) return entry.resume();
    try {
      this.entries += 1;
      if (this.entries > this.limits.maxEntries) throw new ExtractError('limit', `the archive has more than ${this.limits.maxEntries} entries`);
      const rel = safeEntryPath(entry.path, this.limits.maxDepth);
      const type = entry.type;
      if (FILE_TYPES.has(type)) {
        if (!rel) throw new ExtractError('invalid', 'a file entry names the upload root', entry.path);
        const size = entry.size ?? 0;
        this.bytes += size;
        if (this.bytes > this.limits.maxBytes) throw new ExtractError('limit', `the archive extracts to more than ${this.limits.maxBytes} bytes`, rel);
        this.files += 1;
        this.writeFile(entry, rel, size);
        return;
      }
      if (DIR_TYPES.has(type)) {
        this.directories += 1;
        entry.resume();
        if (rel) {
          try {
            this.ensureDirSync(rel);
          } catch (e) {
            throw writeError(e as NodeJS.ErrnoException);
          }
        }
        return;
      }
      if (type === 'SymbolicLink' || type === 'Link') {
        const base = type === 'SymbolicLink' ? path.posix.dirname(rel) : '';
        if (!linkStaysInside(base === '.' ? '' : base, entry.linkpath ?? '')) {
          throw new ExtractError('hostile', `${type === 'Link' ? 'hardlink' : 'symlink'} ${JSON.stringify(rel)} points outside the upload root`, rel);
        }
        if (this.skipped.length < 100) this.skipped.push({ path: rel, type: type === 'Link' ? 'hardlink' : 'symlink' });
        entry.resume();
        return;
      }
      throw new ExtractError('hostile', `entry ${JSON.stringify(rel)} is a ${type} entry: only files and directories are accepted`, rel);
    } catch (e) {
      entry.resume();
      this.fail(e instanceof ExtractError ? e : new ExtractError('invalid', (e as Error).message));
    }
  }

  private writeFile(entry: ReadEntry, rel: string, size: number): void {
    const abs = path.join(this.root, rel);
    const parent = path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel);
    const mode = (entry.mode ?? 0o644) & 0o111 ? 0o755 : 0o644;
    let written = 0;
    const count = (c: Buffer) => {
      written += c.length;
      if (written > size) this.fail(new ExtractError('invalid', `entry ${JSON.stringify(rel)} is longer than its header says`, rel));
    };
    if (size <= SMALL_FILE) {
      // Small files are written synchronously when complete: for trees of many small files this is
      // several times faster than a round trip through the thread pool per file, and each write is
      // short (at most SMALL_FILE bytes).
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => {
        count(c);
        chunks.push(c);
      });
      entry.on('end', () => {
        if (this.failure) return;
        this.queue.push({ rel, parent, abs, mode, chunks, size });
        this.queueBytes += size;
        this.schedulePump();
      });
      return;
    }
    // A large file: stream it (the parser waits while the file stream is full).
    entry.pause();
    const done = this.ensureDir(parent).then(
      () =>
        new Promise<void>((resolve, reject) => {
          if (this.failure) {
            entry.resume();
            return resolve();
          }
          const ws = createWriteStream(abs, { flags: WRITE_FLAGS as unknown as string, mode });
          ws.on('error', reject);
          ws.on('close', () => resolve());
          entry.on('data', (c: Buffer) => {
            count(c);
            if (this.failure) return;
            if (!ws.write(c)) {
              entry.pause();
              ws.once('drain', () => entry.resume());
            }
          });
          entry.on('end', () => ws.end());
          entry.resume();
        }),
    );
    this.track(done, 0);
  }
}

function writeError(e: NodeJS.ErrnoException): ExtractError {
  if (e instanceof ExtractError) return e;
  const where = e.path ? ` (${JSON.stringify(e.path.split(path.sep).slice(-3).join('/'))})` : '';
  if (e.code === 'ENOTDIR' || e.code === 'EEXIST' || e.code === 'EISDIR' || e.code === 'ELOOP') {
    return new ExtractError('invalid', `the archive uses one path both as a file and as a folder${where}`);
  }
  if (e.code === 'ENOSPC') return new ExtractError('limit', 'the server is out of disk space');
  return new ExtractError('invalid', `could not write an entry${where}: ${e.code ?? e.message}`);
}

function cleanTarMessage(m: unknown): string {
  const s = m instanceof Error ? m.message : String(m);
  return s.replace(/^TAR_\w+:\s*/, '').slice(0, 200);
}

/** Extracts a whole stream (an async iterable of compressed chunks) into `root`. */
export async function extractSafely(source: AsyncIterable<Buffer>, root: string, limits: ExtractLimits = DEFAULT_LIMITS): Promise<ExtractResult> {
  const x = new SafeExtractor(root, limits);
  try {
    for await (const chunk of source) await x.write(chunk);
    return await x.end();
  } catch (e) {
    x.abort();
    throw e;
  }
}
