import { useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { MetricsCharts } from './metrics-charts';
import { RANGES, useMetrics, type RangeKey } from './metrics-model';
import './metrics.css';

/** The range buttons: 1 hour, 24 hours, 7 days (a group of toggle buttons, one pressed). */
export function RangePicker({ value, onChange }: { value: RangeKey; onChange(r: RangeKey): void }) {
  return (
    <div className="range-picker" role="group" aria-label="Range">
      {RANGES.map((r) => (
        <button key={r.key} type="button" className={`btn btn-small${r.key === value ? ' btn-primary' : ''}`} aria-pressed={r.key === value} onClick={() => onChange(r.key)}>
          {r.label}
        </button>
      ))}
    </div>
  );
}

/**
 * The project's metrics (contract section 20): CPU and memory per app and service, requests by status
 * class, latency p50/p95/p99 and errors at the edge, network and disk; over the last hour, day or week.
 */
export default function MetricsPage({ params }: PageProps) {
  const id = params.id!;
  const [range, setRange] = useState<RangeKey>('1h');
  const metrics = useMetrics(id, range);
  const step = metrics.data?.step;
  return (
    <div className="metrics">
      <div className="metrics-head">
        <h2>Metrics</h2>
        <RangePicker value={range} onChange={setRange} />
      </div>
      <p className="muted metrics-note">
        {step ? `One point every ${step === 10 ? '10 seconds' : step === 60 ? 'minute' : 'hour'}. ` : ''}
        Requests and latency are measured at the edge. The live requests are under <Link href={`/projects/${id}/requests`}>Requests</Link>.
      </p>
      <MetricsCharts metrics={metrics} kinds={['cpu', 'memory', 'requests', 'latency', 'errors', 'network', 'disk']} />
    </div>
  );
}
