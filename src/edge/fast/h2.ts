import http2 from 'node:http2';
import { clientAddress } from '../../lib/trusted-proxies.js';
import type { EdgeTarget, EdgeUpstream } from '../backend.js';
import { isOverCap } from '../connection-cap.js';
import { page } from '../error-page.js';
import { normalizeTarget, pathOfTarget } from '../normalize.js';
import { REQUEST_DROP, hostOf } from '../request-head.js';
import { evaluateRules } from '../rules.js';
import { recordRequest, SENDABLE, type FastContext, type LogState } from './connection.js';
import type { AnswerHead } from './head.js';
import { Exchange, type AnswerSink } from './upstream.js';

const { NGHTTP2_FLAG_END_STREAM, NGHTTP2_INTERNAL_ERROR } = http2.constants;
/** What the HTTP/2 fast path shares with the edge: the HTTP/1.1 fast path's context less its hand-over. */
export type FastStreamContext = Omit<FastContext, 'handOver'>;

/** A node:http2 server's `stream` listener. */
export type StreamListener = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void;

/** Client headers that send an HTTP/2 request to the compatibility layer whatever their value. */
const NOT_FAST = new Set(['expect', 'x-berth-hop', 'x-berth-client', 'x-berth-proto', 'transfer-encoding', 'upgrade', 'connection', 'http2-settings']);
/** A header value that may be written into an HTTP/1.1 head as it is (nghttp2 already refuses CR, LF and NUL). */
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * The edge's HTTP/2 fast path (docs/edge.md "The fast path"): a stream that is a bodiless GET or HEAD
 * (its HEADERS frame ended it) for a host whose app runs here goes to the app over the same kept raw
 * connections as HTTP/1.1's fast path (src/edge/fast/upstream.ts), its answer written with node:http2's
 * core API (`respond`, `write`, `end`), with the same decisions, in the same order, as
 * `EdgeServer.handleRequest`. Any other stream (a body, an unknown or static host, another instance's
 * app, a host not yet looked up, an unusual header) is left to node:http2's compatibility layer and
 * that handler, untouched: `take` answers false before it does anything.
 */
export class FastStreams {
  /**
   * The compatibility layer's own handling of a stream (set by the TLS listener, src/edge/https.ts):
   * where a stream already taken goes when its app turns out to run on another instance.
   */
  handOver: StreamListener | null = null;

  constructor(private readonly ctx: FastStreamContext) {}

  /** Serves the stream here (true), or leaves it for the compatibility layer (false; nothing was done). */
  take(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]): boolean {
    if (!(flags & NGHTTP2_FLAG_END_STREAM)) return false;
    const method = headers[':method'];
    if (method !== 'GET' && method !== 'HEAD') return false;
    const authority = headers.host ?? headers[':authority'];
    const host = typeof authority === 'string' ? hostOf(authority) : '';
    const socket = stream.session?.socket;
    if (!host || !socket || isOverCap(socket)) return false;
    const { backend } = this.ctx;
    const target = backend.lookup(host);
    if (!target || target instanceof Promise || target.static || target.unavailable || backend.peer?.(target.projectId)) return false;
    const forwardTo = normalizeTarget(headers[':path'] ?? '');
    if (forwardTo === null || !SENDABLE.test(forwardTo)) return false;
    let pass = '';
    for (const name in headers) {
      if (name.charCodeAt(0) === 58 /* ':' pseudo-headers */ || name === 'host') continue;
      if (NOT_FAST.has(name)) return false;
      const v = headers[name];
      if (typeof v !== 'string' || !VALUE.test(v)) return false;
      if (name === 'content-length' && v !== '0') return false;
      if (!REQUEST_DROP.has(name)) pass += `${name}: ${v}\r\n`;
    }
    const xff = headers['x-forwarded-for'];
    const ip = clientAddress(socket.remoteAddress, typeof xff === 'string' ? xff : undefined, this.ctx.limits.trustedProxies);
    const log: LogState = { target, method, path: pathOfTarget(forwardTo), ip, started: performance.now(), close: false, secure: true };
    const request = `${method} ${forwardTo} HTTP/1.1\r\nhost: ${authority}\r\n${pass}x-forwarded-for: ${ip}\r\nx-forwarded-proto: https\r\nx-forwarded-host: ${authority}\r\nx-real-ip: ${ip}\r\n\r\n`;
    void this.serve(stream, target, log, request, () => this.handOver?.(stream, headers, flags, rawHeaders)).catch((err: unknown) => {
      this.ctx.log.error({ err }, 'edge HTTP/2 fast path failed');
      stream.close(NGHTTP2_INTERNAL_ERROR);
    });
    return true;
  }

  private async serve(stream: http2.ServerHttp2Stream, target: EdgeTarget, log: LogState, request: string, elsewhere: () => void): Promise<void> {
    const verdict = evaluateRules(target.rules, log.path, log.ip, this.ctx.counter);
    if (verdict?.status === 403) return this.answer(stream, log, 403, 'Forbidden', 'Your address may not access this path.');
    if (verdict?.status === 429) return this.answer(stream, log, 429, 'Too many requests', `Slow down: try again in ${verdict.retryAfter} s.`, { 'retry-after': String(verdict.retryAfter) });
    let upstream: EdgeUpstream;
    try {
      const up = this.ctx.backend.upstream(target.projectId);
      upstream = 'then' in up ? await up : up;
    } catch (e) {
      // Several instances: the app turned out to run on another one (its lease moved since the lookup). The
      // compatibility layer's path forwards it there (its rules see this request a second time: a rare race).
      if (this.ctx.backend.peer?.(target.projectId)) {
        if (this.handOver) return elsewhere();
        return void stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      }
      return this.answer(stream, log, 503, 'Project unavailable', (e as Error).message || 'The app is not running.', { 'retry-after': '10' });
    }
    if (stream.destroyed) return;
    const sink = new StreamSink(this, stream, log, this.ctx.open.open(target.projectId));
    const exchange = new Exchange(this.ctx.pools, upstream.pick?.() ?? upstream, request, log.method, sink);
    sink.watch(exchange);
    exchange.start();
  }

  /** An answer of the edge's own (a rule's refusal, an app that cannot serve). */
  answer(stream: http2.ServerHttp2Stream, log: LogState, status: number, title: string, text: string, extra: Record<string, string> = {}): void {
    const body = page(title, text);
    const bytes = Buffer.byteLength(body);
    if (!stream.destroyed && !stream.headersSent) {
      const head = log.method === 'HEAD';
      stream.respond({ ':status': status, 'content-type': 'text/html; charset=utf-8', 'content-length': String(bytes), 'cache-control': 'no-store', ...extra, ...hsts(log) }, { endStream: head });
      if (!head) stream.end(body);
    }
    this.record(log, status, bytes);
  }

  record(log: LogState, status: number, bytes: number): void {
    recordRequest(this.ctx.requests, log, status, bytes);
  }

  get logger(): FastStreamContext['log'] {
    return this.ctx.log;
  }
}

function hsts(log: LogState): Record<string, string> {
  return log.target.hsts ? { 'strict-transport-security': 'max-age=31536000' } : {};
}

/**
 * An app's answer written to an HTTP/2 stream: the app's headers (hop-by-hop ones were left out when
 * its head was read) and status in one `respond`, the body as it comes with backpressure both ways
 * (`write` false pauses the app's connection until the stream drains), then the log entry and the
 * open count released. A client that resets the stream aborts the exchange.
 */
class StreamSink implements AnswerSink {
  readonly asFields = true;
  private status = 502;
  private bytes = 0;
  private counting = true;
  private over = false;

  constructor(
    private readonly owner: FastStreams,
    private readonly stream: http2.ServerHttp2Stream,
    private readonly log: LogState,
    private readonly release: () => void,
  ) {}

  private exchange: Exchange | null = null;
  /** Removed when the answer is over (`detach`). */
  private readonly onDrain = (): void => this.exchange?.resume();

  /** Ties the stream's drain and close to the exchange. */
  watch(exchange: Exchange): void {
    this.exchange = exchange;
    this.stream.on('drain', this.onDrain);
    this.stream.once('close', () => {
      if (this.over) return;
      exchange.abort();
      this.finish();
    });
  }

  head(h: AnswerHead, first: Buffer | null): boolean {
    this.status = h.status;
    const headers: http2.OutgoingHttpHeaders = h.fields ?? {};
    headers[':status'] = h.status;
    if (h.framing.kind === 'length') {
      headers['content-length'] = String(h.framing.length);
      if (this.log.method !== 'HEAD') {
        this.bytes = h.framing.length;
        this.counting = false;
      }
    } else if (h.framing.kind === 'none' && h.length !== null && h.status !== 204) headers['content-length'] = String(h.length);
    if (this.log.target.hsts) headers['strict-transport-security'] = 'max-age=31536000';
    if (this.stream.destroyed) return true;
    try {
      this.stream.respond(headers, { endStream: h.framing.kind === 'none' || (h.framing.kind === 'length' && h.framing.length === 0) });
    } catch (err) {
      // Headers HTTP/1.1 allows and HTTP/2 does not (a repeated single-value header such as Content-Type): a 502, as for any answer the edge cannot pass on.
      this.exchange?.abort();
      this.fail(err as Error, false);
      return true;
    }
    return first ? this.data(first) : true;
  }

  data(chunk: Buffer): boolean {
    if (this.stream.destroyed) return true;
    if (this.counting) this.bytes += chunk.length;
    return this.stream.write(chunk);
  }

  end(): void {
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
    this.finish();
  }

  fail(err: Error, started: boolean): void {
    this.owner.logger.debug({ err: err.message, projectId: this.log.target.projectId }, 'edge upstream error');
    if (started) {
      this.finish();
      this.stream.close(NGHTTP2_INTERNAL_ERROR);
      return;
    }
    this.over = true;
    this.release();
    this.detach();
    this.owner.answer(this.stream, this.log, 502, 'Bad gateway', 'The app closed the connection before answering.');
  }

  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.release();
    this.owner.record(this.log, this.status, this.bytes);
    this.detach();
  }

  /**
   * Lets go of the exchange. node:http2 keeps a stream whose last frames were still being written
   * when it was destroyed until a full garbage collection (its native half waits for the collector),
   * with everything the stream's listeners reach: with 5 or more streams in flight on a session, about
   * a tenth of what its streams allocate outlives the young generation that way. The exchange and the
   * request stayed with them, half again as much (docs/benchmarks.md "2026-12-01 21:35").
   */
  private detach(): void {
    this.stream.removeListener('drain', this.onDrain);
    this.exchange = null;
  }
}
