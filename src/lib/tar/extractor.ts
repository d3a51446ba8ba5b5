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
 *
 * This file holds the stream (gunzip, tar parsing, caps) and the decision per entry; entry paths are
 * checked in entry-path.ts and the files and directories are written by tree-writer.ts.
 */
import path from 'node:path';
import { createGunzip, type Gunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { linkStaysInside, safeEntryPath } from './entry-path.js';
import { ExtractError, cleanTarMessage, writeError } from './extract-error.js';
import { DEFAULT_LIMITS, type ExtractLimits } from './limits.js';
import { TreeWriter } from './tree-writer.js';

export interface ExtractResult {
  files: number;
  directories: number;
  bytes: number;
  /** Links that stay inside the root: not written (only files and directories are). */
  skipped: { path: string; type: string }[];
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
  private readonly writer: TreeWriter;
  private failure: ExtractError | null = null;
  private failWaiters: ((e: ExtractError) => void)[] = [];
  private decompressed = 0;
  private entries = 0;
  private bytes = 0;
  private files = 0;
  private directories = 0;
  private readonly skipped: ExtractResult['skipped'] = [];
  private parserDone: Promise<void>;
  private sniffed = false;
  private sawEof = false;
  private afterEof = 0;

  constructor(
    root: string,
    private readonly limits: ExtractLimits = DEFAULT_LIMITS,
  ) {
    this.writer = new TreeWriter(
      root,
      () => this.failure,
      (e) => this.fail(e),
    );
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
    waits.push(...this.writer.backpressure());
    if (waits.length) await Promise.race([Promise.all(waits), this.failedPromise()]);
    if (this.failure) throw this.failure;
  }

  /** Ends the stream and waits until every entry is on disk. */
  async end(): Promise<ExtractResult> {
    if (this.failure) throw this.failure;
    this.gunzip.end();
    await Promise.race([this.parserDone, this.failedPromise()]);
    await Promise.race([this.writer.queueDrained(), this.failedPromise()]);
    while (this.writer.inFlight().length && !this.failure) await Promise.race([Promise.all(this.writer.inFlight()), this.failedPromise()]);
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
        this.writer.writeFile(entry, rel, size);
        return;
      }
      if (DIR_TYPES.has(type)) {
        this.directories += 1;
        entry.resume();
        if (rel) {
          try {
            this.writer.ensureDirSync(rel);
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
