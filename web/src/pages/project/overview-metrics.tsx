import { Link } from 'wouter';
import { MetricsCharts } from './metrics-charts';
import { useMetrics } from './metrics-model';
import './metrics.css';

/** The overview's graphs: the last hour's CPU, memory and requests (the same query as the Metrics tab's 1 hour). */
export function OverviewMetrics({ projectId }: { projectId: string }) {
  const metrics = useMetrics(projectId, '1h');
  return (
    <section className="card" aria-labelledby="ov-metrics">
      <div className="overview-head">
        <h2 id="ov-metrics">Last hour</h2>
        <Link href={`/projects/${projectId}/metrics`}>All metrics</Link>
      </div>
      <MetricsCharts metrics={metrics} kinds={['cpu', 'memory', 'requests']} height={120} />
    </section>
  );
}
