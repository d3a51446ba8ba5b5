import http from 'node:http';
import { AddressCounter } from '../lib/address-counter.js';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher, Pool } from 'undici';
import { loadUndici, undiciIfLoaded } from '../lib/undici.js';
import { normalizeIp } from '../lib/cidr.js';
import { clientAddress } from '../lib/trusted-proxies.js';
import { edgeLimitsFromEnv, type EdgeLimits } from './limits.js';
import { normalizeTarget, pathOfTarget } from './normalize.js';
import type { RequestEntry, RequestLog } from './requests.js';
import { evaluateRules, RateCounter, type CompiledRule } from './rules.js';

/** What the edge knows about the project a host names. */
export interface EdgeTarget {
  projectId: string;
  /** Set when the project cannot serve: disabled, failed or not deployed (503). */
  unavailable: string | null;
  rules: CompiledRule[];
}

export interface EdgeBackend {
  /** The project a host (lowercase, no port) names, or null (404). */
  lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null>;
  /** The address of the project's running app; wakes a sleeping app (held until healthy). Throws when it cannot serve. */
  upstream(projectId: string): EdgeUpstream | Promise<EdgeUpstream>;
}

/** Where a project's app is reached (its sandbox's address or loopback); `key` is `host:port`. */
export interface EdgeUpstream {
  host: string;
  port: number;
  key: string;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
/** Client headers that name the client: the edge writes its own (`forwarded` it drops). */
const CLIENT_ADDRESS_HEADERS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded'];
/** Request headers not passed on to the app. */
const REQUEST_DROP = new Set([...HOP_BY_HOP, 'expect', ...CLIENT_ADDRESS_HEADERS]);
/** Request headers not passed on with an upgrade (which keeps its `Connection` and `Upgrade`). */
const UPGRADE_DROP = new Set(['keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'expect', ...CLIENT_ADDRESS_HEADERS]);

/** On a socket: the address its connection is counted under, and whether it was over the cap. */
const COUNTED = Symbol('edgeCountedAddress');
const OVER_CAP = Symbol('edgeOverCap');
type CountedSocket = Duplex & { [COUNTED]?: string; [OVER_CAP]?: boolean; remoteAddress?: string };

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function page(title: string, text: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}p{color:#555}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p><small>Berth edge</small></p></body></html>\n`;
}

/** `Host` header -> lowercase hostname without port or trailing dot; '' when absent or malformed. */
export function hostOf(header: string | undefined): string {
  if (!header || header.length > 300) return '';
  let h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : '';
  }
  const colon = h.indexOf(':');
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return /^[a-z0-9.-]+$/.test(h) ? h : '';
}

/** The path of a request for the request log (no query string, at most 2048 characters). */
function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  const p = q >= 0 ? u.slice(0, q) : u;
  return p.length > 2048 ? p.slice(0, 2048) : p || '/';
}

const BAD_PATH = 'The request path is not valid here: an encoded "/" or "\\", a NUL, an invalid percent-escape or a path that does not normalise.';

/** Does a `Connection` header ask to close? */
function asksClose(connection: string | undefined): boolean {
  return !!connection && /(?:^|,)\s*close\s*(?:,|$)/i.test(connection);
}

/**
 * The edge proxy: a node:http server that routes by `Host` to the project's running app, streams
 * bodies both ways, passes WebSocket upgrades through, adds `X-Forwarded-For/-Proto/-Host`, enforces
 * the project's route rules, and records every request.
 */
export class EdgeServer {
  readonly server: http.Server;
  /** One keep-alive connection pool per app address; pools unused for a minute are closed. */
  private readonly pools = new Map<string, { pool: Pool; used: number }>();
  private readonly poolSweep: NodeJS.Timeout;
  private readonly counter = new RateCounter();
  private readonly upgrades = new Set<Duplex>();
  /** Open proxied requests and WebSocket connections per project (an app with any is not idle). */
  private readonly active = new Map<string, number>();
  /** Open client connections per (socket) address, for the per-address cap. */
  private readonly connections = new AddressCounter();
  readonly limits: EdgeLimits;

  /** How many requests and WebSocket connections of the project are open right now. */
  openConnections(projectId: string): number {
    return this.active.get(projectId) ?? 0;
  }

  constructor(
    private readonly backend: EdgeBackend,
    private readonly requests: RequestLog,
    private readonly log: Logger,
    limits?: Partial<EdgeLimits>,
  ) {
    this.limits = { ...edgeLimitsFromEnv(), ...limits };
    const { headersTimeoutMs, requestTimeoutMs } = this.limits;
    this.server = http.createServer(
      {
        keepAliveTimeout: 10000,
        headersTimeout: headersTimeoutMs,
        requestTimeout: requestTimeoutMs,
        // How often node:http looks for connections over those timeouts (its default is 30 s).
        connectionsCheckingInterval: Math.max(50, Math.min(5000, Math.round(headersTimeoutMs / 4))),
      },
      (req, res) => void this.handle(req, res),
    );
    this.server.on('connection', (socket: net.Socket) => this.countConnection(socket));
    this.server.on('upgrade', (req, socket, head) => void this.handleUpgrade(req, socket, head));
    this.poolSweep = setInterval(() => {
      const now = Date.now();
      for (const [key, p] of this.pools) {
        if (now - p.used > 60000) {
          this.pools.delete(key);
          void p.pool.close().catch(() => {});
        }
      }
    }, 30000);
    this.poolSweep.unref();
    // A malformed request is a 400; headers or a whole request too slow to arrive (the limits above) a 408.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: http.ServerResponse | null }) => {
      if (!socket.writable || socket._httpMessage?.headersSent) return void socket.destroy();
      const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      socket.end(`HTTP/1.1 ${timeout ? '408 Request Timeout' : '400 Bad Request'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    });
  }

  /**
   * Counts a new connection under its socket address (trusted proxies are not capped: they carry many
   * clients). One over the cap is marked, and its first request is answered 503 and the connection closed.
   * A socket handed back to the HTTP server after an upgrade that was not accepted is already counted.
   */
  private countConnection(socket: CountedSocket): void {
    if (socket[COUNTED] !== undefined) return;
    const addr = normalizeIp(socket.remoteAddress ?? '');
    const trusted = this.limits.trustedProxies;
    if (trusted.size > 0 && trusted.trusts(addr)) {
      socket[COUNTED] = '';
      return;
    }
    socket[COUNTED] = addr;
    if (this.connections.add(addr, socket) > this.limits.maxConnectionsPerAddress) socket[OVER_CAP] = true;
  }

  /** Open client connections of a socket address (tests and diagnostics). */
  connectionsOf(address: string): number {
    return this.connections.of(normalizeIp(address));
  }

  /** The X-Forwarded-Proto sent on: `https` only when a trusted proxy says so. */
  private protoOf(req: http.IncomingMessage): string {
    const trusted = this.limits.trustedProxies;
    return trusted.size > 0 && req.headers['x-forwarded-proto'] === 'https' && trusted.trusts(req.socket.remoteAddress) ? 'https' : 'http';
  }

  listen(host: string, port: number): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const a = this.server.address();
        resolve({ host, port: typeof a === 'object' && a ? a.port : port });
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.upgrades) s.destroy();
    this.upgrades.clear();
    await new Promise<void>((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      setTimeout(() => this.server.closeAllConnections(), 2000).unref();
    });
    clearInterval(this.poolSweep);
    await Promise.all([...this.pools.values()].map((p) => p.pool.destroy().catch(() => {})));
    this.pools.clear();
  }

  private pool(up: EdgeUpstream, undici: typeof import('undici')): Pool {
    let p = this.pools.get(up.key);
    if (!p) {
      p = { pool: new undici.Pool(`http://${up.key}`, { connections: 256, pipelining: 1, keepAliveTimeout: 4000, headersTimeout: 0, bodyTimeout: 0 }), used: Date.now() };
      this.pools.set(up.key, p);
    } else p.used = Date.now();
    return p.pool;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    // Over the per-address connection cap: one 503, then the connection closes.
    if ((req.socket as CountedSocket)[OVER_CAP]) {
      const body = page('Too many connections', 'Too many open connections from your address; try again shortly.');
      res.shouldKeepAlive = false;
      res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', 'retry-after': '5', connection: 'close' });
      res.end(body);
      return;
    }
    const ip = clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], this.limits.trustedProxies);
    // The normalised request-target (path and query) the app is sent, and its path that rules see.
    let forwardTo: string | null = null;
    let path: string | null = null;
    let projectId: string | null = null;
    let bytes = 0;
    const finish = (status: number) => {
      if (!projectId) return;
      const p = path === null ? pathOf(req.url) : path.length > 2048 ? path.slice(0, 2048) : path;
      const entry: RequestEntry = { ts: new Date().toISOString(), method: req.method ?? 'GET', path: p, status, durationMs: Math.round((performance.now() - started) * 10) / 10, ip, bytes };
      this.requests.record(projectId, entry);
    };
    const answer = (status: number, title: string, text: string, headers: Record<string, string> = {}) => {
      const body = page(title, text);
      bytes = Buffer.byteLength(body);
      if (!res.headersSent) {
        res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(bytes), 'cache-control': 'no-store', ...headers });
      }
      res.end(body);
      finish(status);
    };
    try {
      const host = hostOf(req.headers.host);
      const found = host ? this.backend.lookup(host) : null;
      const target = found instanceof Promise ? await found : found;
      if (!target) return answer(404, 'No project here', host ? `No project is served at ${host}. Check the domain, or connect it to a project.` : 'The request named no host.');
      projectId = target.projectId;
      if (target.unavailable) return answer(503, 'Project unavailable', target.unavailable, { 'retry-after': '30' });
      forwardTo = normalizeTarget(req.url ?? '/');
      if (forwardTo === null) return answer(400, 'Bad request', BAD_PATH);
      path = pathOfTarget(forwardTo);
      const verdict = evaluateRules(target.rules, path, ip, this.counter);
      if (verdict?.status === 403) return answer(403, 'Forbidden', 'Your address may not access this path.');
      if (verdict?.status === 429) return answer(429, 'Too many requests', `Slow down: try again in ${verdict.retryAfter} s.`, { 'retry-after': String(verdict.retryAfter) });
      let upstream: EdgeUpstream;
      try {
        const up = this.backend.upstream(target.projectId);
        upstream = 'then' in up ? await up : up;
      } catch (e) {
        return answer(503, 'Project unavailable', (e as Error).message || 'The app is not running.', { 'retry-after': '10' });
      }
      // undici is loaded on the first proxied request (a server that proxies nothing never loads it).
      const undici = undiciIfLoaded() ?? (await loadUndici());
      const headers: Record<string, string | string[]> = {};
      for (const k in req.headers) {
        const v = req.headers[k];
        if (v !== undefined && !REQUEST_DROP.has(k)) headers[k] = v;
      }
      headers['x-forwarded-for'] = ip;
      headers['x-forwarded-proto'] = this.protoOf(req);
      headers['x-forwarded-host'] = req.headers.host ?? host;
      headers['x-real-ip'] = ip;
      // A client that goes away aborts the upstream request: the response itself is the abort
      // signal undici listens to (an EventEmitter; cheaper than an AbortController per request).
      res.once('close', () => {
        if (!res.writableFinished) res.emit('abort');
      });
      // Count the body bytes the app sent (for the request log): its Content-Length, else what passes.
      const write = res.write;
      const end = res.end;
      const countBytes = () => {
        res.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
          if (chunk) bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Buffer).length;
          return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
        } as typeof res.write;
        res.end = function (this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
          if (chunk && typeof chunk !== 'function') bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Buffer).length;
          return (end as (...a: unknown[]) => http.ServerResponse).call(this, chunk, ...rest);
        } as typeof res.end;
      };
      const pid = target.projectId;
      this.active.set(pid, (this.active.get(pid) ?? 0) + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const n = (this.active.get(pid) ?? 1) - 1;
        if (n <= 0) this.active.delete(pid);
        else this.active.set(pid, n);
      };
      res.once('close', release);
      let status = 502;
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && (req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined);
      if (hasBody) this.watchBody(req, res);
      this.pool(upstream, undici).stream(
        { path: forwardTo, method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: hasBody ? req : null, signal: res as unknown as AbortSignal },
        ({ statusCode, headers: upHeaders }) => {
          status = statusCode;
          const out: http.OutgoingHttpHeaders = {};
          for (const k in upHeaders) if (!HOP_BY_HOP.has(k)) out[k] = upHeaders[k];
          const len = upHeaders['content-length'];
          if (req.method !== 'HEAD' && typeof len === 'string' && /^\d+$/.test(len)) bytes = Number(len);
          else if (req.method !== 'HEAD') countBytes();
          res.writeHead(statusCode, out);
          return res;
        },
        (err) => {
          if (err) {
            this.log.debug({ err: err.message, projectId }, 'edge upstream error');
            if (!res.headersSent) {
              res.write = write;
              res.end = end;
              return answer(502, 'Bad gateway', 'The app closed the connection before answering.');
            }
            res.destroy();
          }
          finish(status);
        },
      );
    } catch (e) {
      this.log.error({ err: e }, 'edge request failed');
      answer(500, 'Edge error', 'The edge could not handle this request.');
    }
  }

  /**
   * A request body idle longer than the limit cuts the connection. The socket's idle timer runs only
   * while the body arrives: once it is in, a slow app may take its time to answer.
   */
  private watchBody(req: http.IncomingMessage, res: http.ServerResponse): void {
    const socket = req.socket;
    req.setTimeout(this.limits.bodyIdleMs, () => socket.destroy());
    req.once('end', () => {
      if (!res.writableFinished) socket.setTimeout(0);
    });
  }

  /**
   * A request with `Upgrade`: node:http hands over the raw socket. The request is checked like any
   * other (path, rules, bans, rate limits, log), then sent to the app on a connection of its own. Only
   * a `101` answer joins the two sockets into a tunnel; any other answer is an ordinary response: it is
   * written to the client, and the socket goes back to the HTTP server, so every later request on it
   * is checked and logged like the first (docs/edge.md).
   */
  private async handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const started = performance.now();
    const ip = clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], this.limits.trustedProxies);
    let path = pathOf(req.url);
    const onError = () => socket.destroy();
    socket.on('error', onError);
    const record = (projectId: string, status: number, bytes: number) =>
      this.requests.record(projectId, { ts: new Date().toISOString(), method: req.method ?? 'GET', path, status, durationMs: Math.round((performance.now() - started) * 10) / 10, ip, bytes });
    const refuse = (status: number, text: string, projectId?: string) => {
      if (socket.writable) socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
      if (projectId) record(projectId, status, Buffer.byteLength(text));
    };
    if ((socket as CountedSocket)[OVER_CAP]) return refuse(503, 'Too many open connections from your address; try again shortly.');
    try {
      const host = hostOf(req.headers.host);
      const target = host ? await this.backend.lookup(host) : null;
      if (!target) return refuse(404, 'no project here');
      if (target.unavailable) return refuse(503, target.unavailable, target.projectId);
      const forwardTo = normalizeTarget(req.url ?? '/');
      if (forwardTo === null) return refuse(400, BAD_PATH, target.projectId);
      const fullPath = pathOfTarget(forwardTo);
      path = fullPath.length > 2048 ? fullPath.slice(0, 2048) : fullPath;
      const verdict = evaluateRules(target.rules, fullPath, ip, this.counter);
      if (verdict?.status === 403) return refuse(403, 'forbidden', target.projectId);
      if (verdict?.status === 429) return refuse(429, 'too many requests', target.projectId);
      // The bytes after an upgrade request's head are the next protocol's (or the next request's):
      // a body could not be told from them, so an upgrade request carries none.
      const cl = req.headers['content-length'];
      if (req.headers['transfer-encoding'] !== undefined || (cl !== undefined && cl !== '0')) return refuse(400, 'an upgrade request cannot carry a body', target.projectId);
      let upstream: EdgeUpstream;
      try {
        upstream = await this.backend.upstream(target.projectId);
      } catch (e) {
        return refuse(503, (e as Error).message, target.projectId);
      }
      const headers: string[] = [];
      const raw = req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) if (!UPGRADE_DROP.has(raw[i]!.toLowerCase())) headers.push(raw[i]!, raw[i + 1]!);
      headers.push('X-Forwarded-For', ip, 'X-Forwarded-Proto', this.protoOf(req), 'X-Forwarded-Host', req.headers.host ?? host, 'X-Real-IP', ip);

      const pid = target.projectId;
      this.upgrades.add(socket);
      this.active.set(pid, (this.active.get(pid) ?? 0) + 1);
      let released = false;
      const release = () => {
        this.upgrades.delete(socket);
        if (released) return;
        released = true;
        const n = (this.active.get(pid) ?? 1) - 1;
        if (n <= 0) this.active.delete(pid);
        else this.active.set(pid, n);
      };
      let answered = false;
      const upReq = http.request({ host: upstream.host, port: upstream.port, method: req.method, path: forwardTo, headers, agent: false, setHost: false });
      const timer = setTimeout(() => upReq.destroy(new Error('the app did not answer in time')), this.limits.requestTimeoutMs);
      timer.unref();
      const onClientGone = () => {
        release();
        upReq.destroy();
      };
      socket.once('close', onClientGone);
      upReq.on('error', (err) => {
        clearTimeout(timer);
        this.log.debug({ err: err.message, projectId: pid }, 'edge upgrade upstream error');
        release();
        if (answered || socket.destroyed) return void socket.destroy();
        refuse(502, 'the app closed the connection before answering', pid);
      });

      // 101: the tunnel. Either side ending closes both (no half-open WebSockets).
      upReq.once('upgrade', (res: http.IncomingMessage, up: net.Socket, upHead: Buffer) => {
        answered = true;
        clearTimeout(timer);
        socket.removeListener('close', onClientGone);
        const cleanup = () => {
          release();
          up.destroy();
          socket.destroy();
        };
        up.on('error', cleanup);
        up.on('close', cleanup);
        up.on('end', cleanup);
        socket.on('close', cleanup);
        socket.on('end', cleanup);
        if (socket.destroyed) return cleanup();
        let out = `HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}\r\n`;
        const rh = res.rawHeaders;
        for (let i = 0; i < rh.length; i += 2) out += `${rh[i]}: ${rh[i + 1]}\r\n`;
        socket.write(out + '\r\n');
        if (upHead.length) socket.write(upHead);
        if (head.length) up.write(head);
        socket.pipe(up);
        up.pipe(socket);
        record(pid, 101, 0);
      });

      // Anything else: an ordinary response, and the connection stays HTTP.
      upReq.once('response', (res: http.IncomingMessage) => {
        answered = true;
        clearTimeout(timer);
        this.relayResponse(req, socket, res, (status, bytes, reuse) => {
          record(pid, status, bytes);
          release();
          socket.removeListener('close', onClientGone);
          socket.removeListener('error', onError);
          if (!reuse || socket.destroyed) return void socket.end();
          // Back to the HTTP server: the bytes read after the upgrade request's head come first.
          if (head.length) socket.unshift(head);
          this.server.emit('connection', socket);
        });
      });
      upReq.end();
    } catch (e) {
      this.log.error({ err: e }, 'edge upgrade failed');
      refuse(500, 'edge error');
    }
  }

  /**
   * Writes an app's non-101 answer to an upgrade request on the raw client socket: its status and
   * end-to-end headers, the body framed by its Content-Length or else chunked (or, when the connection
   * closes after it, by the close). `done` gets the status, the body bytes and whether the connection
   * can carry another request.
   */
  private relayResponse(req: http.IncomingMessage, socket: Duplex, res: http.IncomingMessage, done: (status: number, bytes: number, reuse: boolean) => void): void {
    const status = res.statusCode ?? 502;
    const noBody = req.method === 'HEAD' || status === 204 || status === 304 || status < 200;
    let len: string | undefined;
    let out = `HTTP/1.1 ${status} ${res.statusMessage ?? ''}\r\n`;
    const rh = res.rawHeaders;
    for (let i = 0; i < rh.length; i += 2) {
      const k = rh[i]!.toLowerCase();
      if (k === 'content-length') len = rh[i + 1];
      else if (!HOP_BY_HOP.has(k)) out += `${rh[i]}: ${rh[i + 1]}\r\n`;
    }
    const keepAlive = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && !asksClose(req.headers.connection) && this.server.listening;
    const validLen = len !== undefined && /^\d+$/.test(len);
    let chunked = false;
    if (noBody) {
      if (validLen && req.method === 'HEAD') out += `Content-Length: ${len}\r\n`;
    } else if (validLen) out += `Content-Length: ${len}\r\n`;
    else if (keepAlive) {
      chunked = true;
      out += 'Transfer-Encoding: chunked\r\n';
    }
    const reuse = keepAlive && (noBody || validLen || chunked);
    socket.write(out + (reuse ? '\r\n' : 'Connection: close\r\n\r\n'));
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      let ok: boolean;
      if (chunked) {
        socket.cork();
        socket.write(chunk.length.toString(16) + '\r\n');
        socket.write(chunk);
        ok = socket.write('\r\n');
        socket.uncork();
      } else ok = socket.write(chunk);
      if (!ok) {
        res.pause();
        socket.once('drain', () => res.resume());
      }
    });
    res.once('end', () => {
      if (chunked) socket.write('0\r\n\r\n');
      done(status, bytes, reuse);
    });
    res.once('close', () => {
      if (!res.complete) socket.destroy();
    });
  }
}
