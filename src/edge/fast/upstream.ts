import net from 'node:net';
import { ChunkedReader } from './chunked.js';
import { MAX_HEAD, readAnswerHead, type AnswerHead } from './head.js';

/** An app's address as the fast path dials it. */
export interface RawAddress {
  host: string;
  port: number;
  key: string;
}

/** How long an idle connection to an app is kept (undici's default, which the edge used before). */
const IDLE_MS = 4000;
/** A connection to an app not made within this fails the request (undici's default connect timeout). */
const CONNECT_MS = 10_000;

/** What a pooled connection passes its socket's events to while an exchange uses it (`Exchange`). */
interface ConnUser {
  onData(d: Buffer): void;
  onEnd(): void;
  onError(e: Error): void;
}

/**
 * One connection to an app. Its listeners are set once, when it is dialled, and pass the socket's
 * events to the exchange using it; while it is idle in the pool, any event (data, an end, an error)
 * ends it. An exchange taking or giving it back adds no listener and no timer: the idle timer is made
 * once and re-armed (`refresh`), and when it fires on a connection in use it does nothing.
 */
export class AppConnection {
  user: ConnUser | null = null;
  /** In the pool since (ms), 0 when in use. */
  private idleSince = 0;
  private idleMs = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The duration the timer was made with (what `refresh` re-arms it for). */
  private armedFor = 0;
  private key = '';

  readonly socket: net.Socket;

  /** Dials `up`. Reads land in the pools' one read buffer and are copied out at once (`onread`: no stream machinery per read). */
  constructor(
    up: RawAddress,
    private readonly pools: RawPools,
  ) {
    const socket = net.connect({ host: up.host, port: up.port, noDelay: true, onread: { buffer: pools.readBuffer, callback: (n, buf) => this.read(n, buf) } });
    this.socket = socket;
    socket.setTimeout(CONNECT_MS, () => socket.destroy(new Error(`could not connect to ${up.key} within ${CONNECT_MS / 1000} s`)));
    socket.once('connect', () => socket.setTimeout(0));
    socket.on('end', () => (this.user ? this.user.onEnd() : this.drop()));
    socket.on('error', (e: Error) => (this.user ? this.user.onError(e) : this.drop()));
    socket.on('close', () => (this.user ? this.user.onError(new Error('the app closed the connection')) : this.drop()));
  }

  private read(n: number, buf: Uint8Array): boolean {
    // The buffer is the next read's too: what is passed on (and may wait in a client's write queue) is a copy.
    const d = Buffer.allocUnsafe(n);
    d.set(buf.subarray(0, n));
    if (this.user) this.user.onData(d);
    else this.drop();
    // Pausing is the exchange's (`pause` when its client is full).
    return true;
  }

  /** Put in the pool of `key` for `ms`. */
  rest(key: string, ms: number): void {
    this.user = null;
    this.key = key;
    this.idleSince = performance.now();
    this.idleMs = ms;
    if (this.timer && this.armedFor === ms) this.timer.refresh();
    else this.arm(ms);
  }

  /** Taken from the pool by an exchange. */
  use(user: ConnUser): void {
    this.idleSince = 0;
    this.user = user;
  }

  /** The exchange using it stops listening (it failed, or it retries elsewhere): any later event ends it. */
  release(): void {
    this.user = null;
  }

  private expire(): void {
    // In use since it was pooled (the next `rest` re-arms the timer), or re-pooled later than this timer knows.
    if (this.idleSince === 0) return;
    const left = this.idleMs - (performance.now() - this.idleSince);
    if (left > 1) return this.arm(left);
    this.drop();
  }

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = ms;
    this.timer = setTimeout(() => this.expire(), ms);
    this.timer.unref();
  }

  /** Leaves the pool (if it is there) and closes. */
  drop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.idleSince !== 0) this.pools.remove(this.key, this);
    this.idleSince = 0;
    this.socket.destroy();
  }
}

/**
 * Kept-alive connections to the apps, per address: a request takes an idle one (newest first) or dials
 * a new one; an answer read to its end, whose app did not ask to close, puts it back. An idle connection
 * the app closes, or that sends anything, leaves the pool; one idle for 4 s (or a second under the app's
 * own `Keep-Alive: timeout`) is closed.
 */
export class RawPools {
  private readonly idle = new Map<string, AppConnection[]>();
  /** Where every connection's reads land (each is copied out before the next read). */
  readonly readBuffer = Buffer.allocUnsafe(64 * 1024);
  private closed = false;
  /** Requests waiting for the end of this turn of the event loop: socket, request, socket, request... */
  private outbox: (net.Socket | string)[] = [];
  private readonly flush = (): void => {
    const out = this.outbox;
    this.outbox = [];
    for (let i = 0; i < out.length; i += 2) {
      const socket = out[i] as net.Socket;
      if (!socket.destroyed) socket.write(out[i + 1] as string, 'latin1');
    }
  };

  /**
   * Writes a request to an app's connection once this turn of the event loop has read all it brought
   * (`setImmediate`): the requests that came in one read of an HTTP/2 connection, or from several
   * clients at once, go to the app back to back, and the app wakes once for them rather than once
   * for each while the edge reads the next (docs/decisions.md "Requests to an app at the end of the turn").
   */
  send(socket: net.Socket, request: string): void {
    if (this.outbox.length === 0) setImmediate(this.flush);
    this.outbox.push(socket, request);
  }

  /** A connection to `up` for `user`: a kept one unless `fresh`. */
  take(up: RawAddress, user: ConnUser, fresh = false): { conn: AppConnection; reused: boolean } {
    const list = fresh ? undefined : this.idle.get(up.key);
    const kept = list?.pop();
    if (list && list.length === 0) this.idle.delete(up.key);
    if (kept) {
      kept.use(user);
      return { conn: kept, reused: true };
    }
    const conn = new AppConnection(up, this);
    conn.use(user);
    return { conn, reused: false };
  }

  give(key: string, conn: AppConnection, appKeepAliveMs: number | null): void {
    conn.release();
    if (this.closed || conn.socket.destroyed) return void conn.drop();
    const ms = appKeepAliveMs === null ? IDLE_MS : Math.min(IDLE_MS, appKeepAliveMs - 1000);
    if (ms <= 0) return void conn.drop();
    let list = this.idle.get(key);
    if (!list) this.idle.set(key, (list = []));
    conn.rest(key, ms);
    list.push(conn);
  }

  /** An idle connection leaves its pool (it expired, or the app closed it). */
  remove(key: string, conn: AppConnection): void {
    const l = this.idle.get(key);
    const at = l?.indexOf(conn) ?? -1;
    if (at >= 0) l!.splice(at, 1);
    if (l && l.length === 0) this.idle.delete(key);
  }

  close(): void {
    this.closed = true;
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    for (const c of all) c.drop();
  }
}

/** Where one exchange's answer goes (src/edge/fast/connection.ts). */
export interface AnswerSink {
  /** The answer's headers wanted as an object (`AnswerHead.fields`), not as lines. */
  readonly asFields?: boolean;
  /**
   * The answer's head, and `first`: the first body bytes of a known-length answer when they came with
   * the head (written as `data` would: the HTTP/1.1 sink sends both in one write). Same return as `data`.
   */
  head(h: AnswerHead, first: Buffer | null): boolean;
  /** Body data (a chunked body's data without its framing); false: the client is full, `resume()` when it drains. */
  data(chunk: Buffer): boolean;
  end(): void;
  /** The exchange failed; `started`: `head` was called. */
  fail(err: Error, started: boolean): void;
}

/**
 * One request to an app and its answer, over a kept-alive connection or a new one. A kept connection
 * that fails before the app sent a byte (it closed it as the request went out) is retried once on a new
 * connection: the fast path sends only GET and HEAD, which may be repeated. Bytes past the answer's end
 * are never passed on: the connection is closed instead of reused.
 */
export class Exchange implements ConnUser {
  private conn: AppConnection | null = null;
  private socket: net.Socket | null = null;
  private reused = false;
  private retried = false;
  private got = 0;
  private buf: Buffer | null = null;
  private answer: AnswerHead | null = null;
  private left = 0;
  private chunked: ChunkedReader | null = null;
  private over = false;
  private paused = false;

  constructor(
    private readonly pools: RawPools,
    private readonly up: RawAddress,
    private readonly request: string,
    private readonly method: string,
    private readonly sink: AnswerSink,
  ) {}

  start(): void {
    const { conn, reused } = this.pools.take(this.up, this, this.retried);
    this.conn = conn;
    this.socket = conn.socket;
    this.reused = reused;
    this.pools.send(conn.socket, this.request);
  }

  /** The client's side is full / drained again. */
  pause(): void {
    // After the answer ended the connection may be another exchange's: it is not touched again.
    if (this.over) return;
    this.paused = true;
    this.socket?.pause();
  }

  resume(): void {
    if (this.over) return;
    this.paused = false;
    this.socket?.resume();
  }

  /** The client went away: the connection to the app cannot be reused mid-answer. */
  abort(): void {
    if (this.over) return;
    this.over = true;
    this.socket?.destroy();
  }

  onData(d: Buffer): void {
    if (this.over) return;
    this.got += d.length;
    if (this.answer) return this.body(d);
    this.buf = this.buf ? Buffer.concat([this.buf, d]) : d;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (this.buf.length > MAX_HEAD) this.failWith(new Error('the answer head is too large'));
        return;
      }
      const head = readAnswerHead(this.buf, end, this.method, this.sink.asFields === true);
      if (head instanceof Error) return this.failWith(head);
      const rest = this.buf.subarray(end + 4);
      this.buf = null;
      if (head.status === 101) return this.failWith(new Error('the app switched protocols unasked'));
      // An interim answer (100, 103): not passed on; the final one follows.
      if (head.status < 200) {
        if (rest.length === 0) return;
        this.buf = rest;
        continue;
      }
      this.answer = head;
      const kind = head.framing.kind;
      let first: Buffer | null = null;
      if (kind === 'length') {
        this.left = head.framing.length;
        const n = Math.min(this.left, rest.length);
        if (n > 0) first = n === rest.length ? rest : rest.subarray(0, n);
        this.left -= n;
      } else if (kind === 'chunked') this.chunked = new ChunkedReader();
      const room = this.sink.head(head, first);
      if (this.over) return;
      if (!room && !this.paused) this.pause();
      if (kind === 'none') return this.finish(rest.length === 0);
      if (kind === 'length') {
        if (this.left === 0) this.finish((first?.length ?? 0) === rest.length);
        return;
      }
      if (rest.length > 0) this.body(rest);
      return;
    }
  }

  private body(d: Buffer): void {
    const a = this.answer!;
    if (a.framing.kind === 'close') {
      if (d.length) this.pass(d);
      return;
    }
    if (a.framing.kind === 'length') {
      const n = Math.min(this.left, d.length);
      if (n > 0) this.pass(n === d.length ? d : d.subarray(0, n));
      this.left -= n;
      if (this.left === 0 && !this.over) this.finish(n === d.length);
      return;
    }
    const used = this.chunked!.read(d, (data) => this.pass(data));
    if (used instanceof Error) return this.failWith(used);
    if (this.chunked!.done && !this.over) this.finish(used === d.length);
  }

  private pass(d: Buffer): void {
    if (!this.sink.data(d) && !this.paused) this.pause();
  }

  onEnd(): void {
    if (this.over) return;
    if (this.answer?.framing.kind === 'close') return this.finish(false);
    this.onError(new Error('the app closed the connection before the answer ended'));
  }

  onError(e: Error): void {
    if (this.over) return;
    // A kept connection the app had closed: once more on a new one.
    if (this.reused && this.got === 0 && !this.retried) {
      this.retried = true;
      this.conn!.release();
      this.conn!.drop();
      this.start();
      return;
    }
    this.failWith(e);
  }

  private failWith(e: Error): void {
    if (this.over) return;
    this.over = true;
    this.socket?.destroy();
    this.sink.fail(e, this.answer !== null);
  }

  /** The answer ended; `clean`: nothing came past its end (else the connection is not reused). */
  private finish(clean: boolean): void {
    this.over = true;
    const conn = this.conn!;
    if (this.paused) conn.socket.resume();
    if (clean && this.answer!.reusable) this.pools.give(this.up.key, conn, this.answer!.keepAliveMs);
    else {
      conn.release();
      conn.drop();
    }
    this.sink.end();
  }
}
