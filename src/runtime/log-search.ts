import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { segmentsOf } from './logs.js';

/** Which log a line comes from: the app's output, a build's output, or the edge's requests. */
export type LogSource = 'runtime' | 'build' | 'request';
export const LOG_SOURCES: readonly LogSource[] = ['runtime', 'build', 'request'];

export interface FoundLine {
  ts: string;
  source: LogSource;
  /** stdout or stderr (runtime and build lines). */
  stream?: 'stdout' | 'stderr';
  /** The text: what the app or build printed; for a request, `METHOD PATH STATUS DURATIONms BYTESB IP`. */
  line: string;
  /** The deployment whose build printed it (build lines). */
  deploymentId?: string;
}

/** Where a source's next page ends: a file (by inode, so a rotation keeps it) and a byte offset; 0: nothing older. */
export type SourcePos = [ino: number, off: number] | 0;
export type SearchCursor = Partial<Record<LogSource, SourcePos>>;

export interface SearchOptions {
  /** The app's log folder (runtime.log, requests.log and their segments). */
  dir: string;
  /** The project's build logs (`<projectDir>/builds`), or null. */
  buildDir: string | null;
  sources: LogSource[];
  /** Only these streams of runtime and build lines (null: both). */
  fds: ('stdout' | 'stderr')[] | null;
  /** Text the line must contain (case-sensitive, like grep); '' matches every line. */
  q: string;
  /** Only lines strictly after `since` and not after `until` (ISO times). */
  since?: string;
  until?: string;
  limit: number;
  cursor?: SearchCursor;
}

export interface SearchPage {
  /** The page, oldest first: the newest `limit` matching lines before the cursor. */
  lines: FoundLine[];
  /** Pass back for the next (older) page; null: no more. */
  next: SearchCursor | null;
}

interface Hit {
  line: FoundLine;
  pos: [number, number];
}

/** How much of a file one read takes (the scan goes from the newest bytes to the oldest). */
const CHUNK = 4 * 1024 * 1024;
const TS_PREFIX = Buffer.from('{"ts":"');

/**
 * One page of a project's kept logs (docs/logs.md): each source's files are read newest first, in
 * CHUNK windows from their end, and only lines holding `q` (as the JSON encoding writes it: found with
 * a byte search, no decoding) are parsed; time bounds are read from each line's leading `{"ts":"…"`
 * and from each file's modification time, so older files are not opened once `since` is passed.
 */
export async function searchLogs(o: SearchOptions): Promise<SearchPage> {
  const want = o.limit + 1;
  const per = new Map<LogSource, { hits: Hit[]; exhausted: boolean }>();
  for (const source of o.sources) {
    const pos = o.cursor?.[source];
    per.set(source, pos === 0 ? { hits: [], exhausted: true } : await scanSource(source, filesOf(source, o), pos ?? null, o, want));
  }
  // Newest first across sources: a merge, so each source gives a prefix of its own hits.
  const taken = new Map<LogSource, number>(o.sources.map((src) => [src, 0]));
  const page: Hit[] = [];
  while (page.length < o.limit) {
    let best: LogSource | null = null;
    for (const [src, r] of per) {
      const h = r.hits[taken.get(src)!];
      if (h && (best === null || h.line.ts > per.get(best)!.hits[taken.get(best)!]!.line.ts)) best = src;
    }
    if (best === null) break;
    page.push(per.get(best)!.hits[taken.get(best)!]!);
    taken.set(best, taken.get(best)! + 1);
  }
  const lines = page.reverse().map((h) => h.line);
  const left = (src: LogSource) => per.get(src)!.hits.length > taken.get(src)! || !per.get(src)!.exhausted;
  if (!o.sources.some(left)) return { lines, next: null };
  const next: SearchCursor = {};
  for (const [src, r] of per) {
    const k = taken.get(src)!;
    const pos = k ? r.hits[k - 1]!.pos : left(src) ? o.cursor?.[src] : 0;
    if (pos !== undefined) next[src] = pos;
  }
  return { lines, next };
}

/** The files of a source, oldest first. */
function filesOf(source: LogSource, o: SearchOptions): string[] {
  if (source !== 'build') {
    const live = path.join(o.dir, source === 'runtime' ? 'runtime.log' : 'requests.log');
    return [...segmentsOf(live), live];
  }
  if (!o.buildDir) return [];
  let names: string[];
  try {
    names = readdirSync(o.buildDir).filter((n) => /\.log(\.1)?$/.test(n));
  } catch {
    return [];
  }
  const withTime = names.map((n) => ({ f: path.join(o.buildDir!, n), t: mtimeOf(path.join(o.buildDir!, n)) }));
  return withTime.sort((a, b) => a.t - b.t || (a.f < b.f ? 1 : -1)).map((x) => x.f);
}

function mtimeOf(f: string): number {
  try {
    return statSync(f).mtimeMs;
  } catch {
    return 0;
  }
}

async function scanSource(source: LogSource, files: string[], pos: [number, number] | null, o: SearchOptions, want: number): Promise<{ hits: Hit[]; exhausted: boolean }> {
  const hits: Hit[] = [];
  const sinceMs = o.since ? Date.parse(o.since) : null;
  const matcher = new LineMatcher(source, o);
  let started = pos === null;
  for (let i = files.length - 1; i >= 0; i--) {
    const file = files[i]!;
    let st;
    try {
      st = statSync(file);
    } catch {
      continue;
    }
    let end = st.size;
    if (!started) {
      if (st.ino !== pos![0]) continue;
      started = true;
      end = Math.min(pos![1], st.size);
    }
    // Every line of this file (and of the older ones) was written by its modification time.
    if (sinceMs !== null && st.mtimeMs <= sinceMs) return { hits, exhausted: true };
    matcher.deploymentId = source === 'build' ? path.basename(file).replace(/\.log(\.1)?$/, '') : undefined;
    const stop = await scanFile(file, st.ino, end, matcher, hits, want);
    if (stop === 'full') return { hits, exhausted: false };
    if (stop === 'older') return { hits, exhausted: true };
  }
  return { hits, exhausted: true };
}

/** Reads `file` backwards from `end`, adding matching lines (newest first) to `hits`. */
async function scanFile(file: string, ino: number, end: number, m: LineMatcher, hits: Hit[], want: number): Promise<'full' | 'older' | 'done'> {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 'done';
  }
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(end, 1)));
  try {
    if (m.until && firstTs(fd) > m.until) return 'done';
    while (end > 0) {
      const start = Math.max(0, end - buf.length);
      const n = readSync(fd, buf, 0, end - start, start);
      const w = buf.subarray(0, n);
      let from = 0;
      if (start > 0) {
        const nl = w.indexOf(10);
        // A line longer than a whole window is skipped.
        if (nl < 0) {
          end = start;
          continue;
        }
        from = nl + 1;
      }
      const stop = m.window(w, from, start, ino, hits, want);
      if (stop) return stop;
      end = start + from;
      // Let other requests run between windows.
      await new Promise((r) => setImmediate(r));
    }
    return 'done';
  } finally {
    closeSync(fd);
  }
}

function firstTs(fd: number): string {
  const b = Buffer.alloc(31);
  const n = readSync(fd, b, 0, 31, 0);
  return n === 31 && b.subarray(0, 7).equals(TS_PREFIX) ? b.toString('latin1', 7, 31) : '';
}

/** The tests one line goes through: the byte search, the time bounds, then the parsed line's stream and text. */
class LineMatcher {
  readonly until: string | undefined;
  /** The deployment of the build log being read. */
  deploymentId: string | undefined;
  private readonly since: string | undefined;
  /** The bytes every matching line holds, or null (every line is a candidate). */
  private readonly needle: Buffer | null;
  private readonly starts: number[] = [];

  constructor(
    private readonly source: LogSource,
    private readonly o: SearchOptions,
  ) {
    this.until = o.until;
    this.since = o.since;
    const encoded = JSON.stringify(o.q).slice(1, -1);
    // A request line is text made of several JSON fields: the byte search only holds within one field.
    const prefilter = o.q !== '' && (source !== 'request' || (/^\S+$/.test(o.q) && !/\d(ms|B)$/.test(o.q)));
    this.needle = prefilter ? Buffer.from(encoded) : null;
  }

  /** The lines of w[from..) newest first; a stop when enough were found or older than `since`. */
  window(w: Buffer, from: number, base: number, ino: number, hits: Hit[], want: number): 'full' | 'older' | null {
    const s = this.starts;
    s.length = 0;
    if (this.needle) {
      let p = from;
      while ((p = w.indexOf(this.needle, p)) !== -1) {
        const ls = w.lastIndexOf(10, p) + 1;
        let le = w.indexOf(10, p);
        if (le < 0) le = w.length;
        s.push(Math.max(ls, from), le);
        p = le + 1;
      }
    } else {
      let le = w.length;
      while (le > from) {
        const ls = le - 1 >= from ? Math.max(from, w.lastIndexOf(10, le - 1) + 1) : from;
        if (le > ls) s.push(le, ls);
        le = ls - 1;
      }
      // Collected newest first: turn into the same order as the byte search's (oldest first).
      s.reverse();
    }
    for (let i = s.length - 2; i >= 0; i -= 2) {
      const ls = s[i]!;
      const le = s[i + 1]!;
      if (le <= ls) continue;
      const ts = w.subarray(ls, ls + 7).equals(TS_PREFIX) ? w.toString('latin1', ls + 7, ls + 31) : '';
      if (ts && this.since && ts <= this.since) return 'older';
      if (ts && this.until && ts > this.until) continue;
      const line = this.parse(w.toString('utf8', ls, le));
      if (!line) continue;
      hits.push({ line, pos: [ino, base + ls] });
      if (hits.length >= want) return 'full';
    }
    return null;
  }

  private parse(text: string): FoundLine | null {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return null;
    }
    if (typeof e.ts !== 'string') return null;
    if (this.since && e.ts <= this.since) return null;
    if (this.until && e.ts > this.until) return null;
    let out: FoundLine;
    if (this.source === 'request') {
      out = { ts: e.ts, source: 'request', line: `${String(e.method)} ${String(e.path)} ${String(e.status)} ${String(e.durationMs)}ms ${String(e.bytes)}B ${String(e.ip)}` };
    } else {
      if (typeof e.line !== 'string' || (e.stream !== 'stdout' && e.stream !== 'stderr')) return null;
      if (this.o.fds && !this.o.fds.includes(e.stream)) return null;
      out = { ts: e.ts, source: this.source, stream: e.stream, line: e.line, ...(this.deploymentId ? { deploymentId: this.deploymentId } : {}) };
    }
    if (this.o.q && !out.line.includes(this.o.q)) return null;
    return out;
  }
}
