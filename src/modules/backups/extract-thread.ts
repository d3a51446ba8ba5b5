import type { Readable } from 'node:stream';
import { startWorker } from '../../lib/worker-file.js';

/** What the main thread tells the extracting thread (extract-worker.ts). */
export type ToExtractor = { type: 'chunk'; data: Uint8Array } | { type: 'end' } | { type: 'abort' };
/** What the extracting thread answers: room for more bytes, then done or the error. */
export type FromExtractor = { type: 'ack'; bytes: number } | { type: 'done' } | { type: 'error'; message: string; code?: string; aborted: boolean };

/** Bytes posted and not yet taken by the extracting thread's stream, at most. */
const IN_FLIGHT_BYTES = 8 * 1024 * 1024;

/**
 * Extracts a gzipped tar stream into `dir` (which must be fresh) on a worker thread of its own, as
 * `extractInto` does on this one. Why a thread (docs/backups.md, docs/benchmarks.md 2026-11-30): the
 * bytes of a volume (gigabytes of buffers) drive V8 to collect the whole heap every few tens of
 * milliseconds, and the server's heap is four times the size of a thread that only extracts; on the
 * main thread the same extraction took two to three times as long, and slowed every request meanwhile.
 * The source stays on this thread (a storage's stream, a hash over it); its chunks are handed over
 * without a copy where they own their memory. A failure rejects with the extraction's message and code;
 * `signal` stops it (the folder may be partly written: the caller removes it, as with `extractInto`).
 */
export async function extractOffThread(source: Readable, dir: string, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  const worker = startWorker(import.meta.url, 'extract-worker', { dir });
  let inFlight = 0;
  let wake: (() => void) | null = null;
  let settled: { error: Error | null } | null = null;
  const finished = new Promise<void>((resolve, reject) => {
    const settle = (error: Error | null) => {
      if (settled) return;
      settled = { error };
      wake?.();
      // A failed or stopped extraction stops reading its source (a storage's download) too.
      if (error) source.destroy();
      if (error) reject(error);
      else resolve();
    };
    worker.on('message', (m: FromExtractor) => {
      if (m.type === 'ack') {
        inFlight -= m.bytes;
        if (inFlight < IN_FLIGHT_BYTES) wake?.();
      } else if (m.type === 'done') settle(null);
      else if (m.aborted && signal?.aborted) settle(abortError(signal));
      else settle(Object.assign(new Error(m.message), m.code ? { code: m.code } : {}));
    });
    worker.on('error', (e) => settle(e));
    worker.on('exit', (code) => settle(new Error(`the extraction stopped unexpectedly (exit ${code})`)));
  });
  finished.catch(() => {});
  const onAbort = () => worker.postMessage({ type: 'abort' } satisfies ToExtractor);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (settled) break;
      // A chunk that owns its whole ArrayBuffer moves to the worker; a slice of a shared one is copied.
      const data = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? new Uint8Array(chunk.buffer) : new Uint8Array(chunk);
      inFlight += data.byteLength;
      try {
        worker.postMessage({ type: 'chunk', data } satisfies ToExtractor, [data.buffer as ArrayBuffer]);
      } catch {
        // Memory that cannot be moved (a buffer made outside JavaScript): a copy goes instead.
        worker.postMessage({ type: 'chunk', data: new Uint8Array(data) } satisfies ToExtractor);
      }
      while (inFlight >= IN_FLIGHT_BYTES && !settled) await new Promise<void>((r) => (wake = r));
      wake = null;
    }
    if (!settled) worker.postMessage({ type: 'end' } satisfies ToExtractor);
    await finished;
  } catch (e) {
    // The extraction failed (its error wins over the source's, which that failure stopped), or the
    // source failed or was aborted: the extraction stops, and its files are closed before this answers.
    const failed = (settled as { error: Error | null } | null)?.error;
    if (failed) throw failed;
    if (!settled) {
      worker.postMessage({ type: 'abort' } satisfies ToExtractor);
      await finished.catch(() => {});
    }
    throw signal?.aborted ? abortError(signal) : e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    worker.removeAllListeners('exit');
    await worker.terminate();
  }
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR', cause: signal.reason });
}
