import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import { AddressCounter } from '../lib/address-counter.js';
import type { Socket } from 'node:net';
import { normalizeIp } from '../lib/cidr.js';
import { newRequestId } from '../lib/ids.js';

/**
 * Slow clients and connection floods on the API (issue 15, point 5; contract section 17). Node's own
 * `headersTimeout` ends requests whose headers do not arrive in time; this guard adds what Node
 * cannot do per request:
 *
 * - a body that stops arriving for `bodyIdleTimeoutMs` (uploads: `uploadIdleTimeoutMs`) ends the
 *   connection; a server that is not reading (its buffer holds unread bytes) does not count as idle;
 * - a non-upload request whose body has not fully arrived `requestTimeoutMs` after its headers ends
 *   the connection (uploads have no whole-request cap beyond the idle one);
 * - at most `maxConnectionsPerAddress` open connections per client address: the next one is
 *   answered 503 with the JSON error envelope and closed before the HTTP parser sees it. Trusted
 *   proxies (`exempt`) are not counted: every client behind them shares their address.
 *
 * One timer walks the requests whose body is still arriving; nothing runs per chunk.
 */
export interface ConnectionGuardOptions {
  bodyIdleTimeoutMs: number;
  requestTimeoutMs: number;
  uploadIdleTimeoutMs: number;
  maxConnectionsPerAddress: number;
  /** Addresses not counted against the cap (trusted proxies). */
  exempt?: (address: string) => boolean;
  log?: { info(obj: Record<string, unknown>, msg: string): void };
}

const kUpload = Symbol('berth.upload');

/** Marks a request as an upload (longer idle limit, no whole-request cap). Call before its body is read. */
export function markUpload(req: IncomingMessage): void {
  (req as unknown as Record<symbol, boolean>)[kUpload] = true;
}

interface InFlight {
  req: IncomingMessage;
  start: number;
  lastBytes: number;
  lastAt: number;
}

/**
 * A raw HTTP/1.1 answer with the JSON error envelope and a new request id, for a socket the HTTP
 * parser does not (or no longer) answer; `headers` are extra header lines (each ending in CRLF).
 */
function rawErrorAnswer(status: number, code: string, message: string, headers = ''): string {
  const requestId = newRequestId();
  const body = JSON.stringify({ error: { code, message, requestId } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    headers +
    `x-request-id: ${requestId}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/** The raw answer to a connection over the per-address cap (then the socket is closed). */
function overCapAnswer(max: number): string {
  return rawErrorAnswer(503, 'RATE_LIMITED', `too many open connections from your address (at most ${max}); close some and retry`, 'retry-after: 1\r\n');
}

/**
 * Ends a socket after a last answer without losing it to a TCP reset: half-close, discard what
 * still arrives, destroy when the peer closes or after `lingerMs`.
 */
export function endSocket(socket: Socket, data?: string, lingerMs = 1000): void {
  if (socket.destroyed) return;
  const t = setTimeout(() => socket.destroy(), lingerMs);
  t.unref();
  socket.once('close', () => clearTimeout(t));
  socket.once('end', () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.resume();
  if (data !== undefined && socket.writable) socket.end(data);
  else socket.end();
}

export class ConnectionGuard {
  private readonly perAddress = new AddressCounter();
  private readonly inFlight = new Set<InFlight>();
  private readonly timer: NodeJS.Timeout;
  /** Connections refused over the cap, and requests ended for a slow body (for logs and tests). */
  readonly stats = { refused: 0, slowBodies: 0 };

  constructor(
    server: Server,
    private readonly opts: ConnectionGuardOptions,
  ) {
    // The HTTP server's own `connection` listener runs only for sockets under the cap.
    const originals = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      if (!this.admit(socket)) return;
      for (const l of originals) l.call(server, socket);
    });
    server.on('request', (req: IncomingMessage) => this.track(req));
    const tick = Math.max(50, Math.min(1000, Math.floor(Math.min(opts.bodyIdleTimeoutMs, opts.uploadIdleTimeoutMs, opts.requestTimeoutMs) / 10)));
    this.timer = setInterval(() => this.sweep(Date.now()), tick);
    this.timer.unref();
  }

  /** Open connections of one address (tests and diagnostics). */
  connectionsOf(address: string): number {
    return this.perAddress.of(normalizeIp(address));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private admit(socket: Socket): boolean {
    const address = normalizeIp(socket.remoteAddress ?? '');
    if (!address || this.opts.exempt?.(address)) return true;
    const n = this.perAddress.of(address) + 1;
    if (n > this.opts.maxConnectionsPerAddress) {
      this.stats.refused++;
      // Log the first refusal of a burst only.
      if (this.stats.refused % 100 === 1) this.opts.log?.info({ address, open: n - 1 }, 'connection refused: too many open connections from one address');
      endSocket(socket, overCapAnswer(this.opts.maxConnectionsPerAddress));
      return false;
    }
    this.perAddress.add(address, socket);
    return true;
  }

  private track(req: IncomingMessage): void {
    // No Content-Length and no Transfer-Encoding: no body (RFC 9112 6.3), nothing that can dribble.
    if (req.complete || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) return;
    const now = Date.now();
    const entry: InFlight = { req, start: now, lastBytes: req.socket?.bytesRead ?? 0, lastAt: now };
    this.inFlight.add(entry);
    const done = () => this.inFlight.delete(entry);
    // Not on the response's end: a body still dribbling after the answer (Node then reads it to
    // reach the next request) is held to the same limits.
    req.once('end', done);
    req.once('close', done);
  }

  private sweep(now: number): void {
    for (const e of this.inFlight) {
      const { req } = e;
      const socket = req.socket;
      if (req.complete || !socket || socket.destroyed) {
        this.inFlight.delete(e);
        continue;
      }
      const bytes = socket.bytesRead;
      // Bytes arrived, or the server holds unread ones (it is not reading: not the client's fault).
      if (bytes !== e.lastBytes || req.readableLength > 0) {
        e.lastBytes = bytes;
        e.lastAt = now;
      }
      const upload = (req as unknown as Record<symbol, boolean>)[kUpload] === true;
      const idle = now - e.lastAt >= (upload ? this.opts.uploadIdleTimeoutMs : this.opts.bodyIdleTimeoutMs);
      const whole = !upload && now - e.start >= this.opts.requestTimeoutMs;
      if (idle || whole) {
        this.inFlight.delete(e);
        this.stats.slowBodies++;
        this.opts.log?.info({ method: req.method, url: req.url?.split('?')[0], reason: idle ? 'body idle' : 'request too long' }, 'request body too slow; connection closed');
        socket.destroy();
      }
    }
  }
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (a malformed Content-Length, a
 * broken request line, headers that did not arrive in time) is answered with the JSON error
 * envelope and a request id, like every other error, then the connection is closed.
 */
export function clientErrorAnswer(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // An answer already under way on this socket: raw bytes would corrupt it.
  const inProgress = (socket as unknown as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (inProgress?.headersSent) {
    socket.destroy();
    return;
  }
  let status = 400;
  let code = 'VALIDATION_FAILED';
  let message = 'malformed HTTP request';
  switch (err.code) {
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      message = 'malformed Content-Length header: send one non-negative whole number, and not together with Transfer-Encoding';
      break;
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      message = 'malformed Transfer-Encoding or chunked body';
      break;
    case 'HPE_HEADER_OVERFLOW':
      status = 431;
      code = 'PAYLOAD_TOO_LARGE';
      message = 'request headers are too large';
      break;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      status = 408;
      message = 'the request did not arrive in time';
      break;
    default:
      break;
  }
  endSocket(socket, rawErrorAnswer(status, code, message));
}
