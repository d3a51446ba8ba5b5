import type { Generated } from 'kysely';

/** What is measured: an app (by its key) or a managed service (by its id), of one project of one org. */
export interface MetricTargetsTable {
  id: Generated<number>;
  orgId: string;
  projectId: string;
  kind: string; // 'app' | 'service'
  /** The app's key (`appKeyOf`) or the managed service's id. */
  name: string;
  /** `production` / `preview` (apps) or the service's name. */
  label: string;
}

/**
 * One target's numbers over one step starting at `ts` (epoch seconds); each step has its table
 * (`metricPointsRaw` 10 s, `metricPointsMinute` 60 s, `metricPointsHour` 3600 s), so no row carries
 * its step. Usage fields are averages over the step (CPU in thousandths of a core, bytes per second,
 * memory in KiB: the store answers bytes); request fields are counts and bytes in the step and
 * duration percentiles in microseconds. Null: not measured (no usage of a static site, no requests of
 * a service).
 */
export interface MetricPointsTable {
  targetId: number;
  ts: number;
  cpuMilli: number | null;
  memKib: number | null;
  netRx: number | null;
  netTx: number | null;
  diskRead: number | null;
  diskWrite: number | null;
  req1xx: number | null;
  req2xx: number | null;
  req3xx: number | null;
  req4xx: number | null;
  req5xx: number | null;
  p50Us: number | null;
  p95Us: number | null;
  p99Us: number | null;
  respBytes: number | null;
}

export interface MetricsTables {
  metricTargets: MetricTargetsTable;
  metricPointsRaw: MetricPointsTable;
  metricPointsMinute: MetricPointsTable;
  metricPointsHour: MetricPointsTable;
}
