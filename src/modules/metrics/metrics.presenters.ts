import { Type, type Static } from '@sinclair/typebox';
import type { PointRow, TargetRow } from './metrics.store.js';

const Nums = (description: string) => Type.Array(Type.Union([Type.Number(), Type.Null()]), { description });

/** One target's points, column by column (the n-th value of each array is the n-th point). */
export const SeriesSchema = Type.Object({
  kind: Type.Union([Type.Literal('app'), Type.Literal('service')]),
  /** The app's key or the managed service's id. */
  target: Type.String(),
  /** `production` / `preview`, or the service's name. */
  name: Type.String(),
  ts: Type.Array(Type.Integer(), { description: 'Start of each step (epoch seconds)' }),
  cpuCores: Nums('CPU used (cores, average over the step)'),
  memoryBytes: Nums('Memory held (bytes, average)'),
  networkRxBytesPerSecond: Nums('Bytes received per second'),
  networkTxBytesPerSecond: Nums('Bytes sent per second'),
  diskReadBytesPerSecond: Nums('Disk bytes read per second'),
  diskWriteBytesPerSecond: Nums('Disk bytes written per second'),
  requests1xx: Nums('Requests answered 1xx in the step'),
  requests2xx: Nums('Requests answered 2xx in the step'),
  requests3xx: Nums('Requests answered 3xx in the step'),
  requests4xx: Nums('Requests answered 4xx in the step'),
  requests5xx: Nums('Requests answered 5xx in the step'),
  latencyP50Ms: Nums('Median request duration at the edge (ms)'),
  latencyP95Ms: Nums('95th percentile request duration (ms)'),
  latencyP99Ms: Nums('99th percentile request duration (ms; coarser steps: the largest of the finer ones)'),
  responseBytes: Nums('Response bytes sent in the step'),
});

export const MetricsAnswerSchema = Type.Object({
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  /** Seconds per point: 10, 60 or 3600. */
  step: Type.Integer(),
  series: Type.Array(SeriesSchema),
});

export type Series = Static<typeof SeriesSchema>;
export type MetricsAnswer = Static<typeof MetricsAnswerSchema>;

const n = (v: number | null) => (v === null ? null : Number(v));
const ms = (us: number | null) => (us === null ? null : Number(us) / 1000);

/** Rows -> one columnar series per target that has points in the range. */
export function seriesOf(targets: TargetRow[], points: PointRow[]): Series[] {
  const byTarget = new Map<number, PointRow[]>();
  for (const p of points) {
    const list = byTarget.get(p.targetId);
    if (list) list.push(p);
    else byTarget.set(p.targetId, [p]);
  }
  return targets.flatMap((t) => {
    const ps = byTarget.get(t.id);
    if (!ps) return [];
    return [
      {
        kind: t.kind === 'service' ? ('service' as const) : ('app' as const),
        target: t.name,
        name: t.label,
        ts: ps.map((p) => Number(p.ts)),
        cpuCores: ps.map((p) => (p.cpuMilli === null ? null : Number(p.cpuMilli) / 1000)),
        memoryBytes: ps.map((p) => n(p.memBytes)),
        networkRxBytesPerSecond: ps.map((p) => n(p.netRx)),
        networkTxBytesPerSecond: ps.map((p) => n(p.netTx)),
        diskReadBytesPerSecond: ps.map((p) => n(p.diskRead)),
        diskWriteBytesPerSecond: ps.map((p) => n(p.diskWrite)),
        requests1xx: ps.map((p) => n(p.req1xx)),
        requests2xx: ps.map((p) => n(p.req2xx)),
        requests3xx: ps.map((p) => n(p.req3xx)),
        requests4xx: ps.map((p) => n(p.req4xx)),
        requests5xx: ps.map((p) => n(p.req5xx)),
        latencyP50Ms: ps.map((p) => ms(p.p50Us)),
        latencyP95Ms: ps.map((p) => ms(p.p95Us)),
        latencyP99Ms: ps.map((p) => ms(p.p99Us)),
        responseBytes: ps.map((p) => n(p.respBytes)),
      },
    ];
  });
}
