/**
 * A minimal ustar writer for the browser (POSIX.1-1988 headers, PAX extended headers for the names
 * ustar cannot hold), streamed: each file is read only when the gzip stream asks for more. Only
 * regular files are written (the server creates their folders); every file is 0644, since a
 * browser does not see file modes.
 */

const BLOCK = 512;
const enc = new TextEncoder();
/** The largest size an 11-digit octal field holds (8 GiB); the upload limit is far below it. */
const MAX_SIZE = 8 ** 11 - 1;

export interface TarFile {
  /** Path inside the archive, `/`-separated, relative (`src/index.js`). */
  path: string;
  file: Blob;
  /** Seconds since the epoch. */
  mtime: number;
}

function octal(buf: Uint8Array, offset: number, width: number, value: number): void {
  // width - 1 digits, then a NUL.
  const s = Math.floor(value).toString(8).padStart(width - 1, '0');
  buf.set(enc.encode(s), offset);
  buf[offset + width - 1] = 0;
}

function header(name: Uint8Array, prefix: Uint8Array, size: number, mtime: number, type: '0' | 'x'): Uint8Array {
  const h = new Uint8Array(BLOCK);
  h.set(name, 0);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  h[156] = type.charCodeAt(0);
  h.set(enc.encode('ustar\u000000'), 257);
  h.set(prefix, 345);
  let sum = 0;
  for (const b of h) sum += b;
  const s = sum.toString(8).padStart(6, '0');
  h.set(enc.encode(s), 148);
  h[154] = 0;
  h[155] = 0x20;
  return h;
}

/** Splits a plain-ASCII path into ustar's prefix (≤ 155 bytes) and name (≤ 100 bytes), or null. */
function ustarName(path: string): { name: Uint8Array; prefix: Uint8Array } | null {
  if (!/^[\x20-\x7e]+$/.test(path)) return null;
  if (path.length <= 100) return { name: enc.encode(path), prefix: new Uint8Array(0) };
  for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1)) {
    if (i <= 155 && path.length - i - 1 <= 100 && path.length - i - 1 > 0) return { name: enc.encode(path.slice(i + 1)), prefix: enc.encode(path.slice(0, i)) };
  }
  return null;
}

/** A PAX record `"<len> path=<value>\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = enc.encode(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return enc.encode(`${len}${new TextDecoder().decode(body)}`);
}

const padding = (size: number) => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);

/** The header blocks of one file: a PAX header first when the path needs it. */
export function headersOf(f: { path: string; size: number; mtime: number }): Uint8Array[] {
  if (f.size > MAX_SIZE) throw new Error(`${f.path} is larger than 8 GiB: a tar header cannot hold its size`);
  const plain = ustarName(f.path);
  if (plain) return [header(plain.name, plain.prefix, f.size, f.mtime, '0')];
  const rec = paxRecord('path', f.path);
  // The stand-in name other readers see: ASCII, short.
  const stand = enc.encode(f.path.replace(/[^\x20-\x7e]/g, '_').slice(-90));
  return [header(enc.encode(`PaxHeader/${f.path.length}`), new Uint8Array(0), rec.length, f.mtime, 'x'), rec, padding(rec.length), header(stand, new Uint8Array(0), f.size, f.mtime, '0')];
}

/**
 * The tar archive of `files` as a stream of bytes (pulled: one file in memory at a time).
 * `onFile` reports progress after each file (files done, bytes done).
 */
export function tarStream(files: TarFile[], onFile?: (done: number, bytes: number) => void): ReadableStream<Uint8Array> {
  let i = 0;
  let bytes = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (i >= files.length) {
        controller.enqueue(new Uint8Array(BLOCK * 2)); // the end-of-archive marker
        controller.close();
        return;
      }
      const f = files[i++]!;
      const data = new Uint8Array(await f.file.arrayBuffer());
      for (const h of headersOf({ path: f.path, size: data.length, mtime: f.mtime })) controller.enqueue(h);
      controller.enqueue(data);
      controller.enqueue(padding(data.length));
      bytes += data.length;
      onFile?.(i, bytes);
    },
  });
}

/** Gzips a stream with the browser's CompressionStream, collected into one Blob. */
export function gzip(stream: ReadableStream<Uint8Array>): Promise<Blob> {
  // The DOM typings disagree on the CompressionStream's buffer type; the bytes are the same.
  return new Response(stream.pipeThrough(new CompressionStream('gzip') as unknown as TransformStream<Uint8Array, Uint8Array>)).blob();
}
