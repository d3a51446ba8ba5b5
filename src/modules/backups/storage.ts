import { createReadStream, createWriteStream } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CHUNK_BYTES } from '../../lib/blockgzip.js';
import type { ProgressFn } from '../../lib/hash-counter.js';
import { hashFileHandle } from '../../lib/hash-file.js';
import type { OutboundPolicy } from '../../lib/outbound.js';

/** Where artifacts live: a folder or an S3-compatible bucket. Keys are `/`-separated relative paths. */
export interface Storage {
  /**
   * Streams `body` to `key` (overwrites). `sizeHint`, an upper estimate of the size, lets a
   * multipart store pick parts large enough for the whole object (S3 allows 10 000 parts).
   */
  put(key: string, body: Readable, signal?: AbortSignal, sizeHint?: number): Promise<void>;
  /** A stream of the object's bytes. */
  get(key: string, signal?: AbortSignal): Promise<Readable>;
  /** Size of the object, or null when it does not exist. */
  size(key: string): Promise<number | null>;
  /** Makes `from` final as `to` (rename or copy + delete). */
  finalize(from: string, to: string): Promise<void>;
  /** Deletes the object; a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (throws when the listing fails). */
  list(prefix: string): Promise<string[]>;
  /**
   * Optional: a token naming the exact stored object (a local file's device, inode, size, and
   * modification and change times). Equal tokens mean the same bytes: any write changes the times.
   */
  identity?(key: string): Promise<string>;
  /** Optional: the object's bytes, only if the object opened still has `identity` (else ArtifactChangedError). */
  getPinned?(key: string, identity: string): Promise<Readable>;
  /**
   * Optional (local files): the object's file opened for reading, only if it still has `identity` (else
   * ArtifactChangedError): the caller hands the handle's fd to a volume's extracting child, which then
   * reads exactly that file. The caller closes it.
   */
  openPinned?(key: string, identity: string): Promise<FileHandle>;
  /**
   * Optional (local files): the object's file, created or emptied, opened for writing (its folders
   * made): a volume's archiving child writes into it. The caller closes it.
   */
  openForWrite?(key: string): Promise<FileHandle>;
  /** Optional: what was written through `openForWrite` is complete (its fsync starts, beside the read-back; `finalize` awaits it). */
  written?(key: string): void;
  /**
   * Optional: the object's sha256 and size, read by the storage itself (a local file through one
   * reused buffer, hash-file.ts); with `identity`, only if the object opened still has it.
   */
  hash?(key: string, opts: { identity?: string; onProgress?: ProgressFn; signal?: AbortSignal }): Promise<{ sha256: string; sizeBytes: number }>;
}

export class ArtifactChangedError extends Error {
  constructor() {
    super('the artifact changed in the destination after the restore was prepared; prepare the restore again');
    this.name = 'ArtifactChangedError';
  }
}

/** fsync(2) of a file's or a folder's contents, through a read-only handle (fsync is per inode, not per handle). */
async function fsyncPath(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

export interface LocalDestinationConfig {
  kind: 'local';
  path: string;
}

export interface S3DestinationConfig {
  kind: 's3';
  endpoint: string | null;
  region: string;
  bucket: string;
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

export type DestinationConfig = LocalDestinationConfig | S3DestinationConfig;

export function checkKey(key: string): void {
  if (!key || key.startsWith('/') || key.split('/').some((p) => p === '..' || p === '.' || p === '')) {
    throw new Error(`bad storage key ${key}`);
  }
}

export class LocalStorage implements Storage {
  /**
   * Objects written by `put` whose fsync is under way: started as the write ends, so that it runs
   * beside the read-back (hash) that follows, and awaited by `finalize` before the rename.
   */
  private readonly syncing = new Map<string, Promise<void>>();

  constructor(readonly root: string) {}

  private file(key: string): string {
    checkKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Readable, signal?: AbortSignal): Promise<void> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    this.syncing.delete(file);
    await pipeline(body, createWriteStream(file, { flags: 'w', highWaterMark: 1024 * 1024 }), { signal });
    const synced = fsyncPath(file);
    synced.catch(() => {}); // heard by finalize, which awaits it
    this.syncing.set(file, synced);
  }

  async get(key: string): Promise<Readable> {
    const file = this.file(key);
    await stat(file);
    return createReadStream(file, { highWaterMark: CHUNK_BYTES });
  }

  async identity(key: string): Promise<string> {
    return identityOf(await stat(this.file(key), { bigint: true }));
  }

  async getPinned(key: string, identity: string): Promise<Readable> {
    return (await this.openPinned(key, identity)).createReadStream({ highWaterMark: CHUNK_BYTES });
  }

  async openPinned(key: string, identity: string): Promise<FileHandle> {
    // The identity is checked on the opened file, so the bytes read are those of the file it names.
    const fh = await open(this.file(key), 'r');
    try {
      if (identityOf(await fh.stat({ bigint: true })) !== identity) throw new ArtifactChangedError();
    } catch (e) {
      await fh.close();
      throw e;
    }
    return fh;
  }

  async openForWrite(key: string): Promise<FileHandle> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    this.syncing.delete(file);
    return open(file, 'w');
  }

  written(key: string): void {
    const file = this.file(key);
    const synced = fsyncPath(file);
    synced.catch(() => {}); // heard by finalize, which awaits it
    this.syncing.set(file, synced);
  }

  async hash(key: string, opts: { identity?: string; onProgress?: ProgressFn; signal?: AbortSignal } = {}): Promise<{ sha256: string; sizeBytes: number }> {
    const fh = await open(this.file(key), 'r');
    try {
      if (opts.identity !== undefined && identityOf(await fh.stat({ bigint: true })) !== opts.identity) throw new ArtifactChangedError();
      return await hashFileHandle(fh, opts.onProgress, opts.signal);
    } finally {
      await fh.close();
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.file(key))).size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  /**
   * Durable before it is final: the object's bytes are on disk (the fsync `put` started, or one now
   * for an object another process wrote) before the rename, and the rename is on disk (its folders'
   * fsync) before this answers. Without them a crash soon after a backup was recorded `succeeded`
   * could leave the final name empty or missing, while its read-back had passed from the page cache.
   */
  async finalize(from: string, to: string): Promise<void> {
    const src = this.file(from);
    const dst = this.file(to);
    const synced = this.syncing.get(src) ?? fsyncPath(src);
    this.syncing.delete(src);
    await synced;
    await mkdir(path.dirname(dst), { recursive: true });
    await rename(src, dst);
    await fsyncPath(path.dirname(dst));
    if (path.dirname(src) !== path.dirname(dst)) await fsyncPath(path.dirname(src));
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    this.syncing.delete(file);
    await rm(file, { force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const base = prefix ? this.file(prefix.replace(/\/+$/, '')) : this.root;
    const out: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        // A prefix nobody wrote to yet is an empty listing; a missing root is an error.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && dir !== this.root) return;
        throw e;
      }
      for (const ent of entries) {
        const r = rel ? `${rel}/${ent.name}` : ent.name;
        if (ent.isDirectory()) await walk(path.join(dir, ent.name), r);
        else if (ent.isFile()) out.push(r);
      }
    };
    await stat(this.root);
    await walk(base, prefix.replace(/\/+$/, ''));
    return out.sort();
  }
}

/**
 * Opens a destination's storage; the AWS SDK is loaded only when an S3 destination is used. Every
 * connection of an S3 storage goes through `outbound` (no internal addresses unless allowed).
 */
export async function openStorage(cfg: DestinationConfig, outbound: OutboundPolicy): Promise<Storage> {
  if (cfg.kind === 'local') return new LocalStorage(cfg.path);
  const { S3Storage } = await import('./s3-storage.js');
  return new S3Storage(cfg, { outbound });
}
