import { spawn } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable, Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { BLOCK_BYTES, BlockGunzip, BlockGzip, CHUNK_BYTES } from '../../lib/blockgzip.js';
import { PgToolError } from './failures.js';
import type { Storage } from './storage.js';

/**
 * The streaming engine: a service's data becomes one artifact in one pass (tar + gzip for a volume,
 * `pg_dump -Fc` for a PostgreSQL database), hashed on the way; restores stream it back. No shell:
 * programs are spawned with argument arrays, connection details passed in PG* environment variables.
 */

export const GZIP_LEVEL = 6;

export type ProgressFn = (bytes: number) => void;

/** Counts and hashes the bytes passing through; reports progress at most every 250 ms. */
export class HashCounter extends Transform {
  readonly hash: Hash = createHash('sha256');
  bytes = 0;
  private last = 0;

  constructor(
    private readonly onProgress?: ProgressFn,
    private readonly hashing = true,
  ) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.hashing) this.hash.update(chunk);
    this.bytes += chunk.length;
    const now = Date.now();
    if (this.onProgress && now - this.last >= 250) {
      this.last = now;
      this.onProgress(this.bytes);
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    this.onProgress?.(this.bytes);
    cb();
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

// ------------------------------------------------------------------ volumes

/**
 * A gzipped tar stream of the folder's contents (entries relative to the folder). The gzip is blocked
 * (src/lib/blockgzip.ts): 1 MiB blocks compressed on all cores, still one ordinary `.tar.gz` to gzip/tar.
 */
export function volumeSource(dir: string): Readable {
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

/** Extracts a gzipped tar stream into `dir` (which must be fresh). */
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
 * Swaps `staged` in as `target`: target -> `<target>.old-<tag>`, staged -> target, old removed. If the
 * second rename fails the old folder is put back, so the target is always whole.
 */
export async function swapIn(staged: string, target: string, tag: string): Promise<{ old: string | null }> {
  const old = `${target}.old-${tag}`;
  const hadTarget = existsSync(target);
  if (hadTarget) await rename(target, old);
  try {
    await rename(staged, target);
  } catch (e) {
    if (hadTarget) await rename(old, target);
    throw e;
  }
  // The caller removes `old` (after the restore is reported; repairVolume() sweeps leftovers).
  return { old: hadTarget ? old : null };
}

/** After a crash mid-swap: put back `<target>.old-*` when the target is missing; drop staging leftovers. */
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
}

// ------------------------------------------------------------------ PostgreSQL

let pgBinDir: string | null | undefined;

/** The folder of the newest installed PostgreSQL client tools, or null to use PATH. */
function findPgBinDir(): string | null {
  if (pgBinDir !== undefined) return pgBinDir;
  pgBinDir = null;
  if (process.env.BERTH_PG_BIN_DIR) return (pgBinDir = process.env.BERTH_PG_BIN_DIR);
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v) && existsSync(`/usr/lib/postgresql/${v}/bin/pg_dump`))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) pgBinDir = `/usr/lib/postgresql/${versions[0]}/bin`;
  } catch {
    /* not a Debian layout */
  }
  return pgBinDir;
}

export function pgBin(name: 'pg_dump' | 'pg_restore'): string {
  const dir = findPgBinDir();
  return dir ? path.join(dir, name) : name;
}

/**
 * libpq environment for a postgres:// URL (the password never appears in an argument list).
 * `hostaddr`, the address the outbound check resolved and accepted, pins the connection to it
 * (`PGHOSTADDR`; the host name still serves TLS verification), so a DNS answer that changes after
 * the check cannot move pg_dump elsewhere. A `host` parameter is never honoured.
 */
export function pgEnv(connectionUrl: string, hostaddr?: string): { env: Record<string, string>; dbname: string } {
  const u = new URL(connectionUrl);
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('connection URL must start with postgres://');
  const env: Record<string, string> = {};
  if (u.hostname) env.PGHOST = decodeURIComponent(u.hostname.replace(/^\[|\]$/g, ''));
  if (hostaddr) env.PGHOSTADDR = hostaddr;
  if (u.port) env.PGPORT = u.port;
  if (u.username) env.PGUSER = decodeURIComponent(u.username);
  if (u.password) env.PGPASSWORD = decodeURIComponent(u.password);
  const params = u.searchParams;
  if (params.get('sslmode')) env.PGSSLMODE = params.get('sslmode')!;
  const dbname = decodeURIComponent(u.pathname.replace(/^\//, '')) || env.PGUSER || 'postgres';
  env.PGDATABASE = dbname;
  env.PGCONNECT_TIMEOUT = '10';
  return { env, dbname };
}

/**
 * pg_dump/pg_restore's failure in Berth's words. The tool's stderr carries the database server's
 * own messages (and tells a refused port from a silent one): it goes to the server log only.
 */
export function pgFailure(tool: 'pg_dump' | 'pg_restore', exit: number | string | null, stderr: string): PgToolError {
  const text = stderr.trim();
  let words: string;
  if (/password authentication failed|authentication failed|no pg_hba\.conf entry|role "[^"]*" does not exist|password must be supplied|no password supplied/i.test(text)) {
    words = 'the database refused the credentials';
  } else if (/database "[^"]*" does not exist/i.test(text)) {
    words = 'the database named in the connection URL does not exist';
  } else if (/could not connect|connection to server|could not translate host name|timeout expired|server closed the connection|Connection refused|No route to host|Network is unreachable|SSL/i.test(text)) {
    words = 'could not connect to the database';
  } else {
    words = `${tool} failed (exit ${exit ?? 'unknown'}); the server log has its output`;
  }
  return new PgToolError(words, text.slice(-4000));
}

function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'HOME'];
  const out: Record<string, string> = {};
  for (const k of keep) if (process.env[k]) out[k] = process.env[k]!;
  return out;
}

/**
 * `pg_dump -Fc` of the database, as a stream. The stream errors when pg_dump exits non-zero
 * (with the end of its stderr as the message).
 */
export function pgDumpSource(connectionUrl: string, signal?: AbortSignal, hostaddr?: string): Readable {
  const { env } = pgEnv(connectionUrl, hostaddr);
  const child = spawn(pgBin('pg_dump'), ['--format=custom', '--no-password'], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    signal,
  });
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  let stdoutDone = false;
  let exit: { code: number | null; sig: NodeJS.Signals | null } | null = null;
  const settle = () => {
    if (!stdoutDone || !exit) return;
    if (exit.code === 0) out.end();
    else out.destroy(pgFailure('pg_dump', exit.code ?? exit.sig, stderr));
  };
  child.stdout.on('data', (d: Buffer) => {
    if (!out.write(d)) {
      child.stdout.pause();
      out.once('drain', () => child.stdout.resume());
    }
  });
  child.stdout.on('end', () => {
    stdoutDone = true;
    settle();
  });
  child.on('error', (e) => out.destroy(new Error(`pg_dump could not run: ${e.message}`)));
  child.on('close', (code, sig) => {
    exit = { code, sig };
    stdoutDone = true;
    settle();
  });
  out.on('close', () => {
    if (!exit) child.kill('SIGKILL');
  });
  return out;
}

/**
 * `pg_restore --single-transaction --no-acl` of a local dump file into the attached database only
 * (objects of the dump are dropped and recreated inside the one transaction, so a failure leaves
 * the database as it was).
 */
export function pgRestoreFile(connectionUrl: string, file: string, signal?: AbortSignal, hostaddr?: string): Promise<void> {
  const { env, dbname } = pgEnv(connectionUrl, hostaddr);
  return new Promise((resolve, reject) => {
    const child = spawn(
      pgBin('pg_restore'),
      ['--single-transaction', '--no-acl', '--no-owner', '--clean', '--if-exists', '--exit-on-error', '--no-password', `--dbname=${dbname}`, file],
      { env: { ...baseEnv(), ...env }, stdio: ['ignore', 'ignore', 'pipe'], signal },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    child.on('error', (e) => reject(new Error(`pg_restore could not run: ${e.message}`)));
    child.on('close', (code, sig) => {
      if (code === 0) resolve();
      else reject(pgFailure('pg_restore', code ?? sig, stderr));
    });
  });
}

// ------------------------------------------------------------------ artifact helpers

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

/** Reads the object back and hashes it. */
export async function hashObject(storage: Storage, key: string, onProgress?: ProgressFn, signal?: AbortSignal): Promise<{ sha256: string; sizeBytes: number }> {
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
  const got = await hashReadable(await storage.getPinned(key, before), undefined, signal);
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
 * Extracts the artifact into `dir`, hashing the compressed bytes on the way. With `pinned` (an
 * identity from hashPinned) it reads exactly that object and does not hash it again (`sha256` is
 * null): prepare hashed those bytes, and gzip's own CRC-32 and length check still catch a damaged read.
 */
export async function extractArtifact(
  storage: Storage,
  key: string,
  dir: string,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
  pinned?: string,
): Promise<{ sha256: string | null; sizeBytes: number }> {
  const pin = pinned && storage.getPinned ? pinned : null;
  const src = pin ? await storage.getPinned!(key, pin) : await storage.get(key, signal);
  const hc = new HashCounter(onProgress, !pin);
  hc.on('error', () => {});
  src.on('error', (e) => hc.destroy(e));
  await extractInto(src.pipe(hc), dir, signal);
  return { sha256: pin ? null : hc.digest(), sizeBytes: hc.bytes };
}
