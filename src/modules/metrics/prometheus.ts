/**
 * The Prometheus text exposition format (version 0.0.4) of the latest points: gauges with `# HELP` and
 * `# TYPE` lines, label values escaped (backslash, double quote, newline). Written here rather than
 * with prom-client, whose registry models a process's own counters; these are rows read per request
 * (docs/decisions.md, "Metrics: the Prometheus text written by hand").
 */
import type { ProjectRecord } from '../projects/index.js';
import type { PointRow, TargetRow } from './metrics.store.js';

export interface Exposed {
  target: TargetRow;
  project: Pick<ProjectRecord, 'id' | 'slug'>;
  point: PointRow;
}

const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function labels(e: Exposed, extra = ''): string {
  return `{project_id="${escape(e.project.id)}",project="${escape(e.project.slug)}",kind="${escape(e.target.kind)}",name="${escape(e.target.label)}",target="${escape(e.target.name)}"${extra}}`;
}

type Metric = { name: string; help: string; values: (e: Exposed) => [string, number | null][] };

const num = (v: number | null) => (v === null ? null : Number(v));

const METRICS: Metric[] = [
  { name: 'berth_cpu_cores', help: 'CPU used, in cores, averaged over the last sample', values: (e) => [['', e.point.cpuMilli === null ? null : Number(e.point.cpuMilli) / 1000]] },
  { name: 'berth_memory_bytes', help: 'Memory held by the app or service', values: (e) => [['', num(e.point.memBytes)]] },
  { name: 'berth_network_receive_bytes_per_second', help: 'Bytes received per second', values: (e) => [['', num(e.point.netRx)]] },
  { name: 'berth_network_transmit_bytes_per_second', help: 'Bytes sent per second', values: (e) => [['', num(e.point.netTx)]] },
  { name: 'berth_disk_read_bytes_per_second', help: 'Bytes read from disk per second', values: (e) => [['', num(e.point.diskRead)]] },
  { name: 'berth_disk_write_bytes_per_second', help: 'Bytes written to disk per second', values: (e) => [['', num(e.point.diskWrite)]] },
  {
    name: 'berth_http_requests',
    help: 'Requests the edge answered in the last sample, by status class',
    values: (e) => (['1xx', '2xx', '3xx', '4xx', '5xx'] as const).map((c, i) => [`,class="${c}"`, num([e.point.req1xx, e.point.req2xx, e.point.req3xx, e.point.req4xx, e.point.req5xx][i]!)]),
  },
  {
    name: 'berth_http_request_duration_seconds',
    help: 'Request duration quantiles at the edge in the last sample',
    values: (e) => [
      [',quantile="0.5"', e.point.p50Us === null ? null : Number(e.point.p50Us) / 1e6],
      [',quantile="0.95"', e.point.p95Us === null ? null : Number(e.point.p95Us) / 1e6],
      [',quantile="0.99"', e.point.p99Us === null ? null : Number(e.point.p99Us) / 1e6],
    ],
  },
  { name: 'berth_http_response_bytes', help: 'Response bytes the edge sent in the last sample', values: (e) => [['', num(e.point.respBytes)]] },
];

/** The text of every metric with a value. */
export function exposition(items: Exposed[]): string {
  const out: string[] = [];
  for (const m of METRICS) {
    const lines: string[] = [];
    for (const e of items) for (const [extra, v] of m.values(e)) if (v !== null && Number.isFinite(v)) lines.push(`${m.name}${labels(e, extra)} ${v}`);
    if (lines.length === 0) continue;
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} gauge`, ...lines);
  }
  return out.length ? `${out.join('\n')}\n` : '';
}
