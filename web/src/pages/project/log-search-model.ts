import { useInfiniteQuery } from '@tanstack/react-query';
import { api, call } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';

export type FoundLine = operations['getProjectsByIdLogs']['responses'][200]['content']['application/json']['data'][number];

/** The time ranges offered besides a custom one: back from the moment the search is run. */
export const PRESETS = [
  { key: '15m', label: 'Last 15 minutes', seconds: 15 * 60 },
  { key: '1h', label: 'Last hour', seconds: 3600 },
  { key: '24h', label: 'Last 24 hours', seconds: 86_400 },
  { key: '7d', label: 'Last 7 days', seconds: 7 * 86_400 },
] as const;
export type RangeChoice = (typeof PRESETS)[number]['key'] | 'custom';

/** Which logs a search reads: the API's `stream` (a comma list of runtime, build, request, stdout, stderr). */
export const STREAMS = [
  { value: 'runtime', label: 'App output (stdout and stderr)' },
  { value: 'runtime,stdout', label: 'App output: stdout only' },
  { value: 'runtime,stderr', label: 'App output: stderr only' },
  { value: 'build', label: 'Builds' },
  { value: 'request', label: 'Requests at the edge' },
  { value: 'runtime,build,request', label: 'All: app output, builds, requests' },
] as const;

/** What the form holds; `from` and `to` are `datetime-local` values, read as UTC. */
export interface SearchForm {
  q: string;
  range: RangeChoice;
  from: string;
  to: string;
  stream: string;
}

/** One search as the API takes it (the same for the page of lines and the download). */
export interface LogQuery {
  q?: string;
  since?: string;
  until?: string;
  stream: string;
  /** A preview's name: its app's logs (absent: production's). */
  environment?: string;
}

/** A `datetime-local` value (`2026-11-29T14:05`) as an ISO time in UTC; left as typed when it is not a time (the API then names the field). */
export function utcOf(local: string): string {
  const t = Date.parse(`${local}Z`);
  return Number.isFinite(t) ? new Date(t).toISOString() : local;
}

/** The form as a query: a preset range ends now (`since` only), a custom one takes From and To (either may be empty). */
export function queryOf(f: SearchForm, now = Date.now()): LogQuery {
  const out: LogQuery = { stream: f.stream };
  if (f.q) out.q = f.q;
  const preset = PRESETS.find((p) => p.key === f.range);
  if (preset) out.since = new Date(now - preset.seconds * 1000).toISOString();
  else {
    if (f.from) out.since = utcOf(f.from);
    if (f.to) out.until = utcOf(f.to);
  }
  return out;
}

/** The query string of a search, in a fixed order. */
function paramsOf(q: LogQuery): URLSearchParams {
  const p = new URLSearchParams();
  for (const k of ['q', 'since', 'until', 'stream', 'environment'] as const) if (q[k] !== undefined) p.set(k, q[k]!);
  return p;
}

/** The download of the same search (the session cookie is its credential: a same-origin link). */
export function downloadHref(projectId: string, q: LogQuery): string {
  return `/api/projects/${encodeURIComponent(projectId)}/logs/download?${paramsOf(q)}`;
}

/** Lines per page of results (the newest first; "Show older lines" asks for the next). */
export const PAGE_LINES = 200;

/** The search's pages, newest first, each oldest first (as the API answers them); nothing while `query` is null. */
export function useLogSearch(projectId: string, query: LogQuery | null) {
  return useInfiniteQuery({
    queryKey: ['project', projectId, 'log-search', query],
    enabled: query !== null,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      call(api.GET('/api/projects/{id}/logs', { params: { path: { id: projectId }, query: { ...query!, limit: PAGE_LINES, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // A search shows what was kept when it ran: run it again for newer lines.
    staleTime: Infinity,
    refetchOnWindowFocus: false,
  });
}

/** A line cut around each occurrence of `q` (case-sensitive, as the API matches): the marked parts are the matches. */
export function marksOf(line: string, q: string | undefined): { text: string; mark: boolean }[] {
  if (!q) return [{ text: line, mark: false }];
  const out: { text: string; mark: boolean }[] = [];
  let at = 0;
  for (let i = line.indexOf(q); i !== -1; i = line.indexOf(q, at)) {
    if (i > at) out.push({ text: line.slice(at, i), mark: false });
    out.push({ text: q, mark: true });
    at = i + q.length;
  }
  if (at < line.length) out.push({ text: line.slice(at), mark: false });
  return out;
}

/** Where a line comes from, in words: `stdout`, `stderr`, `build stdout`, `request`. */
export function streamLabel(l: FoundLine): string {
  if (l.source === 'request') return 'request';
  const fd = l.stream ?? 'stdout';
  return l.source === 'build' ? `build ${fd}` : fd;
}

/** `2026-11-29 14:05:01.123` (UTC, as the form's times). */
export const timeOf = (ts: string) => `${ts.slice(0, 10)} ${ts.slice(11, 23)}`;
