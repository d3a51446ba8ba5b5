import { useEffect, useRef, useState, type ReactNode } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './chart.css';

/** One line of a chart: its name, its values (aligned with the chart's times; null is a gap) and colour. */
export interface ChartLine {
  label: string;
  values: Array<number | null>;
  color: string;
}

/** The colours of lines, in order (readable on the light and the dark theme). */
export const PALETTE = ['#2563eb', '#d97706', '#059669', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d'];

interface TimeChartProps {
  /** The chart's name (its caption, and how a screen reader finds it). */
  title: string;
  /** Times of the points (epoch seconds). */
  x: number[];
  lines: ChartLine[];
  /** A value in words on the axis and in the summary ("0.25 cores", "12 MB"). */
  format(v: number): string;
  height?: number;
}

/** The points of a line that have no neighbour to join (a lone reading between gaps): drawn as dots. */
function lonePoints(u: uPlot, seriesIdx: number): number[] {
  const ys = u.data[seriesIdx] ?? [];
  const out: number[] = [];
  for (let i = 0; i < ys.length; i++) if (ys[i] != null && ys[i - 1] == null && ys[i + 1] == null) out.push(i);
  return out;
}

const cssVar = (name: string, fallback: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/** The latest and the largest value of a line, for the words under the chart. */
function summaryOf(values: Array<number | null>): { latest: number | null; max: number | null } {
  let latest: number | null = null;
  let max: number | null = null;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    latest = v;
    max = max === null || v > max ? v : max;
  }
  return { latest, max };
}

/**
 * A time series chart drawn by uPlot (bundled: no CDN, ~50 KB), as wide as its frame. The canvas is
 * for the eye; the same facts are in words under it (each line's latest and largest value), so the
 * chart is readable without it.
 */
export function TimeChart({ title, x, lines, format, height = 180 }: TimeChartProps) {
  const frame = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [width, setWidth] = useState(0);

  useEffect(() => {
    const el = frame.current;
    if (!el) return;
    const measure = () => setWidth(Math.floor(el.clientWidth));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const shape = lines.map((l) => `${l.label}|${l.color}`).join(',');
  useEffect(() => {
    const el = frame.current;
    if (!el || width <= 0) return;
    const axis = { stroke: cssVar('--muted', '#5b6270'), grid: { stroke: cssVar('--border', '#d9dde4'), width: 1 }, ticks: { show: false } };
    const u = new uPlot(
      {
        width,
        height,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
        axes: [axis, { ...axis, size: 70, values: (_u, splits) => splits.map((v) => format(v)) }],
        series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, spanGaps: false, points: { show: false, size: 6, filter: lonePoints } }))],
      },
      [x, ...lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    plot.current = u;
    return () => {
      u.destroy();
      plot.current = null;
    };
    // Made again when the lines change (names, colours) or the frame's width; new values go through setData.
  }, [shape, width, height]);

  useEffect(() => {
    plot.current?.setData([x, ...lines.map((l) => l.values)] as uPlot.AlignedData);
  }, [x, lines]);

  return (
    <figure className="chart" data-points={x.length}>
      <figcaption className="chart-title">{title}</figcaption>
      <div className="chart-frame" ref={frame} style={{ height }} aria-hidden="true" />
      <ul className="chart-summary">
        {lines.map((l) => {
          const s = summaryOf(l.values);
          return (
            <li key={l.label}>
              <span className="chart-swatch" style={{ background: l.color }} aria-hidden="true" />
              {l.label}: {s.latest === null ? 'no data' : <>latest {format(s.latest)}, peak {format(s.max ?? s.latest)}</>}
            </li>
          );
        })}
      </ul>
    </figure>
  );
}

/** Where a chart will be, the same size, while its data loads or when there is none (no jumping layout). */
export function ChartPlaceholder({ title, height = 180, children }: { title: string; height?: number; children: ReactNode }) {
  return (
    <figure className="chart">
      <figcaption className="chart-title">{title}</figcaption>
      <div className="chart-frame chart-empty" style={{ height }}>
        {children}
      </div>
    </figure>
  );
}
