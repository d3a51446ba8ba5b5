/**
 * Builds tar archives byte by byte for tests (hostile ones included), with node-tar's Header and
 * Pax encoders, so any type, path or link target can be written whatever a packer would allow.
 */
import { gzipSync, constants as zc, deflateRawSync } from 'node:zlib';
import { Header, Pax } from 'tar';

export interface TarEntry {
  path: string;
  type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO';
  data?: string | Buffer;
  /** Announced size (defaults to the data length). */
  size?: number;
  linkpath?: string;
  mode?: number;
  /** Write the path in a PAX header (for long or odd paths). */
  pax?: boolean;
}

export function entryBytes(e: TarEntry): Buffer {
  const data = e.data === undefined ? Buffer.alloc(0) : Buffer.from(e.data);
  const type = e.type ?? 'File';
  const size = e.size ?? (type === 'File' ? data.length : 0);
  const parts: Buffer[] = [];
  if (e.pax) {
    parts.push(new Pax({ path: e.path, linkpath: e.linkpath, mtime: new Date(0) } as never).encode());
  }
  const h = new Header({
    path: e.pax ? 'pax-entry' : e.path,
    type,
    size,
    mode: e.mode ?? (type === 'Directory' ? 0o755 : 0o644),
    linkpath: e.linkpath,
    mtime: new Date(0),
    uid: 0,
    gid: 0,
    devmaj: 0,
    devmin: 0,
  } as never);
  const block = Buffer.alloc(512);
  h.encode(block, 0);
  parts.push(block);
  if (type === 'File' && data.length) {
    parts.push(data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  return Buffer.concat(parts);
}

export function tarBytes(entries: TarEntry[]): Buffer {
  return Buffer.concat([...entries.map(entryBytes), Buffer.alloc(1024)]);
}

export function tgz(entries: TarEntry[]): Buffer {
  return gzipSync(tarBytes(entries), { level: 1 });
}

/** One gzip member of `size` zero bytes (members concatenate into one valid gzip stream). */
export function zeroMember(size: number): Buffer {
  return gzipSync(Buffer.alloc(size), { level: zc.Z_BEST_COMPRESSION });
}

/**
 * A lazily generated gzip stream of `count` empty files (f0000000, f0000001, ...), made in
 * batches so that a reader that stops early stops the generation too.
 */
export async function* manyEmptyEntries(count: number, batch = 5000): AsyncGenerator<Buffer> {
  const block = Buffer.alloc(512 * batch);
  for (let start = 0; start < count; start += batch) {
    const n = Math.min(batch, count - start);
    for (let i = 0; i < n; i++) {
      const h = new Header({ path: `e/f${String(start + i).padStart(7, '0')}`, type: 'File', size: 0, mode: 0o644, mtime: new Date(0) } as never);
      h.encode(block, i * 512);
    }
    yield gzipSync(block.subarray(0, n * 512), { level: 1 });
  }
  yield gzipSync(Buffer.alloc(1024));
}

export { deflateRawSync };
