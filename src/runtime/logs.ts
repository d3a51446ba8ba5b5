import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

export type LogStream = 'stdout' | 'stderr';

export interface LogLine {
  ts: string;
  stream: LogStream;
  line: string;
}

export interface ReadOptions {
  /** The last `limit` lines (default 200). */
  limit?: number;
  /** Only lines with a timestamp strictly after this ISO time. */
  since?: string;
}

type Listener = (l: LogLine) => void;

/**
 * One bounded on-disk log: JSON lines appended to `<file>`; when it passes `maxBytes` it is moved
 * to `<file>.1` (replacing the previous one), so at most 2 x maxBytes stay on disk. Live
 * subscribers get every line as it is appended (SSE streams).
 */
export class LogFile {
  private fd: number | null = null;
  private size = 0;
  private readonly listeners = new Set<Listener>();
  private closedForGood = false;

  constructor(
    readonly file: string,
    private readonly maxBytes: number,
    /** Told after each line written to disk (the log relay: other instances' streams read the file). */
    private readonly onWrite?: () => void,
  ) {}

  append(entry: LogLine): void {
    if (this.closedForGood) return;
    const text = JSON.stringify(entry) + '\n';
    try {
      if (this.fd === null) {
        mkdirSync(path.dirname(this.file), { recursive: true });
        this.fd = openSync(this.file, 'a', 0o600);
        this.size = statSync(this.file).size;
      }
      if (this.size + text.length > this.maxBytes && this.size > 0) {
        closeSync(this.fd);
        renameSync(this.file, this.file + '.1');
        this.fd = openSync(this.file, 'a', 0o600);
        this.size = 0;
      }
      this.size += writeSync(this.fd, text);
      this.onWrite?.();
    } catch {
      /* a full disk must not take the app or the build down; the line is still streamed */
    }
    for (const fn of this.listeners) {
      try {
        fn(entry);
      } catch {
        /* a slow or broken subscriber must not stop the others */
      }
    }
  }

  read(opts: ReadOptions = {}): LogLine[] {
    const limit = Math.max(1, Math.min(opts.limit ?? 200, 10000));
    const out: LogLine[] = [];
    for (const f of [this.file + '.1', this.file]) {
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
          const l = JSON.parse(raw) as LogLine;
          if (opts.since && !(l.ts > opts.since)) continue;
          out.push(l);
        } catch {
          /* a torn last line after a crash */
        }
      }
    }
    return out.length > limit ? out.slice(out.length - limit) : out;
  }

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  close(): void {
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
    this.close();
    this.closedForGood = true;
    this.listeners.clear();
    rmSync(this.file, { force: true });
    rmSync(this.file + '.1', { force: true });
  }
}

/**
 * Runtime logs per app (`<dataDir>/logs/projects/<app>/runtime.log`: a project's id for its production
 * app, `<projectId>-<hash>` for a preview environment's) and build logs per
 * deployment (`<dataDir>/logs/projects/<projectId>/builds/<deploymentId>.log`), each bounded.
 */
export class LogStore {
  private readonly files = new Map<string, LogFile>();
  /** Told of each line written, by the file's key (`p:<app>`, `d:<deploymentId>`): the log relay. */
  onAppend: ((key: string) => void) | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly limits: { runtimeBytes: number; buildBytes: number } = { runtimeBytes: 5 * 1024 * 1024, buildBytes: 5 * 1024 * 1024 },
  ) {}

  runtime(projectId: string): LogFile {
    return this.get(`p:${projectId}`, path.join(this.dataDir, 'logs', 'projects', safeName(projectId), 'runtime.log'), this.limits.runtimeBytes);
  }

  build(projectId: string, deploymentId: string): LogFile {
    return this.get(`d:${deploymentId}`, path.join(this.dataDir, 'logs', 'projects', safeName(projectId), 'builds', `${safeName(deploymentId)}.log`), this.limits.buildBytes);
  }

  /** Removes the project's runtime log and every build log of its deployments. */
  removeProject(projectId: string): void {
    const key = `p:${projectId}`;
    this.runtime(projectId).remove();
    this.files.delete(key);
    const dir = path.join(this.dataDir, 'logs', 'projects', safeName(projectId));
    for (const [k, f] of this.files) {
      if (k.startsWith('d:') && f.file.startsWith(dir + path.sep)) {
        f.remove();
        this.files.delete(k);
      }
    }
    rmSync(path.join(this.dataDir, 'logs', 'projects', safeName(projectId)), { recursive: true, force: true });
  }

  /** Removes an app's own runtime log and its folder (a preview environment's app, `<projectId>-<hash>`, on its removal). */
  removeApp(app: string): void {
    const key = `p:${app}`;
    this.runtime(app).remove();
    this.files.delete(key);
    rmSync(path.join(this.dataDir, 'logs', 'projects', safeName(app)), { recursive: true, force: true });
  }

  closeAll(): void {
    for (const f of this.files.values()) f.close();
    this.files.clear();
  }

  private get(key: string, file: string, max: number): LogFile {
    let f = this.files.get(key);
    if (!f) {
      f = new LogFile(file, max, () => this.onAppend?.(key));
      this.files.set(key, f);
    }
    return f;
  }
}

function safeName(id: string): string {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(id)) throw new Error('bad log id');
  return id;
}
