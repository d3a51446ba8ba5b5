import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, fstatSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CHUNK_BYTES } from '../../lib/blockgzip.js';
import { extractInto, packVolume } from './volume-archive.js';

/**
 * The process that archives or extracts one volume (docs/backups.md "Where a volume is archived and
 * extracted"), started by volume-process.ts with an argument array and no secrets in its environment:
 *
 * - `pack <dir>`: the blocked-gzip tar of `<dir>` on stdout; exits 0 when all of it was written, else
 *   1 with the error on stderr. When stdout is a file (a local destination's object, opened by the
 *   server) it also hashes what it writes and reports on fd 3 as below, with `"sha256"` on done.
 * - `unpack <dir>`: extracts the gzipped tar on stdin (a pipe, or the artifact's own file opened by the
 *   server) into `<dir>`, and reports on fd 3, one JSON line each: `{"bytes":n}` (read so far, every
 *   250 ms), then `{"done":true,"bytes":n}` or `{"error":message,"code":code,"bytes":n}`.
 *
 * Its buffers live and die in this process: its memory goes back to the system when it exits.
 */

/** Everything lives in this call (one pack or unpack per process; no module state). */
async function main(argv: string[]): Promise<void> {
  const [cmd, dir] = argv;
  if (!dir || (cmd !== 'pack' && cmd !== 'unpack')) throw new Error('usage: volume-child pack|unpack <dir>');
  const report = (m: object) => writeSync(3, `${JSON.stringify(m)}\n`);
  if (cmd === 'pack') {
    // A pipe the server reads (an S3 upload): an asynchronous writer (process.stdout would write to a
    // pipe synchronously).
    if (!fstatSync(1).isFile()) return pipeline(packVolume(dir), new Socket({ fd: 1, readable: false, writable: true }));
    // The destination's file itself: hashed here, and the sha256 and size reported.
    const hash = createHash('sha256');
    const counted = counter(report, (chunk) => hash.update(chunk));
    try {
      await pipeline(packVolume(dir), counted, createWriteStream('', { fd: 1, highWaterMark: 1024 * 1024 }));
      report({ done: true, bytes: counted.bytes, sha256: hash.digest('hex') });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      report({ error: String(err?.message ?? e), ...(err?.code ? { code: err.code } : {}) });
      process.exitCode = 1;
    }
    return;
  }
  const input: Readable = fstatSync(0).isFile()
    ? createReadStream('', { fd: 0, highWaterMark: CHUNK_BYTES })
    : new Socket({ fd: 0, readable: true, writable: false });
  const counted = counter(report);
  input.on('error', (e) => counted.destroy(e));
  try {
    await extractInto(input.pipe(counted), dir);
    report({ done: true, bytes: counted.bytes });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    report({ error: String(err?.message ?? e), ...(err?.code ? { code: err.code } : {}), bytes: counted.bytes });
    process.exitCode = 1;
  }
  input.destroy();
}

/** A pass-through that counts the bytes (reported every 250 ms) and shows each chunk to `see`. */
function counter(report: (m: object) => void, see?: (chunk: Buffer) => void): Transform & { bytes: number } {
  let last = Date.now();
  const t = new Transform({
    highWaterMark: 1024 * 1024,
    transform(chunk: Buffer, _enc, cb) {
      see?.(chunk);
      out.bytes += chunk.length;
      const now = Date.now();
      if (now - last >= 250) {
        last = now;
        report({ bytes: out.bytes });
      }
      cb(null, chunk);
    },
  });
  const out = Object.assign(t, { bytes: 0 });
  return out;
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
