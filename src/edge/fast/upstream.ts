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

interface Idle {
  socket: net.Socket;
  timer: NodeJS.Timeout;
}

/**
 * Kept-alive connections to the apps, per address: a request takes an idle one (newest first) or dials
 * a new one; an answer read to its end, whose app did not ask to close, puts it back. An idle connection
 * the app closes, or that sends anything, leaves the pool; one idle for 4 s (or a second under the app's
 * own `Keep-Alive: timeout`) is closed.
 */
export class RawPools {
  private readonly idle = new Map<string, Idle[]>();
  private closed = false;

  /** A connection to `up`: a kept one unless `fresh`. */
  take(up: RawAddress, fresh = false): { socket: net.Socket; reused: boolean } {
    const list = fresh ? undefined : this.idle.get(up.key);
    const kept = list?.pop();
    if (list && list.length === 0) this.idle.delete(up.key);
    if (kept) {
      clearTimeout(kept.timer);
      kept.socket.removeAllListeners('data').removeAllListeners('end').removeAllListeners('close').removeAllListeners('error');
      return { socket: kept.socket, reused: true };
    }
    const socket = net.connect({ host: up.host, port: up.port, noDelay: true });
    socket.setTimeout(CONNECT_MS, () => socket.destroy(new Error(`could not connect to ${up.key} within ${CONNECT_MS / 1000} s`)));
    socket.once('connect', () => socket.setTimeout(0));
    return { socket, reused: false };
  }

  give(key: string, socket: net.Socket, appKeepAliveMs: number | null): void {
    if (this.closed || socket.destroyed) return void socket.destroy();
    const ms = appKeepAliveMs === null ? IDLE_MS : Math.min(IDLE_MS, appKeepAliveMs - 1000);
    if (ms <= 0) return void socket.destroy();
    let list = this.idle.get(key);
    if (!list) this.idle.set(key, (list = []));
    const entry: Idle = { socket, timer: setTimeout(() => drop(), ms) };
    entry.timer.unref();
    const drop = () => {
      clearTimeout(entry.timer);
      const l = this.idle.get(key);
      const at = l?.indexOf(entry) ?? -1;
      if (at >= 0) l!.splice(at, 1);
      if (l && l.length === 0) this.idle.delete(key);
      socket.destroy();
    };
    // An idle connection has nothing to say: data, an end or an error ends it.
    socket.on('data', drop).on('end', drop).on('close', drop).on('error', drop);
    list.push(entry);
  }

  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) for (const e of list) {
      clearTimeout(e.timer);
      e.socket.destroy();
    }
    this.idle.clear();
  }
}

/** Where one exchange's answer goes (src/edge/fast/connection.ts). */
export interface AnswerSink {
  head(h: AnswerHead): void;
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
export class Exchange {
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
    const { socket, reused } = this.pools.take(this.up, this.retried);
    this.socket = socket;
    this.reused = reused;
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('end', () => this.onEnd());
    socket.on('error', (e: Error) => this.onError(e));
    socket.on('close', () => this.onError(new Error('the app closed the connection')));
    socket.write(this.request, 'latin1');
  }

  /** The client's side is full / drained again. */
  pause(): void {
    this.paused = true;
    this.socket?.pause();
  }

  resume(): void {
    this.paused = false;
    this.socket?.resume();
  }

  /** The client went away: the connection to the app cannot be reused mid-answer. */
  abort(): void {
    if (this.over) return;
    this.over = true;
    this.socket?.destroy();
  }

  private onData(d: Buffer): void {
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
      const head = readAnswerHead(this.buf, end, this.method);
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
      if (head.framing.kind === 'length') this.left = head.framing.length;
      else if (head.framing.kind === 'chunked') this.chunked = new ChunkedReader();
      this.sink.head(head);
      if (this.over) return;
      if (head.framing.kind === 'none') return this.finish(rest.length === 0);
      if (rest.length > 0 || head.framing.kind === 'length') this.body(rest);
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

  private onEnd(): void {
    if (this.over) return;
    if (this.answer?.framing.kind === 'close') return this.finish(false);
    this.onError(new Error('the app closed the connection before the answer ended'));
  }

  private onError(e: Error): void {
    if (this.over) return;
    // A kept connection the app had closed: once more on a new one.
    if (this.reused && this.got === 0 && !this.retried) {
      this.retried = true;
      this.socket!.removeAllListeners();
      this.socket!.on('error', () => {});
      this.socket!.destroy();
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
    const s = this.socket!;
    s.removeAllListeners('data').removeAllListeners('end').removeAllListeners('close').removeAllListeners('error');
    if (this.paused) s.resume();
    if (clean && this.answer!.reusable) this.pools.give(this.up.key, s, this.answer!.keepAliveMs);
    else s.destroy();
    this.sink.end();
  }
}
