import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HashCounter, type ProgressFn } from '../../lib/hash-counter.js';
import type { Storage } from './storage.js';
import { extractInChild, packIntoFile, volumeSource } from './volume-process.js';

/**
 * Artifacts in a destination, hashed on the way: writing one from a source stream, reading one back
 * to hash it (pinned to the exact object where the storage can), downloading it to a file, and
 * extracting a volume artifact into a folder.
 */

export type { ProgressFn } from '../../lib/hash-counter.js';


/** Streams `source` through a hasher into `storage` at `key`; answers sha256 and size. */
export async function writeArtifact(
  storage: Storage,
  key: string,
  source: Readable,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
  sizeHint?: number,
): Promise<{ sha256: string; sizeBytes: number }> {
  const hc = new HashCounter(onProgress);
  // The storage attaches its own handlers later (after awaits); never leave an error unheard.
  hc.on('error', () => {});
  source.on('error', (e) => hc.destroy(e));
  const piped = source.pipe(hc);
  await storage.put(key, piped, signal, sizeHint);
  if (hc.errored) throw hc.errored;
  return { sha256: hc.digest(), sizeBytes: hc.bytes };
}

/**
 * Writes the gzipped tar of the volume folder `dir` to `key`, hashed on the way; answers sha256 and size.
 * Archiving runs in a child process either way (volume-process.ts). Where the storage opens the object's
 * file (local), the child writes and hashes it itself and this process touches none of the bytes;
 * elsewhere (S3) this process reads the child's stdout into `writeArtifact`. Why: the server's peak RSS
 * (docs/backups.md "Where a volume is archived and extracted").
 */
export async function writeVolumeArtifact(
  storage: Storage,
  key: string,
  dir: string,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
  sizeHint?: number,
): Promise<{ sha256: string; sizeBytes: number }> {
  if (!storage.openForWrite) return writeArtifact(storage, key, volumeSource(dir, signal), onProgress, signal, sizeHint);
  const fh = await storage.openForWrite(key);
  let packed: { sha256: string; sizeBytes: number };
  try {
    packed = await packIntoFile(dir, fh.fd, { ...(signal ? { signal } : {}), ...(onProgress ? { onProgress } : {}) });
  } finally {
    await fh.close();
  }
  storage.written?.(key);
  return packed;
}

/** Reads the object back and hashes it. */
export async function hashObject(storage: Storage, key: string, onProgress?: ProgressFn, signal?: AbortSignal): Promise<{ sha256: string; sizeBytes: number }> {
  if (storage.hash) return storage.hash(key, { ...(onProgress ? { onProgress } : {}), ...(signal ? { signal } : {}) });
  return hashReadable(await storage.get(key, signal), onProgress, signal);
}

/**
 * Hashes the object and, where the storage can name the exact object (local files), answers its
 * identity too: read through a handle opened on that identity, and still the same afterwards.
 * `identity` is null when the storage cannot pin objects or the object changed meanwhile.
 */
export async function hashPinned(storage: Storage, key: string, signal?: AbortSignal): Promise<{ sha256: string; sizeBytes: number; identity: string | null }> {
  if (!storage.identity || !storage.getPinned) return { ...(await hashObject(storage, key, undefined, signal)), identity: null };
  const before = await storage.identity(key);
  const got = storage.hash ? await storage.hash(key, { identity: before, ...(signal ? { signal } : {}) }) : await hashReadable(await storage.getPinned(key, before), undefined, signal);
  const after = await storage.identity(key);
  return { ...got, identity: before === after ? before : null };
}

async function hashReadable(src: Readable, onProgress?: ProgressFn, signal?: AbortSignal): Promise<{ sha256: string; sizeBytes: number }> {
  const hc = new HashCounter(onProgress);
  await pipeline(src, hc, new Writable({ write: (_c, _e, cb) => cb() }), { signal });
  return { sha256: hc.digest(), sizeBytes: hc.bytes };
}

/** Copies the object to a local file, hashing on the way. */
export async function downloadTo(storage: Storage, key: string, file: string, onProgress?: ProgressFn, signal?: AbortSignal): Promise<{ sha256: string; sizeBytes: number }> {
  await mkdir(path.dirname(file), { recursive: true });
  const src = await storage.get(key, signal);
  const hc = new HashCounter(onProgress);
  await pipeline(src, hc, createWriteStream(file), { signal });
  return { sha256: hc.digest(), sizeBytes: hc.bytes };
}

/**
 * Extracts the artifact into `dir` in a process of its own (volume-process.ts `extractInChild`),
 * hashing the compressed bytes on the way. With `pinned` (an identity from hashPinned) it reads exactly
 * that object and does not hash it again (`sha256` is null): prepare hashed those bytes, and gzip's own
 * CRC-32 and length check still catch a damaged read. A local file pinned is read by the child itself,
 * from the handle opened on that identity (the server touches none of its bytes); otherwise this
 * process reads the object and pipes it in.
 */
export async function extractArtifact(
  storage: Storage,
  key: string,
  dir: string,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
  pinned?: string,
): Promise<{ sha256: string | null; sizeBytes: number }> {
  if (pinned && storage.openPinned) {
    const fh = await storage.openPinned(key, pinned);
    try {
      const got = await extractInChild({ fd: fh.fd }, dir, { ...(signal ? { signal } : {}), ...(onProgress ? { onProgress } : {}) });
      return { sha256: null, sizeBytes: got.bytes };
    } finally {
      await fh.close();
    }
  }
  const pin = pinned && storage.getPinned ? pinned : null;
  const src = pin ? await storage.getPinned!(key, pin) : await storage.get(key, signal);
  const hc = new HashCounter(onProgress, !pin);
  hc.on('error', () => {});
  src.on('error', (e) => hc.destroy(e));
  await extractInChild({ stream: src.pipe(hc) }, dir, signal ? { signal } : {});
  return { sha256: pin ? null : hc.digest(), sizeBytes: hc.bytes };
}
