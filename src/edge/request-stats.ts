/**
 * The edge's requests per app since the last read (issue 38 point 1): counts by status class, bytes
 * sent and the durations for p50/p95/p99. One accumulator per app, made on its first request and
 * reused: recording a request writes numbers into it (no allocation). Durations beyond SAMPLE_SIZE in
 * one interval are kept as a uniform sample (reservoir sampling), so the percentiles stay honest under
 * load at a fixed memory cost.
 */
export const SAMPLE_SIZE = 1024;

export interface RequestSummary {
  /** Requests by status class: [1xx, 2xx, 3xx, 4xx, 5xx]. */
  classes: [number, number, number, number, number];
  /** Response body bytes sent. */
  bytes: number;
  /** Duration percentiles (ms), null when there was no request. */
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

class Accumulator {
  readonly classes = new Float64Array(5);
  bytes = 0;
  count = 0;
  readonly durations = new Float64Array(SAMPLE_SIZE);
}

function percentile(sorted: Float64Array, q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export class RequestStats {
  private readonly apps = new Map<string, Accumulator>();

  add(app: string, status: number, durationMs: number, bytes: number): void {
    let a = this.apps.get(app);
    if (!a) {
      a = new Accumulator();
      this.apps.set(app, a);
    }
    const cls = Math.min(4, Math.max(0, Math.floor(status / 100) - 1));
    a.classes[cls]!++;
    a.bytes += bytes;
    const n = a.count++;
    if (n < SAMPLE_SIZE) a.durations[n] = durationMs;
    else {
      const j = Math.floor(Math.random() * (n + 1));
      if (j < SAMPLE_SIZE) a.durations[j] = durationMs;
    }
  }

  /** Every app's requests since the last drain (apps without one are left out), and starts over. */
  drain(): Map<string, RequestSummary> {
    const out = new Map<string, RequestSummary>();
    for (const [app, a] of this.apps) {
      if (a.count === 0) continue;
      const sorted = a.durations.subarray(0, Math.min(a.count, SAMPLE_SIZE)).sort();
      out.set(app, { classes: [a.classes[0]!, a.classes[1]!, a.classes[2]!, a.classes[3]!, a.classes[4]!], bytes: a.bytes, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99) });
      a.classes.fill(0);
      a.bytes = 0;
      a.count = 0;
    }
    return out;
  }

  forget(app: string): void {
    this.apps.delete(app);
  }
}
