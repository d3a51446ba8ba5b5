import { STATUS_CODES } from 'node:http';
import type net from 'node:net';
import type { Logger } from 'pino';
import { clientAddress } from '../../lib/trusted-proxies.js';
import { httpDate } from '../../lib/http-date.js';
import { isoNow } from '../../lib/iso-now.js';
import type { EdgeBackend, EdgeTarget, EdgeUpstream } from '../backend.js';
import { isOverCap } from '../connection-cap.js';
import { page } from '../error-page.js';
import type { EdgeLimits } from '../limits.js';
import { normalizeTarget, pathOfTarget } from '../normalize.js';
import type { OpenRequests } from '../open-requests.js';
import { ACME_CHALLENGE_PREFIX, hostOf, logPath } from '../request-head.js';
import type { RequestSink } from '../requests.js';
import { evaluateRules, type RateCounter } from '../rules.js';
import { readSimpleRequest, type AnswerHead, type SimpleRequest } from './head.js';
import { Exchange, type AnswerSink, type RawPools } from './upstream.js';

/** What the fast path shares with the EdgeServer that owns it (src/edge/proxy.ts). */
export interface FastContext {
  backend: EdgeBackend;
  requests: RequestSink;
  log: Logger;
  limits: EdgeLimits;
  counter: RateCounter;
  open: OpenRequests;
  pools: RawPools;
  /** node:http's own handling of a connection, given what the fast path read and did not serve. */
  handOver(socket: net.Socket): void;
}

/** node:http's keep-alive timeout on the edge (src/edge/proxy.ts), kept the same here. */
const KEEP_ALIVE_MS = 10_000;
/** The most body bytes that arrived with an answer's head which are copied beside it into one write. */
const ONE_WRITE_MAX = 16 * 1024;
/** Pipelined bytes held while an answer is written before the client is paused. */
const HOLD_MAX = 64 * 1024;
/** A path the app may be sent as it is in a request line (normalizeTarget escapes the rest). */
export const SENDABLE = /^\/[\x21-\x7e]*$/;

/**
 * One client connection on the edge's fast path (docs/edge.md "The fast path"): a bodiless GET or
 * HEAD, its head whole in what arrived, for a host whose app is running (or wakes), goes to the app
 * over a kept raw connection (src/edge/fast/upstream.ts) and its answer back, with the same route
 * rules, `X-Forwarded-*` headers, request log and open-request count as node:http's path. Anything
 * else (a body, an upgrade, a head in pieces, a static site, a redirect, an unknown host, another
 * instance's app, a malformed or unusual head) is handed to node:http with the bytes read so far, and
 * the connection stays there.
 */
export class FastConnection {
  /** Bytes read and not yet served (the next request's head, or pipelined ones). */
  private buf: Buffer | null = null;
  private busy = false;
  private fresh = true;
  private closing = false;
  private exchange: Exchange | null = null;
  /** Called when the connection ends while a request is open (the request's own cleanup). */
  private onGone: (() => void) | null = null;
  private readonly onData = (d: Buffer) => this.read(d);
  private readonly onClose = () => this.gone();
  /** The client ended its side: as node:http does (no half-open connections), the open request is dropped and the connection ends. */
  private readonly onEnd = () => {
    this.gone();
    this.socket.end();
  };
  private readonly onTimeout = () => this.timedOut();
  private readonly onDrain = () => this.exchange?.resume();
  /** Handed to node:http: nothing here touches the socket again. */
  private handed = false;
  /** The next request held, after an answer (on the next tick: pipelined requests answered at once do not nest). */
  private readonly nextHeld = () => {
    if (!this.busy && !this.handed && !this.socket.destroyed) this.next();
  };

  constructor(
    private readonly ctx: FastContext,
    private readonly socket: net.Socket,
    private readonly all: Set<FastConnection>,
  ) {
    all.add(this);
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('close', this.onClose);
    socket.on('end', this.onEnd);
    socket.on('error', this.onClose);
    socket.on('drain', this.onDrain);
    socket.on('timeout', this.onTimeout);
    socket.setTimeout(ctx.limits.headersTimeoutMs);
  }

  /** The edge closes: an idle connection now, a busy one after its answer. */
  close(): void {
    this.closing = true;
    if (!this.busy) this.socket.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private read(d: Buffer): void {
    this.buf = this.buf ? Buffer.concat([this.buf, d]) : d;
    if (this.busy) {
      if (this.buf.length > HOLD_MAX) this.socket.pause();
      return;
    }
    this.next();
  }

  /** Serves the next request held, or waits for one. */
  private next(): void {
    const buf = this.buf;
    if (!buf) {
      this.socket.setTimeout(KEEP_ALIVE_MS);
      return;
    }
    const end = buf.indexOf('\r\n\r\n');
    const req = end >= 0 ? readSimpleRequest(buf, end) : null;
    const host = req ? hostOf(req.host) : '';
    const secure = (this.socket as net.Socket & { encrypted?: boolean }).encrypted === true;
    if (!req || !host || isOverCap(this.socket) || (!secure && this.ctx.backend.acmeChallenge && req.target.startsWith(ACME_CHALLENGE_PREFIX))) return this.handOver();
    this.busy = true;
    this.fresh = false;
    this.socket.setTimeout(0);
    void this.serve(req, host, end + 4, secure).catch((err: unknown) => {
      this.ctx.log.error({ err }, 'edge fast path failed');
      this.socket.destroy();
    });
  }

  /** To node:http, with every byte read and not served (the current request's head first). */
  private handOver(): void {
    const s = this.socket;
    this.handed = true;
    s.pause();
    s.removeListener('data', this.onData).removeListener('close', this.onClose).removeListener('end', this.onEnd).removeListener('error', this.onClose).removeListener('drain', this.onDrain).removeListener('timeout', this.onTimeout);
    s.setTimeout(0);
    this.all.delete(this);
    if (this.buf) s.unshift(this.buf);
    this.buf = null;
    this.ctx.handOver(s);
    s.resume();
  }

  // Long on purpose: the same decisions, in the same order, as EdgeServer.handleRequest (src/edge/proxy.ts) for the requests this path takes.
  private async serve(req: SimpleRequest, host: string, headEnd: number, secure: boolean): Promise<void> {
    const started = performance.now();
    const { backend, limits } = this.ctx;
    const found = backend.lookup(host);
    const target = found instanceof Promise ? await found : found;
    const forwardTo = normalizeTarget(req.target);
    if (this.socket.destroyed) {
      this.all.delete(this);
      return;
    }
    // What node:http's path answers itself or sends elsewhere goes there, before anything is counted.
    if (!target || target.static || target.unavailable || (!secure && target.httpsRedirect) || forwardTo === null || !SENDABLE.test(forwardTo) || backend.peer?.(target.projectId)) {
      this.busy = false;
      return this.handOver();
    }
    // Committed: the head is consumed here.
    const head = this.buf!.subarray(0, headEnd);
    this.buf = this.buf!.length > headEnd ? this.buf!.subarray(headEnd) : null;
    this.pendingClose = req.close;
    const path = pathOfTarget(forwardTo);
    const ip = clientAddress(this.socket.remoteAddress, req.forwardedFor, limits.trustedProxies);
    const log = { target, method: req.method, path, ip, started, close: req.close, secure };
    const verdict = evaluateRules(target.rules, path, ip, this.ctx.counter);
    if (verdict?.status === 403) return this.answer(log, 403, 'Forbidden', 'Your address may not access this path.');
    if (verdict?.status === 429) return this.answer(log, 429, 'Too many requests', `Slow down: try again in ${verdict.retryAfter} s.`, `retry-after: ${verdict.retryAfter}\r\n`);
    let upstream: EdgeUpstream;
    try {
      const up = backend.upstream(target.projectId);
      upstream = 'then' in up ? await up : up;
    } catch (e) {
      // Several instances: the app turned out to run on another one (its lease moved since the lookup).
      // node:http's path forwards it there (its rules see this request a second time: a rare race).
      if (backend.peer?.(target.projectId)) {
        this.buf = this.buf ? Buffer.concat([head, this.buf]) : head;
        this.busy = false;
        return this.handOver();
      }
      return this.answer(log, 503, 'Project unavailable', (e as Error).message || 'The app is not running.', 'retry-after: 10\r\n');
    }
    if (this.socket.destroyed) return this.done();
    const proto = secure ? 'https' : limits.trustedProxies.size > 0 && req.forwardedProto === 'https' && limits.trustedProxies.trusts(this.socket.remoteAddress) ? 'https' : 'http';
    const request = `${req.method} ${forwardTo} HTTP/1.1\r\n${req.pass}x-forwarded-for: ${ip}\r\nx-forwarded-proto: ${proto}\r\nx-forwarded-host: ${req.host}\r\nx-real-ip: ${ip}\r\n\r\n`;
    const release = this.ctx.open.open(target.projectId);
    const sink = new ClientSink(this, log, release);
    const lane = upstream.pick?.() ?? upstream;
    this.exchange = new Exchange(this.ctx.pools, lane, request, req.method, sink);
    this.onGone = () => sink.clientGone();
    this.exchange.start();
  }

  /** An answer of the edge's own (a rule's refusal, an app that cannot serve). */
  answer(log: LogState, status: number, title: string, text: string, extra = ''): void {
    const body = page(title, text);
    const bytes = Buffer.byteLength(body);
    this.socket.write(this.headOf(log, status, `content-type: text/html; charset=utf-8\r\ncontent-length: ${bytes}\r\ncache-control: no-store\r\n${extra}`) + (log.method === 'HEAD' ? '' : body));
    this.record(log, status, bytes);
    this.done();
  }

  /** A status line and the headers every answer of the edge carries, around `headers`. */
  headOf(log: LogState, status: number, headers: string, hasDate = false): string {
    const hsts = log.secure && log.target.hsts ? 'strict-transport-security: max-age=31536000\r\n' : '';
    const conn = log.close || this.closing ? 'connection: close\r\n' : `connection: keep-alive\r\nkeep-alive: timeout=${KEEP_ALIVE_MS / 1000}\r\n`;
    return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n${headers}${hsts}${hasDate ? '' : `date: ${httpDate()}\r\n`}${conn}\r\n`;
  }

  get client(): net.Socket {
    return this.socket;
  }

  get logger(): Logger {
    return this.ctx.log;
  }

  record(log: LogState, status: number, bytes: number): void {
    recordRequest(this.ctx.requests, log, status, bytes);
  }

  /** The request's answer is written: the next one held, or wait. */
  done(): void {
    this.exchange = null;
    this.onGone = null;
    this.busy = false;
    if (this.socket.destroyed) return;
    if (this.closing || this.pendingClose) {
      this.socket.end();
      return;
    }
    if (this.socket.isPaused()) this.socket.resume();
    process.nextTick(this.nextHeld);
  }

  /** The request being answered asked to close the connection after it. */
  private pendingClose = false;

  private gone(): void {
    this.all.delete(this);
    this.exchange?.abort();
    this.onGone?.();
    this.onGone = null;
  }

  private timedOut(): void {
    if (this.busy) return;
    // No request began within the headers timeout: 408, as node:http answers; an idle kept-alive connection just closes.
    if (this.fresh && !this.buf) this.socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    this.socket.destroy();
  }
}

/** A request the fast path served, into the request log. */
export function recordRequest(requests: RequestSink, log: LogState, status: number, bytes: number): void {
  requests.record(log.target.projectId, { ts: isoNow(), method: log.method, path: logPath(log.path), status, durationMs: Math.round((performance.now() - log.started) * 10) / 10, ip: log.ip, bytes });
}

/** What a served request's log entry is made of. */
export interface LogState {
  target: EdgeTarget;
  method: string;
  path: string;
  ip: string;
  started: number;
  close: boolean;
  secure: boolean;
}

/**
 * An app's answer written to the client: the head the edge makes (the app's headers less hop-by-hop
 * ones, its own framing), the body as it comes (re-chunked when the app chunked it or ended it by
 * closing), backpressure both ways, then the log entry and the open count released.
 */
class ClientSink implements AnswerSink {
  private status = 502;
  private bytes = 0;
  private counting = true;
  private chunked = false;
  private over = false;

  constructor(
    private readonly conn: FastConnection,
    private readonly log: LogState,
    private readonly release: () => void,
  ) {}

  head(h: AnswerHead, first: Buffer | null): boolean {
    this.status = h.status;
    const s = this.conn.client;
    let framing = '';
    if (h.framing.kind === 'length') {
      framing = `content-length: ${h.framing.length}\r\n`;
      if (this.log.method !== 'HEAD') {
        this.bytes = h.framing.length;
        this.counting = false;
      }
    } else if (h.framing.kind === 'none') {
      if (h.length !== null && h.status !== 204) framing = `content-length: ${h.length}\r\n`;
    } else {
      framing = 'transfer-encoding: chunked\r\n';
      this.chunked = true;
    }
    const head = this.conn.headOf(this.log, h.status, h.pass + framing, h.hasDate);
    // A small answer that came whole (the usual one): head and body in one write, one buffer.
    if (first && first.length <= ONE_WRITE_MAX) {
      if (s.destroyed) return true;
      if (this.counting) this.bytes += first.length;
      const out = Buffer.allocUnsafe(head.length + first.length);
      out.write(head, 0, 'latin1');
      first.copy(out, head.length);
      return s.write(out);
    }
    s.cork();
    s.write(head, 'latin1');
    process.nextTick(() => s.uncork());
    return first ? this.data(first) : true;
  }

  data(chunk: Buffer): boolean {
    const s = this.conn.client;
    if (s.destroyed) return true;
    if (this.counting) this.bytes += chunk.length;
    if (!this.chunked) return s.write(chunk);
    s.cork();
    s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    s.write(chunk);
    const ok = s.write('\r\n', 'latin1');
    process.nextTick(() => s.uncork());
    return ok;
  }

  end(): void {
    if (this.chunked && !this.conn.client.destroyed) this.conn.client.write('0\r\n\r\n', 'latin1');
    this.finish();
    this.conn.done();
  }

  fail(err: Error, started: boolean): void {
    this.conn.logger.debug({ err: err.message, projectId: this.log.target.projectId }, 'edge upstream error');
    if (started) {
      this.finish();
      this.conn.client.destroy();
      return;
    }
    this.over = true;
    this.release();
    this.conn.answer(this.log, 502, 'Bad gateway', 'The app closed the connection before answering.');
  }

  /** The client closed the connection before the answer was written. */
  clientGone(): void {
    this.finish();
  }

  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.release();
    this.conn.record(this.log, this.status, this.bytes);
  }
}
