import { Readable } from 'node:stream';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { FromExtractor, ToExtractor } from './extract-thread.js';
import { extractInto } from './volume-archive.js';

/**
 * The extraction of a volume artifact on a worker thread (extract-thread.ts): the main thread posts
 * the gzipped tar's bytes (transferred, not copied), this thread inflates and unpacks them into
 * `workerData.dir` and answers once: done, or the error (its message and code).
 */
/** Everything lives in this call (one extraction per worker thread; no module state). */
function run(port: MessagePort, dir: string): void {
  const abort = new AbortController();
  /** Acknowledgements held back while the stream's buffer is full (sent when it asks for more). */
  let held = 0;
  const send = (m: FromExtractor) => port.postMessage(m);
  const source = new Readable({
    highWaterMark: 4 * 1024 * 1024,
    read() {
      if (held > 0) {
        send({ type: 'ack', bytes: held });
        held = 0;
      }
    },
  });
  port.on('message', (m: ToExtractor) => {
    if (m.type === 'chunk') {
      const bytes = m.data.byteLength;
      if (source.push(Buffer.from(m.data.buffer, m.data.byteOffset, bytes))) send({ type: 'ack', bytes });
      else held += bytes;
    } else if (m.type === 'end') source.push(null);
    else if (m.type === 'abort') abort.abort();
  });
  extractInto(source, dir, abort.signal).then(
    () => send({ type: 'done' }),
    (e: NodeJS.ErrnoException) => send({ type: 'error', message: e?.message ?? String(e), ...(e?.code ? { code: e.code } : {}), aborted: abort.signal.aborted }),
  );
}

run(parentPort!, (workerData as { dir: string }).dir);
