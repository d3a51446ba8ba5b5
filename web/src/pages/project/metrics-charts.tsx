import type { UseQueryResult } from '@tanstack/react-query';
import { ErrorNotice } from '../../ui/controls';
import { ChartPlaceholder, TimeChart } from '../../ui/chart';
import { ERROR_CLASSES, FORMAT, hasPoints, latencyOf, perTarget, ratesOf, REQUEST_CLASSES, type ChartData, type MetricsAnswer } from './metrics-model';

export type ChartKind = 'cpu' | 'memory' | 'requests' | 'latency' | 'errors' | 'network' | 'disk';

const CHARTS: Record<ChartKind, { title: string; format: (v: number) => string; data: (m: MetricsAnswer) => ChartData; none: string }> = {
  cpu: { title: 'CPU', format: FORMAT.cores, data: (m) => perTarget(m, 'cpuCores'), none: 'No CPU readings in this range.' },
  memory: { title: 'Memory', format: FORMAT.bytes, data: (m) => perTarget(m, 'memoryBytes'), none: 'No memory readings in this range.' },
  requests: { title: 'Requests per second', format: FORMAT.perSecond, data: (m) => ratesOf(m, REQUEST_CLASSES), none: 'No requests in this range.' },
  latency: { title: 'Latency at the edge', format: FORMAT.ms, data: latencyOf, none: 'No requests in this range, so no latency.' },
  errors: { title: 'Errors per second', format: FORMAT.perSecond, data: (m) => ratesOf(m, ERROR_CLASSES), none: 'No requests in this range.' },
  network: { title: 'Network', format: FORMAT.bytesPerSecond, data: (m) => perTarget(m, ['networkRxBytesPerSecond', 'in'], ['networkTxBytesPerSecond', 'out']), none: 'No network readings in this range.' },
  disk: { title: 'Disk writes', format: FORMAT.bytesPerSecond, data: (m) => perTarget(m, 'diskWriteBytesPerSecond'), none: 'No disk readings in this range.' },
};

/**
 * Charts of a project's metrics query: while it loads, and when a range has nothing, each chart's place
 * says so calmly at the chart's size (no spinner, no jump when the points come).
 */
export function MetricsCharts({ metrics, kinds, height }: { metrics: UseQueryResult<MetricsAnswer>; kinds: ChartKind[]; height?: number }) {
  if (metrics.error && !metrics.data) return <ErrorNotice error={metrics.error} title="Could not load the metrics" />;
  return (
    <div className="metrics-grid">
      {kinds.map((k) => {
        const c = CHARTS[k];
        if (!metrics.data) {
          return (
            <ChartPlaceholder key={k} title={c.title} height={height}>
              Loading…
            </ChartPlaceholder>
          );
        }
        const d = c.data(metrics.data);
        if (!hasPoints(d)) {
          return (
            <ChartPlaceholder key={k} title={c.title} height={height}>
              {c.none}
            </ChartPlaceholder>
          );
        }
        return <TimeChart key={k} title={c.title} x={d.x} lines={d.lines} format={c.format} height={height} />;
      })}
    </div>
  );
}
