/**
 * Phase timings of the start and build paths, for profiling (docs/benchmarks.md "Where a wake and an
 * upload-to-ready spend their time"). Off unless `BERTH_TRACE_SPANS=1`: then every span ends with one
 * line on stderr, `[span] <name> <ms> ms <detail>`, the time from its start to its end. Costs one
 * boolean check when off.
 */

const ON = process.env.BERTH_TRACE_SPANS === '1';

/** Whether spans are printed (`BERTH_TRACE_SPANS=1`). */
export function spansOn(): boolean {
  return ON;
}

/** Starts a span; the function it answers ends it (call it once). */
export function span(name: string, detail = ''): () => void {
  if (!ON) return noop;
  const t0 = performance.now();
  return () => {
    process.stderr.write(`[span] ${name} ${(performance.now() - t0).toFixed(1)} ms${detail ? ` ${detail}` : ''}\n`);
  };
}

/** Runs `fn` inside a span named `name` (ended whether it resolves or throws). */
export async function timed<T>(name: string, fn: () => Promise<T> | T, detail = ''): Promise<T> {
  if (!ON) return fn();
  const end = span(name, detail);
  try {
    return await fn();
  } finally {
    end();
  }
}

function noop(): void {}
