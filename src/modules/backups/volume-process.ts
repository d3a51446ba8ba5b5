import type { ChildProcess } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import { startNodeChild } from '../../lib/node-child.js';

/**
 * The server's side of a volume's archiving and extraction, which run in a short-lived child process
 * each (volume-child.ts; docs/backups.md "Where a volume is archived and extracted"): the child's
 * stdout as the archive stream, or the child writing a local artifact file itself; the child
 * extracting from a stream piped in or from a local artifact file it reads itself. A child's buffers
 * live and die in that process, whose memory goes back to the system when it exits.
 */

/**
 * A gzipped tar stream of the folder's contents (entries relative to the folder), made by a process of
 * its own (volume-child.ts `pack`): the stdout of that child. Why a child (docs/backups.md, docs/decisions.md):
 * every chunk of the tar and of the gzip is a fresh buffer, and in the server's process V8 lets tens of
 * megabytes of dead ones pile up before it collects them, which the server's RSS keeps after the
 * backup; a child's memory ends with it. The stream fails when the child fails or is killed (in
 * Berth's words; its stderr's tail is the error's `detail`, for the server log only); `signal` kills it,
 * and so does destroying the stream.
 */
export function volumeSource(dir: string, signal?: AbortSignal): Readable {
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  if (signal?.aborted) {
    process.nextTick(() => out.destroy(abortError(signal)));
    return out;
  }
  const child = startNodeChild(import.meta.url, 'volume-child', ['pack', dir], { stdio: ['ignore', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  child.stdout!.pipe(out, { end: false });
  child.on('error', (e) => {
    if ((e as Error).name !== 'AbortError') out.destroy(new Error(`the volume could not be archived: its process did not start (${e.message})`));
  });
  child.on('close', (code, sig) => {
    if (code === 0) out.end();
    else if (signal?.aborted) out.destroy(abortError(signal));
    else out.destroy(childFailure('archiving the volume', code, sig, stderr));
  });
  out.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return out;
}

/** A child's failure in Berth's words; its stderr's tail goes along as `detail` (the server log's). */
function childFailure(what: string, code: number | null, sig: NodeJS.Signals | null, stderr: string): Error {
  const words = sig ? `${what} stopped: its process was killed (${sig})` : `${what} failed (exit ${code}); the server log has its output`;
  return Object.assign(new Error(words), { detail: stderr.trim().slice(-4000) });
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR', cause: signal.reason });
}

/** What a volume child reports on fd 3 (volume-child.ts): progress, then done (with what it read or wrote) or its error. */
type Report = { done?: boolean; error?: string; code?: string; bytes?: number; sha256?: string };

/**
 * glibc's allocator in a volume child: buffers up to 8 MiB from its heap, and up to 256 MiB of freed heap
 * kept (64 MiB more taken each time it grows) instead of handed back. By default the 1 MiB buffers of the
 * stream (read chunks, inflated blocks) were mapped, or the heap trimmed and grown again, so their pages
 * were faulted in afresh all the time: 49-78k page faults per 1 GiB extraction, against 16k with this,
 * and the extraction in 1.7-2.0 s instead of 2.6-3.1 s (docs/benchmarks.md, 2026-11-30 23:50). The child
 * does one volume and exits, so what it keeps is returned then; its peak RSS did not move (102-106 MB).
 */
const VOLUME_CHILD_MALLOC = 'glibc.malloc.trim_threshold=268435456:glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold=8388608';

/**
 * Starts a volume child whose fd 3 carries its reports, and answers once it has exited (all its stdio
 * closed): its last report (done or error), its exit, its stderr's tail. `onProgress` hears the
 * bytes it reports on the way.
 */
function runVolumeChild(
  args: string[],
  stdio: ['pipe' | 'ignore' | number, 'ignore' | number],
  signal: AbortSignal | undefined,
  onProgress: ((bytes: number) => void) | undefined,
): { child: ChildProcess; ended: Promise<{ result: Report | null; code: number | null; sig: NodeJS.Signals | null; stderr: string; spawnError: Error | null }> } {
  const child = startNodeChild(import.meta.url, 'volume-child', args, { stdio: [...stdio, 'pipe', 'pipe'], env: { GLIBC_TUNABLES: VOLUME_CHILD_MALLOC }, ...(signal ? { signal } : {}) });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-4000);
  });
  let result: Report | null = null;
  let pending = '';
  const reports = child.stdio[3] as Readable;
  reports.setEncoding('utf8');
  reports.on('data', (text: string) => {
    pending += text;
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      try {
        const m = JSON.parse(line) as Report;
        if (m.done || m.error !== undefined) result = m;
        else if (typeof m.bytes === 'number') onProgress?.(m.bytes);
      } catch {
        /* not a report */
      }
    }
  });
  let spawnError: Error | null = null;
  child.on('error', (e) => {
    // An abort's kill is reported as an error too: the caller answers the abort itself.
    if ((e as Error).name !== 'AbortError') spawnError = e;
  });
  const ended = new Promise<{ code: number | null; sig: NodeJS.Signals | null }>((resolve) => child.on('close', (code, sig) => resolve({ code, sig }))).then(({ code, sig }) => ({
    result,
    code,
    sig,
    stderr,
    spawnError,
  }));
  return { child, ended };
}

/**
 * Writes the blocked-gzip tar of `dir` into the open file `fd` (a local destination's temporary
 * object, opened by the storage) from a process of its own (volume-child.ts `pack`), which hashes
 * what it writes: answers sha256 and size. The server touches none of the bytes, so none of their
 * buffers pile up in its heap (docs/backups.md). `signal` kills the child; every way out waits for it
 * to have exited.
 */
export async function packIntoFile(dir: string, fd: number, opts: { signal?: AbortSignal; onProgress?: (bytes: number) => void } = {}): Promise<{ sha256: string; sizeBytes: number }> {
  const { signal, onProgress } = opts;
  signal?.throwIfAborted();
  const { ended } = runVolumeChild(['pack', dir], ['ignore', fd], signal, onProgress);
  const { result, code, sig, stderr, spawnError } = await ended;
  if (result?.done && code === 0 && typeof result.sha256 === 'string') {
    onProgress?.(result.bytes ?? 0);
    return { sha256: result.sha256, sizeBytes: result.bytes ?? 0 };
  }
  if (signal?.aborted) throw abortError(signal);
  // The archiving's own error (a folder it cannot read, a full disk), with its code, as in this process.
  if (result?.error !== undefined) throw Object.assign(new Error(result.error), result.code ? { code: result.code } : {}, { detail: stderr.trim() });
  if (spawnError) throw new Error(`the volume could not be archived: its process did not start (${(spawnError as Error).message})`);
  throw childFailure('archiving the volume', code, sig, stderr);
}

/** Where `extractInChild` reads the artifact: a stream the server pipes in, or a file it opened (its fd). */
export type ExtractInput = { stream: Readable } | { fd: number };

/**
 * Extracts a gzipped tar into `dir` (which must be fresh) in a process of its own (volume-child.ts
 * `unpack`, running `extractInto`): from a stream this process pipes into the child's stdin, or from an
 * open file the child reads itself (`fd` becomes its stdin: the exact file the caller opened). Answers
 * the bytes the child read; `onProgress` hears them as they go. The extraction's error (its message and
 * code) wins over the source's, which that failure stopped; a failing source kills the child and
 * rejects with the source's error; `signal` kills it and answers `AbortError`. Every way out waits for
 * the child to have exited, so the caller can remove the folder.
 */
export async function extractInChild(input: ExtractInput, dir: string, opts: { signal?: AbortSignal; onProgress?: (bytes: number) => void } = {}): Promise<{ bytes: number }> {
  const { signal, onProgress } = opts;
  signal?.throwIfAborted();
  const source = 'stream' in input ? input.stream : null;
  const { child, ended } = runVolumeChild(['unpack', dir], ['stream' in input ? 'pipe' : input.fd, 'ignore'], signal, onProgress);
  let exited = false;
  let sourceError: unknown = null;
  if (source) {
    const stdin = child.stdin!;
    stdin.on('error', () => {
      /* the child stopped reading (it failed, or was killed): its own answer says why */
    });
    void ended.then(() => {
      exited = true;
      // A failed or stopped extraction stops reading its source (a storage's download) too.
      if (!source.readableEnded) source.destroy();
    });
    void (async () => {
      try {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          if (exited || stdin.destroyed) break;
          if (!stdin.write(chunk)) {
            await new Promise<void>((resolve) => {
              const go = () => {
                stdin.off('drain', go);
                stdin.off('close', go);
                resolve();
              };
              stdin.on('drain', go);
              stdin.on('close', go);
            });
          }
        }
        stdin.end();
      } catch (e) {
        if (exited) return;
        sourceError = e;
        child.kill('SIGKILL');
      }
    })();
  }
  const { result, code, sig, stderr, spawnError } = await ended;
  if (result?.done && code === 0) {
    onProgress?.(result.bytes ?? 0);
    return { bytes: result.bytes ?? 0 };
  }
  if (result?.error !== undefined) throw Object.assign(new Error(result.error), result.code ? { code: result.code } : {});
  if (sourceError) throw sourceError;
  if (signal?.aborted) throw abortError(signal);
  if (spawnError) throw new Error(`the volume could not be extracted: its process did not start (${(spawnError as Error).message})`);
  throw childFailure('extracting the volume', code, sig, stderr);
}
