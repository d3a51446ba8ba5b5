import { useEffect, useMemo, useRef, useState } from 'react';
import type { PageProps } from '../../app';
import { useEventStream } from '../../api/sse';
import { Button, Field, Input, Select } from '../../ui/controls';
import { LogView, type LogLine } from '../../ui/log-view';
import { LogSearchForm, LogSearchResults } from './log-search';
import { useLogSearch, type LogQuery } from './log-search-model';
import { EnvironmentChoice, PRODUCTION, useEnvironmentParam } from './environment-choice';
import './deploy.css';

const MAX_LINES = 5000;
/** The backlog a first connection asks for. */
const BACKLOG = 500;

type StreamFilter = 'all' | 'stdout' | 'stderr';

/**
 * The app's output, live. The stream closes now and then (the server restarts, access is
 * re-checked, the network drops): it is opened again after a pause that grows with each failure,
 * asking only for lines after the last one shown (`since=`); a line received resets the pause. Pause closes the stream; Resume opens
 * it from the last line, so nothing said meanwhile is lost.
 */
function useRuntimeLog(projectId: string, environment: string, paused: boolean) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [since, setSince] = useState<string | null>(null);
  const [key, setKey] = useState(0);
  const last = useRef<string | null>(null);
  const failures = useRef(0);
  const env = environment === PRODUCTION ? '' : `&environment=${encodeURIComponent(environment)}`;
  const url = paused ? null : `/api/projects/${encodeURIComponent(projectId)}/logs/stream?${since ? `since=${encodeURIComponent(since)}` : `limit=${BACKLOG}`}${env}`;
  const state = useEventStream(
    url,
    {
      log: (l: LogLine) => {
        last.current = l.ts;
        failures.current = 0;
        setLines((ls) => (ls.length >= MAX_LINES ? [...ls.slice(ls.length - MAX_LINES + 1), l] : [...ls, l]));
      },
    },
    key,
  );
  const [retryIn, setRetryIn] = useState<number | null>(null);
  useEffect(() => {
    if (state !== 'closed' || paused) return;
    const delay = Math.min(10_000, 1000 * 2 ** failures.current);
    failures.current += 1;
    setRetryIn(delay);
    const t = setTimeout(() => {
      setRetryIn(null);
      setSince(last.current);
      setKey((k) => k + 1);
    }, delay);
    return () => {
      clearTimeout(t);
      setRetryIn(null);
    };
  }, [state, paused]);
  return {
    lines,
    state,
    retryIn,
    /** Before resuming: the next connection starts after the last line shown. */
    fromLast: () => setSince(last.current),
    clear: () => setLines([]),
  };
}

/**
 * The project's logs: a search of the kept logs (text, time range, which logs; docs/logs.md) and,
 * while no search is shown, the runtime log live (stdout/stderr filter, a filter of the lines shown,
 * pause and resume). A search closes the live stream; clearing it opens the stream again (its last lines first).
 * A project with previews offers the environment whose app's logs are read (`?environment=` in the
 * page's address, so a preview's logs can be linked); builds are the project's, whichever is chosen.
 */
export default function LogsPage({ params }: PageProps) {
  const projectId = params.id!;
  const [environment, setEnvironment] = useEnvironmentParam();
  const [query, setQuery] = useState<LogQuery | null>(null);
  const scoped = query && environment !== PRODUCTION ? { ...query, environment } : query;
  const search = useLogSearch(projectId, scoped);
  return (
    <div className="runtime-logs">
      <h2>Logs</h2>
      <EnvironmentChoice projectId={projectId} value={environment} onChange={setEnvironment} row />
      <LogSearchForm active={query !== null} busy={search.isFetching && !search.isFetchingNextPage} error={search.error} onSearch={setQuery} onClear={() => setQuery(null)} />
      {scoped ? <LogSearchResults projectId={projectId} query={scoped} search={search} /> : <LiveTail key={environment} projectId={projectId} environment={environment} />}
    </div>
  );
}

/** The runtime log of one environment's app, live. */
function LiveTail({ projectId, environment }: { projectId: string; environment: string }) {
  const [paused, setPaused] = useState(false);
  const [stream, setStream] = useState<StreamFilter>('all');
  const [search, setSearch] = useState('');
  const log = useRuntimeLog(projectId, environment, paused);
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return log.lines.filter((l) => (stream === 'all' || l.stream === stream) && (!q || l.line.toLowerCase().includes(q)));
  }, [log.lines, stream, search]);
  return (
    <section className="live-tail" aria-label="Live tail">
      <h3>Live tail</h3>
      <form className="logs-controls" aria-label="Filter the log" onSubmit={(e) => e.preventDefault()}>
        <Field label="Stream">
          {(p) => (
            <Select {...p} value={stream} onChange={(e) => setStream(e.target.value as StreamFilter)}>
              <option value="all">stdout and stderr</option>
              <option value="stdout">stdout only</option>
              <option value="stderr">stderr only</option>
            </Select>
          )}
        </Field>
        <Field label="Filter lines">
          {(p) => <Input {...p} type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="Text in the line" autoComplete="off" />}
        </Field>
        <div className="logs-buttons">
          <Button
            aria-pressed={paused}
            onClick={() => {
              if (paused) log.fromLast();
              setPaused(!paused);
            }}
          >
            {paused ? 'Resume' : 'Pause'}
          </Button>
          <Button variant="ghost" onClick={log.clear}>
            Clear
          </Button>
        </div>
      </form>
      <p className="muted logs-status" aria-live="polite">
        {paused
          ? 'Paused: new lines wait on the server until you resume.'
          : log.retryIn !== null
            ? `The stream closed: reconnecting in ${Math.round(log.retryIn / 1000)} s from the last line.`
            : log.state === 'open'
              ? 'Live.'
              : 'Connecting…'}{' '}
        {shown.length === log.lines.length ? `${log.lines.length} lines.` : `Showing ${shown.length} of ${log.lines.length} lines.`}
      </p>
      <LogView lines={shown} state={paused ? 'closed' : log.state} label="Runtime log" />
    </section>
  );
}
