/**
 * Test helpers for the relay: a raw HTTP POST that streams a body and resolves as soon as the server
 * answers (even while the body is still being sent), and a packer for fixture folders.
 */
import http from 'node:http';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { create as tarCreate } from 'tar';
import { entryBytes } from './targen.js';

export interface RawAnswer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
  /** Bytes the client managed to write before the answer (and the connection close). */
  sent: number;
}

export function rawPost(url: string, headers: Record<string, string>, body: Buffer | AsyncIterable<Buffer>, timeoutMs = 60000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let settled = false;
    const req = http.request(url, { method: 'POST', headers });
    const timer = setTimeout(() => {
      req.destroy();
      if (!settled) reject(new Error('timeout'));
    }, timeoutMs);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        settled = true;
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: any = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers, sent });
        req.destroy();
      });
    });
    req.on('error', (e) => {
      // Writes after the server answered and closed are expected to fail; only a request that
      // never got an answer is an error.
      setTimeout(() => {
        if (!settled) {
          clearTimeout(timer);
          settled = true;
          reject(e);
        }
      }, 500);
    });
    (async () => {
      if (Buffer.isBuffer(body)) {
        sent += body.length;
        req.end(body);
        return;
      }
      for await (const chunk of body) {
        if (settled || req.destroyed) break;
        sent += chunk.length;
        if (!req.write(chunk)) await new Promise<void>((r) => {
          const done = () => {
            req.off('drain', done);
            req.off('close', done);
            r();
          };
          req.on('drain', done);
          req.on('close', done);
        });
      }
      if (!req.destroyed) req.end();
    })().catch(() => {});
  });
}

/** A gzipped tarball of a folder (as `tar czf - -C dir .`). */
export async function packDir(dir: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of tarCreate({ gzip: true, cwd: dir, portable: true }, ['.']) as unknown as AsyncIterable<Buffer>) parts.push(c);
  return Buffer.concat(parts);
}

/**
 * A valid gzipped tar stream that never ends early: one file announced at `announced` bytes whose
 * content is zeros, compressed at level 0 (so the compressed size grows as fast as the content).
 */
export async function* endlessTgz(totalCompressed: number, announced = 900 * 1024 * 1024): AsyncGenerator<Buffer> {
  const gz = createGzip({ level: 0 });
  const header = entryBytes({ path: 'big.bin', size: announced });
  const zero = Buffer.alloc(1024 * 1024);
  const src = Readable.from(
    (function* () {
      yield header;
      let n = 0;
      while (n < totalCompressed) {
        n += zero.length;
        yield zero;
      }
    })(),
  );
  src.pipe(gz);
  for await (const c of gz) yield c as Buffer;
}
