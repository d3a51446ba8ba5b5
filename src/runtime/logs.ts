import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

export type LogStream = 'stdout' | 'stderr';

export interface LogLine {
  ts: string;
  stream: LogStream;
  line: string;
}

/** What a log file holds, one JSON object a line, each starting with its time: `{"ts":"<ISO>",...}`. */
export interface LogRecord {
  ts: string;
}

export interface LogFileOptions {
  /** Told after each line written to disk (the log relay: other instances' streams read the file). */
  onWrite?: () => void;
  /**
   * Kept logs (runtime and request logs): past `maxBytes`, or when the day (UTC) changes, the file is
   * moved to a segment `<file>.<yyyymmddThhmmssmmmZ>` (the time it ended) and a new file started;
   * retention (log-retention.ts) removes old segments. Without it the file moves to `<file>.1`,
   * replacing the previous one (build logs: at most 2 x maxBytes each).
   */
  keep?: boolean;
  /**
   * Lines are gathered for up to this many milliseconds (or 64 KiB) and written with one call: the
   * edge's request log, one line per proxied request, would otherwise cost a synchronous write on the
   * request path. Reads and searches write what is gathered first; a crash loses at most that window.
   */
  bufferMs?: number;
}

/** A gathered batch is written at once past this size. */
const BUFFER_BYTES = 64 * 1024;

export interface ReadOptions {
  /** The last `limit` lines (default 200). */
  limit?: number;
  /** Only lines with a timestamp strictly after this ISO time. */
  since?: string;
}

/**
 * One bounded on-disk log: JSON lines appended to `<file>`; when it passes `maxBytes` it is moved
 * to `<file>.1` (replacing the previous one), so at most 2 x maxBytes stay on disk. Live
 * subscribers get every line as it is appended (SSE streams).
 */
export class LogFile<T extends LogRecord = LogLine> {
  private fd: number | null = null;
  private size = 0;
  /** The UTC day (`yyyy-mm-dd`) of the open file's first line (kept logs rotate when it changes). */
  private day = '';
  private readonly listeners = new Set<(l: T) => void>();
  private closedForGood = false;

  constructor(
    readonly file: string,
    private readonly maxBytes: number,
    private readonly opts: LogFileOptions = {},
  ) {}

  private pending: string[] = [];
  private pendingBytes = 0;
  private pendingTs = '';
  private flushTimer: NodeJS.Timeout | null = null;

  append(entry: T): void {
    if (this.closedForGood) return;
    const text = JSON.stringify(entry) + '\n';
    if (this.opts.bufferMs) {
      if (this.pending.length === 0) this.pendingTs = entry.ts;
      this.pending.push(text);
      this.pendingBytes += text.length;
      if (this.pendingBytes >= BUFFER_BYTES) this.flush();
      else if (!this.flushTimer) {
        this.flushTimer = setTimeout(() => this.flush(), this.opts.bufferMs);
        this.flushTimer.unref();
      }
    } else this.write(text, entry.ts);
    for (const fn of this.listeners) {
      try {
        fn(entry);
      } catch {
        /* a slow or broken subscriber must not stop the others */
      }
    }
  }

  /** Writes the lines gathered so far (`bufferMs`), if any. */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.pending.length === 0) return;
    const text = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    if (!this.closedForGood) this.write(text, this.pendingTs);
  }

  /** One write of `text` (whole lines; `ts` the first one's time), rotating the file first when due. */
  private write(text: string, ts: string): void {
    try {
      if (this.fd === null) {
        mkdirSync(path.dirname(this.file), { recursive: true });
        this.fd = openSync(this.file, 'a', 0o600);
        this.size = statSync(this.file).size;
        this.day = this.size > 0 ? firstDay(this.fd) : ts.slice(0, 10);
      }
      const newDay = this.opts.keep && this.size > 0 && ts.slice(0, 10) !== this.day;
      if ((this.size + text.length > this.maxBytes && this.size > 0) || newDay) {
        closeSync(this.fd);
        renameSync(this.file, this.opts.keep ? segmentName(this.file) : this.file + '.1');
        this.fd = openSync(this.file, 'a', 0o600);
        this.size = 0;
      }
      if (this.size === 0) this.day = ts.slice(0, 10);
      this.size += writeSync(this.fd, text);
      this.opts.onWrite?.();
    } catch {
      /* a full disk must not take the app or the build down; the line is still streamed */
    }
  }

  read(opts: ReadOptions = {}): T[] {
    this.flush();
    const limit = Math.max(1, Math.min(opts.limit ?? 200, 10000));
    const out: T[] = [];
    for (const f of [this.opts.keep ? (segmentsOf(this.file).at(-1) ?? '') : this.file + '.1', this.file]) {
      if (!existsSync(f)) continue;
      let text: string;
      try {
        text = readFileSync(f, 'utf8');
      } catch {
        continue;
      }
      for (const raw of text.split('\n')) {
        if (!raw) continue;
        try {
          const l = JSON.parse(raw) as T;
          if (opts.since && !(l.ts > opts.since)) continue;
          out.push(l);
        } catch {
          /* a torn last line after a crash */
        }
      }
    }
    return out.length > limit ? out.slice(out.length - limit) : out;
  }

  subscribe(fn: (l: T) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  close(): void {
    this.flush();
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        /* already closed */
      }
      this.fd = null;
    }
  }

  /** Closes and deletes the files; later appends are dropped. */
  remove(): void {
    this.closedForGood = true;
    this.pending = [];
    this.close();
    this.listeners.clear();
    rmSync(this.file, { force: true });
    rmSync(this.file + '.1', { force: true });
    for (const f of segmentsOf(this.file)) rmSync(f, { force: true });
  }
}

/** The day (`yyyy-mm-dd`) of the first line of an open log file (`{"ts":"<ISO>"`), '' when unreadable. */
function firstDay(fd: number): string {
  const buf = Buffer.alloc(17);
  const n = readSync(fd, buf, 0, 17, 0);
  return n === 17 && buf.toString('latin1', 0, 7) === '{"ts":"' ? buf.toString('latin1', 7, 17) : '';
}

/** A free name for the segment of a kept log that ends now: `<file>.<yyyymmddThhmmssmmmZ>`. */
function segmentName(file: string): string {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '');
  let name = `${file}.${stamp}`;
  for (let i = 1; existsSync(name); i++) name = `${file}.${stamp}-${i}`;
  return name;
}

/**
 * The older parts of a log, oldest first: its segments (kept logs) or `<file>.1`, as full paths.
 * Segment names sort in time order, and `.1` (written before logs were kept) before every segment.
 */
export function segmentsOf(file: string): string[] {
  const dir = path.dirname(file);
  const base = path.basename(file) + '.';
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(base) && /^(1|\d{8}T\d{9}Z(-\d+)?)$/.test(n.slice(base.length)))
    .sort()
    .map((n) => path.join(dir, n));
}

/**
 * Runtime and request logs per app (`<dataDir>/logs/projects/<app>/runtime.log`, `requests.log`: a
 * project's id for its production app, `<projectId>-<hash>` for a preview environment's), kept in
 * segments until retention removes them (log-retention.ts), and build logs per deployment
 * (`<dataDir>/logs/projects/<projectId>/builds/<deploymentId>.log`), each bounded.
 */
/** How long the edge's request lines are gathered before one write (LogFileOptions.bufferMs). */
const REQUEST_LOG_BUFFER_MS = 200;

export class LogStore {
  private readonly files = new Map<string, LogFile<LogRecord>>();
  /** Told of each line written, by the file's key (`p:<app>`, `d:<deploymentId>`, `r:<app>`): the log relay. */
  onAppend: ((key: string) => void) | null = null;

  constructor(
    readonly dataDir: string,
    private readonly limits: { runtimeBytes: number; buildBytes: number } = { runtimeBytes: 5 * 1024 * 1024, buildBytes: 5 * 1024 * 1024 },
  ) {}

  /** The folder of an app's logs (its runtime and request logs; a project's id: its build logs too). */
  dirOf(app: string): string {
    return path.join(this.dataDir, 'logs', 'projects', safeName(app));
  }

  runtime(projectId: string): LogFile {
    return this.get(`p:${projectId}`, path.join(this.dirOf(projectId), 'runtime.log'), this.limits.runtimeBytes, true) as unknown as LogFile;
  }

  /** The edge's requests of an app (kept like its runtime log). */
  requests<T extends LogRecord>(app: string): LogFile<T> {
    // Once per request the edge serves: the open file first, its path only when it is not open.
    const open = this.files.get(`r:${app}`);
    if (open) return open as unknown as LogFile<T>;
    return this.get(`r:${app}`, path.join(this.dirOf(app), 'requests.log'), this.limits.runtimeBytes, true, REQUEST_LOG_BUFFER_MS) as unknown as LogFile<T>;
  }

  build(projectId: string, deploymentId: string): LogFile {
    return this.get(`d:${deploymentId}`, path.join(this.dirOf(projectId), 'builds', `${safeName(deploymentId)}.log`), this.limits.buildBytes, false) as unknown as LogFile;
  }

  /** The open log file at `file`, if any (retention closes one before removing it). */
  openAt(file: string): LogFile<LogRecord> | undefined {
    for (const f of this.files.values()) if (f.file === file) return f;
    return undefined;
  }

  /** Removes the project's runtime log and every build log of its deployments. */
  removeProject(projectId: string): void {
    const dir = this.dirOf(projectId);
    for (const [k, f] of this.files) {
      if (f.file.startsWith(dir + path.sep)) {
        f.remove();
        this.files.delete(k);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }

  /** Removes an app's own logs and its folder (a preview environment's app, `<projectId>-<hash>`, on its removal). */
  removeApp(app: string): void {
    this.removeProject(app);
  }

  closeAll(): void {
    for (const f of this.files.values()) f.close();
    this.files.clear();
  }

  /** Writes every gathered line (a search reads the files). */
  flushAll(): void {
    for (const f of this.files.values()) f.flush();
  }

  private get(key: string, file: string, max: number, keep: boolean, bufferMs?: number): LogFile<LogRecord> {
    let f = this.files.get(key);
    if (!f) {
      f = new LogFile<LogRecord>(file, max, { keep, onWrite: () => this.onAppend?.(key), ...(bufferMs ? { bufferMs } : {}) });
      this.files.set(key, f);
    }
    return f;
  }
}

export function safeName(id: string): string {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(id)) throw new Error('bad log id');
  return id;
}
