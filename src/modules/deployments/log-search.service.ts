import type { AppContext } from '../../context.js';
import { invalid } from '../../lib/errors.js';
import { LOG_SOURCES, searchLogs, type FoundLine, type LogSource, type SearchCursor } from '../../runtime/log-search.js';
import { hostOf } from './host.js';
import { checkTime } from './log-stream.js';

export interface LogSearchQuery {
  q?: string;
  since?: string;
  until?: string;
  stream?: string;
  cursor?: string;
  limit?: number;
}

/** The query's `stream`: a comma list of runtime, build, request (which logs; default runtime) and stdout, stderr (which of their streams). */
function streamsOf(stream: string | undefined): { sources: LogSource[]; fds: ('stdout' | 'stderr')[] | null } {
  const names = (stream ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const sources: LogSource[] = [];
  const fds: ('stdout' | 'stderr')[] = [];
  for (const n of names) {
    if ((LOG_SOURCES as readonly string[]).includes(n)) sources.push(n as LogSource);
    else if (n === 'stdout' || n === 'stderr') fds.push(n);
    else throw invalid('query.stream', `stream takes a comma list of runtime, build, request, stdout and stderr, not "${n}"`);
  }
  return { sources: sources.length ? [...new Set(sources)] : ['runtime'], fds: fds.length ? fds : null };
}

function cursorOf(cursor: string | undefined): SearchCursor | undefined {
  if (cursor === undefined) return undefined;
  const bad = () => invalid('query.cursor', 'cursor is not one this route answered (pass back nextCursor as it came)');
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad();
  const out: SearchCursor = {};
  for (const [k, p] of Object.entries(v)) {
    if (!(LOG_SOURCES as readonly string[]).includes(k)) throw bad();
    const ok = p === 0 || (Array.isArray(p) && p.length === 2 && p.every((n) => Number.isSafeInteger(n) && n >= 0));
    if (!ok) throw bad();
    out[k as LogSource] = p as SearchCursor[LogSource];
  }
  return out;
}

/**
 * One page of an app's kept logs (docs/logs.md): `q` a text the line holds, `since`/`until` ISO times,
 * `stream` which logs, newest `limit` lines before `cursor`, oldest first, and the cursor of the next page.
 */
export async function searchAppLogs(ctx: AppContext, projectId: string, app: string, query: LogSearchQuery): Promise<{ data: FoundLine[]; nextCursor: string | null }> {
  const since = checkTime(query.since, 'since');
  const until = checkTime(query.until, 'until');
  if (since && until && until <= since) throw invalid('query.until', 'until must be after since');
  const { sources, fds } = streamsOf(query.stream);
  const logs = hostOf(ctx).logs;
  // The edge's request lines are gathered before they are written (runtime/logs.ts): write them first.
  logs.flushAll();
  const page = await searchLogs({
    dir: logs.dirOf(app),
    buildDir: `${logs.dirOf(projectId)}/builds`,
    sources,
    fds,
    q: query.q ?? '',
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    limit: query.limit ?? 200,
    ...(query.cursor !== undefined ? { cursor: cursorOf(query.cursor) } : {}),
  });
  return { data: page.lines, nextCursor: page.next ? Buffer.from(JSON.stringify(page.next)).toString('base64url') : null };
}

/** At most this many lines in one download (the newest; `X-Berth-Truncated: true` says when more matched). */
export const DOWNLOAD_MAX_LINES = 200_000;

/** Every matching line (up to DOWNLOAD_MAX_LINES, the newest), oldest first, as JSON lines. */
export async function downloadAppLogs(ctx: AppContext, projectId: string, app: string, query: Omit<LogSearchQuery, 'cursor' | 'limit'>): Promise<{ text: string; truncated: boolean }> {
  const pages: FoundLine[][] = [];
  let n = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await searchAppLogs(ctx, projectId, app, { ...query, limit: Math.min(10_000, DOWNLOAD_MAX_LINES - n), ...(cursor ? { cursor } : {}) });
    pages.push(page.data);
    n += page.data.length;
    if (!page.nextCursor) return { text: join(pages), truncated: false };
    if (n >= DOWNLOAD_MAX_LINES) return { text: join(pages), truncated: true };
    cursor = page.nextCursor;
  }
}

function join(pages: FoundLine[][]): string {
  return pages.reverse().map((p) => p.map((l) => JSON.stringify(l) + '\n').join('')).join('');
}
