import { randomUUID } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import type { Bus } from '../../db/notify.js';
import { segmentsOf, type LogFile, type LogLine, type LogStore } from '../../runtime/logs.js';
import type { RequestEntry, RequestLog } from '../../edge/requests.js';

/**
 * Build and runtime log lines for SSE clients of another instance (several instances on one
 * PostgreSQL and one data dir; `docs/scale-out.md`). The lines themselves never go through the
 * database: they are in the shared data dir already. What goes on the bus is a reference:
 *
 * - a stream that follows a log on a shared bus says so (`log-watch { k }`, again every WATCH_RENEW_MS
 *   while open); every instance notes which logs are watched (for WATCH_TTL_MS);
 * - the instance that writes a watched log says that it grew (`log:<key> {}`, at most every
 *   NOTIFY_EVERY_MS per log, the last write always followed by one);
 * - the stream then reads the file from where it stopped to its end (following a rotation to
 *   `<file>.1` or a kept log's newest segment) and sends the new lines, in file order. It also looks every FALLBACK_POLL_MS, so a
 *   notification lost while the bus reconnected delays lines, never drops them.
 *
 * The edge's request log (`server-logs/stream`) lives in the memory of the instance whose edge served
 * the request, so its entries go by value instead: a stream says `req-watch { k }` as above, and every
 * instance that hears it forwards the entries its edge records for that project (`req:<key>`, batched
 * every REQUEST_BATCH_MS, several messages when they do not fit one; paths cut to 1000 characters).
 * `server-logs/recent` asked of an instance that does not run the app asks the one that does
 * (`req-recent { k, n, r, to }`); it answers on `req-recent:<r>` in numbered parts, and the asker
 * merges them with what its own ring holds (waiting at most RECENT_WAIT_MS).
 *
 * On a shared bus the stream takes every line from the file, this instance's own included (a log
 * written by two instances at once, as during an app's hand-over, then still has no duplicates).
 * On SQLite (one instance) a stream takes lines from the in-process subscription as before.
 */
const NOTIFY_EVERY_MS = 50;
const WATCH_TTL_MS = 60_000;
const WATCH_RENEW_MS = 20_000;
const FALLBACK_POLL_MS = 2000;
const REQUEST_BATCH_MS = 100;
/** What one message of request entries may hold (JSON text), under the bus's limit with its envelope. */
const REQUEST_BATCH_BYTES = 6000;
/** How long a read of the recent requests waits for the instance that runs the app. */
const RECENT_WAIT_MS = 2000;
/** At most this much is read per look (a stream far behind catches up over several). */
const MAX_READ = 1024 * 1024;

export class LogRelay {
  /** Logs some stream (on any instance) follows, until when. */
  private readonly watched = new Map<string, number>();
  /** Per log: a notification waiting for its turn. */
  private readonly pendingNotify = new Map<string, NodeJS.Timeout>();
  private readonly lastNotify = new Map<string, number>();

  /** Request-log keys some stream on another instance follows: until when, and the local subscription. */
  private readonly requestWatch = new Map<string, { until: number; off: () => void; batch: RequestEntry[]; timer: NodeJS.Timeout | null }>();

  constructor(
    private readonly bus: Bus,
    logs: LogStore,
    private readonly requests: RequestLog,
  ) {
    if (!bus.shared) return;
    logs.onAppend = (key) => this.appended(key);
    bus.subscribe('log-watch', (p: { k?: unknown } | null) => {
      if (typeof p?.k === 'string' && p.k.length <= 200) this.watched.set(p.k, Date.now() + WATCH_TTL_MS);
    });
    bus.subscribe('req-watch', (p: { k?: unknown } | null, origin) => {
      if (origin !== bus.instanceId && typeof p?.k === 'string' && p.k.length <= 200) this.watchRequests(p.k);
    });
    bus.subscribe('req-recent', (p: { k?: unknown; n?: unknown; r?: unknown; to?: unknown } | null, origin) => {
      if (origin === bus.instanceId || p?.to !== bus.instanceId) return;
      if (typeof p.k !== 'string' || p.k.length > 200 || typeof p.r !== 'string' || p.r.length > 64 || typeof p.n !== 'number') return;
      const parts = partsOf(this.requests.recent(p.k, p.n));
      parts.forEach((e, i) => void this.bus.publish(`req-recent:${p.r}`, { i, of: parts.length, e }).catch(() => {}));
    });
  }

  /**
   * The `limit` newest requests of `key`, oldest first: this instance's own and, when another live
   * instance runs the app (`owner`, its instance id), that instance's, asked over the bus. An owner
   * that does not answer in RECENT_WAIT_MS leaves what has arrived.
   */
  recentRequests(key: string, limit: number, owner: string | undefined): Promise<RequestEntry[]> {
    const own = this.requests.recent(key, limit);
    if (!this.bus.shared || owner === undefined || owner === this.bus.instanceId) return Promise.resolve(own);
    const reply = randomUUID();
    const parts = new Map<number, RequestEntry[]>();
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        off();
        clearTimeout(timer);
        const all = [...own, ...[...parts.values()].flat()].sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0));
        resolve(all.slice(-Math.max(1, limit)));
      };
      const off = this.bus.subscribe(`req-recent:${reply}`, (p: { i?: unknown; of?: unknown; e?: unknown } | null, origin) => {
        if (origin !== owner || typeof p?.i !== 'number' || typeof p.of !== 'number' || !Array.isArray(p.e)) return;
        parts.set(p.i, p.e.filter((e): e is RequestEntry => !!e && typeof e === 'object' && typeof (e as RequestEntry).ts === 'string'));
        if (parts.size >= p.of) finish();
      });
      const timer = setTimeout(finish, RECENT_WAIT_MS);
      timer.unref?.();
      this.bus.publish('req-recent', { k: key, n: limit, r: reply, to: owner }).catch(finish);
    });
  }

  /**
   * Follows the request log of `key` for one stream: entries recorded by this instance's edge and, on
   * a shared bus, by every other instance's. Answers the function that stops following.
   */
  followRequests(key: string, fn: (e: RequestEntry) => void): () => void {
    const offLocal = this.requests.subscribe(key, fn);
    if (!this.bus.shared) return offLocal;
    const offBus = this.bus.subscribe(`req:${key}`, (entries: unknown, origin) => {
      if (origin === this.bus.instanceId || !Array.isArray(entries)) return;
      for (const e of entries) if (e && typeof e === 'object') fn(e as RequestEntry);
    });
    const watch = () => void this.bus.publish('req-watch', { k: key }).catch(() => {});
    watch();
    const renew = setInterval(watch, WATCH_RENEW_MS);
    renew.unref();
    return () => {
      offLocal();
      offBus();
      clearInterval(renew);
    };
  }

  private watchRequests(key: string): void {
    const until = Date.now() + WATCH_TTL_MS;
    const w = this.requestWatch.get(key);
    if (w) {
      w.until = until;
      return;
    }
    const entry: { until: number; off: () => void; batch: RequestEntry[]; timer: NodeJS.Timeout | null } = { until, off: () => {}, batch: [], timer: null };
    entry.off = this.requests.subscribe(key, (e) => {
      if (Date.now() > entry.until) {
        entry.off();
        this.requestWatch.delete(key);
        return;
      }
      entry.batch.push(e);
      entry.timer ??= setTimeout(() => {
        entry.timer = null;
        this.sendRequests(key, entry.batch.splice(0));
      }, REQUEST_BATCH_MS);
      entry.timer.unref?.();
    });
    this.requestWatch.set(key, entry);
  }

  private sendRequests(key: string, entries: RequestEntry[]): void {
    for (const part of partsOf(entries)) if (part.length) void this.bus.publish(`req:${key}`, part).catch(() => {});
  }

  /**
   * Follows `file` (whose store key is `key`) for one stream: `fn` gets each line appended from now
   * on, by any instance. Answers the function that stops following.
   */
  follow(key: string, file: LogFile, fn: (l: LogLine) => void): () => void {
    if (!this.bus.shared) return file.subscribe(fn);
    const tail = new Tail(file.file, fn);
    let soon = false;
    const look = () => {
      if (soon) return;
      soon = true;
      setImmediate(() => {
        soon = false;
        tail.read();
      });
    };
    const offBus = this.bus.subscribe(`log:${key}`, look);
    const offLocal = file.subscribe(look);
    const watch = () => void this.bus.publish('log-watch', { k: key }).catch(() => {});
    watch();
    const renew = setInterval(watch, WATCH_RENEW_MS);
    const poll = setInterval(look, FALLBACK_POLL_MS);
    renew.unref();
    poll.unref();
    return () => {
      offBus();
      offLocal();
      clearInterval(renew);
      clearInterval(poll);
    };
  }

  private appended(key: string): void {
    const until = this.watched.get(key);
    if (until === undefined) return;
    if (until < Date.now()) {
      this.watched.delete(key);
      return;
    }
    if (this.pendingNotify.has(key)) return;
    const wait = Math.max(0, (this.lastNotify.get(key) ?? 0) + NOTIFY_EVERY_MS - Date.now());
    const timer = setTimeout(() => {
      this.pendingNotify.delete(key);
      this.lastNotify.set(key, Date.now());
      void this.bus.publish(`log:${key}`, {}).catch(() => {});
    }, wait);
    timer.unref();
    this.pendingNotify.set(key, timer);
  }
}

/** Where one stream is in a log file: the file's identity (inode) and the byte offset read up to. */
class Tail {
  private ino: number;
  private pos: number;
  private partial = '';

  constructor(
    private readonly file: string,
    private readonly fn: (l: LogLine) => void,
  ) {
    const st = statOf(file);
    this.ino = st?.ino ?? -1;
    this.pos = st?.size ?? 0;
  }

  read(): void {
    const st = statOf(this.file);
    if (!st) return;
    if (st.ino !== this.ino) {
      // Rotated: the rest of the old file is in `<file>.1` or the newest segment now (when it is still that file).
      for (const f of segmentsOf(this.file).reverse().slice(0, 2)) {
        const old = statOf(f);
        if (old && old.ino === this.ino) {
          this.emit(readRange(f, this.pos, old.size));
          break;
        }
      }
      this.partial = '';
      this.ino = st.ino;
      this.pos = 0;
    }
    if (st.size < this.pos) this.pos = 0;
    if (st.size > this.pos) this.emit(readRange(this.file, this.pos, st.size));
  }

  private emit(chunk: { text: string; end: number } | null): void {
    if (!chunk) return;
    this.pos = chunk.end;
    const text = this.partial + chunk.text;
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const raw of lines) {
      if (!raw) continue;
      try {
        this.fn(JSON.parse(raw) as LogLine);
      } catch {
        /* a torn line */
      }
    }
  }
}

function statOf(file: string): { ino: number; size: number } | null {
  try {
    const st = statSync(file);
    return { ino: st.ino, size: st.size };
  } catch {
    return null;
  }
}

/** Bytes [from, min(to, from + MAX_READ)) of `file` as text, and where the read ended. */
function readRange(file: string, from: number, to: number): { text: string; end: number } | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = Math.min(to, fstatSync(fd).size);
    const n = Math.min(size - from, MAX_READ);
    if (n <= 0) return null;
    const buf = Buffer.alloc(n);
    const got = readSync(fd, buf, 0, n, from);
    // Cut at the last newline so a multi-byte character is never split.
    const cut = buf.subarray(0, got).lastIndexOf(0x0a);
    if (cut < 0) return got === MAX_READ ? { text: buf.toString('utf8', 0, got), end: from + got } : null;
    return { text: buf.toString('utf8', 0, cut + 1), end: from + cut + 1 };
  } finally {
    closeSync(fd);
  }
}

/**
 * Request entries cut into parts that each fit one bus message (REQUEST_BATCH_BYTES of JSON), paths
 * cut to 1000 characters; always at least one part (empty when there are no entries).
 */
function partsOf(entries: RequestEntry[]): RequestEntry[][] {
  const parts: RequestEntry[][] = [[]];
  let size = 2;
  for (const entry of entries) {
    const e = entry.path.length > 1000 ? { ...entry, path: entry.path.slice(0, 1000) } : entry;
    const n = JSON.stringify(e).length + 1;
    if (parts.at(-1)!.length && size + n > REQUEST_BATCH_BYTES) {
      parts.push([]);
      size = 2;
    }
    parts.at(-1)!.push(e);
    size += n;
  }
  return parts;
}

