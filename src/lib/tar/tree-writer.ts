import { closeSync, constants as fsc, createWriteStream, mkdirSync, openSync, promises as fsp, writeSync } from 'node:fs';
import path from 'node:path';
import type { ReadEntry } from 'tar';
import { ExtractError, writeError } from './extract-error.js';

const SMALL_FILE = 256 * 1024;
const MAX_PENDING_BYTES = 32 * 1024 * 1024;
/** Above the entry cap, so a flood of empty entries meets the cap before it meets this wait. */
const MAX_QUEUED_FILES = 150_000;
const WRITE_FLAGS = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | (fsc.O_NOFOLLOW ?? 0);

/**
 * Writes an extraction's regular files and directories under a fresh root, and nothing else:
 * files are opened with O_NOFOLLOW and created 0644 or 0755, directories are created only here.
 * Small files are queued and written synchronously in short slices; large ones are streamed.
 * Any write failure goes to the extractor's `fail`; once `failed()` is set nothing more is written.
 */
export class TreeWriter {
  private readonly madeDirs = new Set<string>(['']);
  private pending = new Set<Promise<void>>();
  private queue: { rel: string; parent: string; abs: string; mode: number; chunks: Buffer[]; size: number }[] = [];
  private queueBytes = 0;
  private pumping = false;
  private queueWaiters: (() => void)[] = [];

  constructor(
    private readonly root: string,
    private readonly failed: () => ExtractError | null,
    private readonly fail: (e: ExtractError) => void,
  ) {}

  /**
   * What the input should wait for before it sends more: the queue of small files, when it piles up.
   * (A large file's stream holds the parser itself while it is full.)
   */
  backpressure(): Promise<unknown>[] {
    return this.queueBytes > MAX_PENDING_BYTES || this.queue.length > MAX_QUEUED_FILES ? [this.queueDrained()] : [];
  }

  /** The streamed (large) file writes still in flight. */
  inFlight(): Promise<void>[] {
    return [...this.pending];
  }

  queueDrained(): Promise<void> {
    if (!this.queue.length && !this.pumping) return Promise.resolve();
    return new Promise((r) => this.queueWaiters.push(r));
  }

  private track(p: Promise<void>): void {
    const t = p.then(
      () => {
        this.pending.delete(t);
      },
      (e: NodeJS.ErrnoException) => {
        this.pending.delete(t);
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
    if (this.failed()) this.queue = [];
    try {
      while (this.queue.length && !this.failed() && performance.now() < until) {
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
    if (this.failed()) {
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

  /** Creates the directory `rel` (and its parents) under the root, once. */
  ensureDirSync(rel: string): void {
    if (this.madeDirs.has(rel)) return;
    mkdirSync(path.join(this.root, rel), { recursive: true, mode: 0o755 });
    let p = rel;
    while (p && !this.madeDirs.has(p)) {
      this.madeDirs.add(p);
      p = path.posix.dirname(p) === '.' ? '' : path.posix.dirname(p);
    }
  }

  /** Writes the file entry's data to `rel` (a safe relative path); `size` is its announced size. */
  writeFile(entry: ReadEntry, rel: string, size: number): void {
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
        if (this.failed()) return;
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
          if (this.failed()) {
            entry.resume();
            return resolve();
          }
          const ws = createWriteStream(abs, { flags: WRITE_FLAGS as unknown as string, mode });
          ws.on('error', reject);
          ws.on('close', () => resolve());
          entry.on('data', (c: Buffer) => {
            count(c);
            if (this.failed()) return;
            if (!ws.write(c)) {
              entry.pause();
              ws.once('drain', () => entry.resume());
            }
          });
          entry.on('end', () => ws.end());
          entry.resume();
        }),
    );
    this.track(done);
  }
}
