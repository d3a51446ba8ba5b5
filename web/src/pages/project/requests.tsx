import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { PageProps } from '../../app';
import { api, data } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';
import { useEventStream } from '../../api/sse';
import { EmptyState, ErrorNotice, Field, formatBytes, Select } from '../../ui/controls';
import { EnvironmentChoice, EVERY, PRODUCTION, useEnvironmentParam } from './environment-choice';
import './deploy.css';

type RequestEntry = operations['getProjectsByIdServerLogsRecent']['responses'][200]['content']['application/json']['data'][number];
type ClassFilter = 'all' | '2' | '3' | '4' | '5';

/** Rows kept in the page (newest first). */
const MAX_ROWS = 500;

const CLASS_WORD: Record<string, string> = { '1': 'informational', '2': 'success', '3': 'redirect', '4': 'client error', '5': 'server error' };
const CLASS_BADGE: Record<string, string> = { '1': 'muted', '2': 'ok', '3': 'busy', '4': 'warn', '5': 'bad' };
const classOf = (status: number) => String(Math.floor(status / 100));
const keyOf = (r: RequestEntry) => `${r.ts}|${r.environment ?? ''}|${r.method}|${r.path}|${r.status}|${r.ip}|${r.bytes}|${r.durationMs}`;

/**
 * The edge's requests for the project, live: the recent ones first, then the stream. The stream
 * takes a 60-second token (an EventSource sends no credential of its own) and ends when the token
 * does; it is then opened again with a fresh token, and the recent list read again to fill the gap
 * (entries already shown are not repeated). `environment`: production's app, a preview's, or every
 * environment's (`*`: each entry names its own).
 */
function useRequestLog(projectId: string, environment: string) {
  const [rows, setRows] = useState<RequestEntry[]>([]);
  const seen = useRef(new Set<string>());
  const [attempt, setAttempt] = useState(0);
  const failures = useRef(0);
  const merge = (more: RequestEntry[]) => {
    const fresh = more.filter((r) => !seen.current.has(keyOf(r)));
    if (!fresh.length) return;
    for (const r of fresh) seen.current.add(keyOf(r));
    setRows((rs) => {
      const all = [...fresh, ...rs].sort((a, b) => (a.ts < b.ts ? 1 : a.ts > b.ts ? -1 : 0));
      for (const r of all.slice(MAX_ROWS)) seen.current.delete(keyOf(r));
      return all.slice(0, MAX_ROWS);
    });
  };
  const path = { params: { path: { id: projectId } } };
  const env = environment !== PRODUCTION;
  const recent = useQuery({
    queryKey: ['project', projectId, 'requests', 'recent', environment, attempt],
    queryFn: () => data(api.GET('/api/projects/{id}/server-logs/recent', { params: { path: { id: projectId }, query: { limit: 200, ...(env ? { environment } : {}) } } })),
    staleTime: Infinity,
    gcTime: 0,
  });
  const token = useQuery({
    queryKey: ['project', projectId, 'requests', 'token', attempt],
    queryFn: () => data(api.GET('/api/projects/{id}/server-logs/stream-token', path)),
    staleTime: Infinity,
    gcTime: 0,
    retry: false,
  });
  useEffect(() => {
    if (recent.data) merge(recent.data);
    // merge only reads refs and sets state
  }, [recent.data]);
  const url = token.data ? `/api/projects/${encodeURIComponent(projectId)}/server-logs/stream?token=${encodeURIComponent(token.data.token)}${env ? `&environment=${encodeURIComponent(environment)}` : ''}` : null;
  const state = useEventStream(url, {
    request: (r: RequestEntry) => {
      failures.current = 0;
      merge([r]);
    },
  });
  const [retryIn, setRetryIn] = useState<number | null>(null);
  useEffect(() => {
    if (state === 'open') failures.current = 0;
    if (!(token.error || (state === 'closed' && token.data))) return;
    const delay = Math.min(10_000, 500 * 2 ** failures.current);
    failures.current += 1;
    setRetryIn(delay);
    const t = setTimeout(() => {
      setRetryIn(null);
      setAttempt((a) => a + 1);
    }, delay);
    return () => {
      clearTimeout(t);
      setRetryIn(null);
    };
  }, [state, token.data, token.error]);
  return { rows, state, retryIn, error: token.error ?? recent.error, loading: recent.isPending && attempt === 0 };
}

function StatusCell({ status }: { status: number }) {
  const c = classOf(status);
  return (
    <span className={`badge badge-${CLASS_BADGE[c] ?? 'muted'}`} title={CLASS_WORD[c]}>
      {status} <span className="req-class">{CLASS_WORD[c] ?? ''}</span>
    </span>
  );
}

/** The project's request log, live, newest first, filtered by status class; production's, a preview's or all of them. */
export default function RequestsPage({ params }: PageProps) {
  const [environment, setEnvironment] = useEnvironmentParam();
  return <RequestLog key={environment} projectId={params.id!} environment={environment} onEnvironment={setEnvironment} />;
}

function RequestLog({ projectId, environment, onEnvironment }: { projectId: string; environment: string; onEnvironment(name: string): void }) {
  const log = useRequestLog(projectId, environment);
  const [cls, setCls] = useState<ClassFilter>('all');
  const shown = useMemo(() => (cls === 'all' ? log.rows : log.rows.filter((r) => classOf(r.status) === cls)), [log.rows, cls]);
  const every = environment === EVERY;
  return (
    <div className="request-logs">
      <h2>Request logs</h2>
      <div className="logs-controls">
        <EnvironmentChoice projectId={projectId} value={environment} onChange={onEnvironment} every />
        <Field label="Status">
          {(p) => (
            <Select {...p} value={cls} onChange={(e) => setCls(e.target.value as ClassFilter)}>
              <option value="all">All statuses</option>
              <option value="2">2xx success</option>
              <option value="3">3xx redirect</option>
              <option value="4">4xx client error</option>
              <option value="5">5xx server error</option>
            </Select>
          )}
        </Field>
        <p className="muted logs-status" aria-live="polite">
          <span className={`live live-${log.state}`}>{log.state === 'open' ? 'Live' : log.retryIn !== null ? 'Reconnecting…' : 'Connecting…'}</span>{' '}
          {shown.length === log.rows.length ? `${log.rows.length} requests` : `${shown.length} of ${log.rows.length} requests`} (newest first, the last {MAX_ROWS} kept).
        </p>
      </div>
      <ErrorNotice error={log.error} title="Could not follow the requests" />
      {shown.length === 0 ? (
        <EmptyState title={log.rows.length ? 'No request of this status class' : 'No requests yet'}>
          <p>Requests to the app through its domains show here as they happen.</p>
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="req-table">
            <caption className="sr-only">Requests, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {every && <th scope="col">Environment</th>}
                <th scope="col">Method</th>
                <th scope="col">Path</th>
                <th scope="col">Status</th>
                <th scope="col">Duration</th>
                <th scope="col">Size</th>
                <th scope="col">Client</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r) => (
                <tr key={keyOf(r)}>
                  <td className="mono">
                    <time dateTime={r.ts} title={new Date(r.ts).toLocaleString()}>
                      {new Date(r.ts).toLocaleTimeString()}
                    </time>
                  </td>
                  {every && <td>{r.environment === PRODUCTION ? 'production' : `preview: ${r.environment ?? ''}`}</td>}
                  <td className="mono">{r.method}</td>
                  <td className="mono req-path">{r.path}</td>
                  <td>
                    <StatusCell status={r.status} />
                  </td>
                  <td>{r.durationMs < 10 ? r.durationMs.toFixed(1) : Math.round(r.durationMs)} ms</td>
                  <td>{formatBytes(r.bytes)}</td>
                  <td className="mono">{r.ip}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
