import http from 'node:http';
import { AddressCounter } from '../lib/address-counter.js';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { loadUndici, undiciIfLoaded } from '../lib/undici.js';
import { normalizeIp } from '../lib/cidr.js';
import { clientAddress } from '../lib/trusted-proxies.js';
import type { EdgeBackend, EdgeUpstream } from './backend.js';
import { countConnection, isOverCap } from './connection-cap.js';
import { BAD_PATH, OVER_CAP, page } from './error-page.js';
import { forwardToPeer, readHop } from './forward.js';
import { edgeLimitsFromEnv, type EdgeLimits } from './limits.js';
import { normalizeTarget, pathOfTarget } from './normalize.js';
import { OpenRequests } from './open-requests.js';
import { isoNow } from '../lib/iso-now.js';
import type { RequestEntry, RequestSink } from './requests.js';
import { ACME_CHALLENGE_PREFIX, REQUEST_DROP, acmeChallengeToken, forwardedProto, hostHeader, hostOf, httpsLocation, isSecure, logPath, pathOf } from './request-head.js';
import { evaluateRules, RateCounter } from './rules.js';
import { serveStatic } from './static-site.js';
import { handleUpgrade, type UpgradeContext } from './upgrade.js';
import { UpstreamPools } from './upstream-pools.js';
import { FastConnection, type FastContext } from './fast/connection.js';
import { FastStreams } from './fast/h2.js';
import { RawPools } from './fast/upstream.js';
import { UpstreamResponse } from './upstream-response.js';

export type { EdgeBackend, EdgeTarget, EdgeUpstream } from './backend.js';
export { hostOf } from './request-head.js';

/**
 * The edge proxy: a node:http server that routes by `Host` to the project's running app, streams
 * bodies both ways, passes WebSocket upgrades through, adds `X-Forwarded-For/-Proto/-Host`, enforces
 * the project's route rules, and records every request. A static site's files it serves itself
 * (src/edge/static-site.ts). On plain HTTP it answers ACME HTTP-01 challenges and redirects projects
 * with `httpsRedirect` to `https://`.
 *
 * The TLS listener (src/edge/https.ts) hands its HTTP/1.1 connections to this same `server` and its
 * HTTP/2 streams to `fastStreams` (src/edge/fast/h2.ts), which leaves the rest to `handleRequest`:
 * the same decisions for all three (see there).
 */
export class EdgeServer {
  readonly server: http.Server;
  private readonly pools = new UpstreamPools();
  /** The fast path's connections to the apps, and its client connections (src/edge/fast/). */
  private readonly rawPools = new RawPools();
  private readonly fast = new Set<FastConnection>();
  /** The HTTP/2 fast path (src/edge/fast/h2.ts) the TLS listener puts in front of node:http2's compatibility layer; null when the fast path is off. */
  readonly fastStreams: FastStreams | null;
  private readonly counter = new RateCounter();
  private readonly upgrades = new Set<Duplex>();
  private readonly open: OpenRequests;
  /** Open client connections per (socket) address, for the per-address cap. */
  private readonly connections = new AddressCounter();
  readonly limits: EdgeLimits;

  /** How many requests and WebSocket connections of the project are open right now. */
  openConnections(projectId: string): number {
    return this.open.of(projectId);
  }

  constructor(
    private readonly backend: EdgeBackend,
    private readonly requests: RequestSink,
    private readonly log: Logger,
    limits?: Partial<EdgeLimits>,
    /** Told when an app's open requests go from none to some and back (the threaded edge, src/edge/thread/). */
    onOpenChange?: (projectId: string, open: boolean) => void,
  ) {
    this.open = new OpenRequests(onOpenChange);
    this.limits = limits && isWhole(limits) ? limits : { ...edgeLimitsFromEnv(), ...limits };
    const { headersTimeoutMs, requestTimeoutMs } = this.limits;
    this.server = http.createServer(
      {
        keepAliveTimeout: 10000,
        headersTimeout: headersTimeoutMs,
        requestTimeout: requestTimeoutMs,
        // How often node:http looks for connections over those timeouts (its default is 30 s).
        connectionsCheckingInterval: Math.max(50, Math.min(5000, Math.round(headersTimeoutMs / 4))),
      },
      (req, res) => void this.handleRequest(req, res),
    );
    this.fastStreams = this.limits.fastPath ? new FastStreams({ backend, requests, log, limits: this.limits, counter: this.counter, open: this.open, pools: this.rawPools }) : null;
    if (this.limits.fastPath) this.takeConnections();
    this.server.on('connection', (socket: net.Socket) => countConnection(socket, this.connections, this.limits));
    const upgrade: UpgradeContext = { server: this.server, backend, requests, log, limits: this.limits, counter: this.counter, upgrades: this.upgrades, open: this.open };
    this.server.on('upgrade', (req, socket, head) => void handleUpgrade(upgrade, req, socket, head));
    // A malformed request is a 400; headers or a whole request too slow to arrive (the limits above) a 408.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: http.ServerResponse | null }) => {
      if (!socket.writable || socket._httpMessage?.headersSent) return void socket.destroy();
      const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      socket.end(`HTTP/1.1 ${timeout ? '408 Request Timeout' : '400 Bad Request'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    });
  }

  /**
   * Puts the fast path (src/edge/fast/) in front of node:http's own connection handling: each new
   * connection's requests go there first, and a connection it hands back is node:http's from then on.
   * node:http registers that handling as its server's one `connection` listener; if a Node version
   * ever does otherwise, the fast path stays off.
   */
  private takeConnections(): void {
    const own = this.server.listeners('connection');
    if (own.length !== 1) return void this.log.warn('edge: node:http has an unexpected connection handler; the fast path is off');
    const nodeListener = own[0] as (socket: net.Socket) => void;
    this.server.removeListener('connection', nodeListener);
    const ctx: FastContext = {
      backend: this.backend,
      requests: this.requests,
      log: this.log,
      limits: this.limits,
      counter: this.counter,
      open: this.open,
      pools: this.rawPools,
      handOver: (socket) => nodeListener.call(this.server, socket),
    };
    this.server.on('connection', (socket: net.Socket) => void new FastConnection(ctx, socket, this.fast));
  }

  /**
   * Counts a client connection under its address for the per-address cap (the TLS listener's
   * connections, at the end of their handshake; counting one twice is a no-op).
   */
  countClient(socket: Duplex): void {
    countConnection(socket, this.connections, this.limits);
  }

  /** Open client connections of a socket address (tests and diagnostics). */
  connectionsOf(address: string): number {
    return this.connections.of(normalizeIp(address));
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
      for (const c of this.fast) c.close();
      setTimeout(() => {
        this.server.closeAllConnections();
        for (const c of this.fast) c.destroy();
      }, 2000).unref();
    });
    this.rawPools.close();
    await this.pools.close();
  }

  /**
   * One request, over plain HTTP/1.1, HTTP/1.1 over TLS, or HTTP/2 (node:http2's compatibility
   * request and response, passed as these types: this code keeps to what both offer, and writes no
   * connection-specific header when `req.httpVersionMajor` is 2).
   */
  // Long on purpose: the edge's hot path, its decisions in the order they apply (cap, ACME, host, peer, HTTPS,
  // rules, static, upstream), sharing the request's log state (answer, finish) that a split would pass around.
  async handleRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const h2 = req.httpVersionMajor === 2;
    // A request another instance's edge forwarded (src/edge/forward.ts): its client and scheme as that
    // edge saw them; the other instance's connections carry many clients, so they are not capped.
    const hop = readHop(req, this.backend.hopToken);
    // Over the per-address connection cap: one 503, then the connection closes.
    if (isOverCap(req.socket) && !hop) return refuseOverCap(req, res, h2);
    const secure = hop ? hop.secure : isSecure(req);
    // ACME HTTP-01 (plain HTTP, any host): before the host's project, its rules and any redirect.
    if (!secure && this.backend.acmeChallenge && req.url?.startsWith(ACME_CHALLENGE_PREFIX) && (req.method === 'GET' || req.method === 'HEAD')) {
      return this.answerChallenge(req, res);
    }
    const ip = hop ? hop.ip : clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], this.limits.trustedProxies);
    // The normalised request-target (path and query) the app is sent, and its path that rules see.
    let forwardTo: string | null = null;
    let path: string | null = null;
    let projectId: string | null = null;
    let bytes = 0;
    const finish = (status: number) => {
      if (!projectId) return;
      const p = path === null ? pathOf(req.url) : logPath(path);
      const entry: RequestEntry = { ts: isoNow(), method: req.method ?? 'GET', path: p, status, durationMs: Math.round((performance.now() - started) * 10) / 10, ip, bytes };
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
      const authority = hostHeader(req);
      const host = hostOf(authority);
      const found = host ? this.backend.lookup(host) : null;
      const target = found instanceof Promise ? await found : found;
      if (!target) return answer(404, 'No project here', host ? `No project is served at ${host}. Check the domain, or connect it to a project.` : 'The request named no host.');
      // Another live instance runs this app: its edge answers (and logs) the request. Static files are
      // served by any instance (they are in the shared data dir); a forwarded request is never forwarded again.
      const pid = target.projectId;
      const toPeer = async (peer: EdgeUpstream) => {
        const undici = undiciIfLoaded() ?? (await loadUndici());
        return forwardToPeer(req, res, peer, this.pools, undici, { token: this.backend.hopToken ?? '', ip, secure, authority }, (err) => this.log.debug({ err: err.message, projectId: pid }, 'edge: the instance running the app did not answer'));
      };
      const peer = hop || target.static ? null : (this.backend.peer?.(pid) ?? null);
      if (peer) return await toPeer(peer);
      projectId = target.projectId;
      // HTTP/2 has no upgrades and the edge offers no extended CONNECT: a CONNECT is refused.
      if (h2 && req.method === 'CONNECT') return answer(405, 'Method not allowed', 'The edge does not tunnel CONNECT requests.');
      if (!secure && target.httpsRedirect) {
        const to = normalizeTarget(req.url ?? '/');
        if (to === null) return answer(400, 'Bad request', BAD_PATH);
        const location = httpsLocation(host, this.backend.httpsPort?.() ?? null, to);
        return answer(308, 'Moved to HTTPS', `This site is served at ${location}.`, { location });
      }
      if (secure && target.hsts) res.setHeader('strict-transport-security', 'max-age=31536000');
      if (target.unavailable) return answer(503, 'Project unavailable', target.unavailable, { 'retry-after': '30' });
      forwardTo = normalizeTarget(req.url ?? '/');
      if (forwardTo === null) return answer(400, 'Bad request', BAD_PATH);
      path = pathOfTarget(forwardTo);
      const verdict = evaluateRules(target.rules, path, ip, this.counter);
      if (verdict?.status === 403) return answer(403, 'Forbidden', 'Your address may not access this path.');
      if (verdict?.status === 429) return answer(429, 'Too many requests', `Slow down: try again in ${verdict.retryAfter} s.`, { 'retry-after': String(verdict.retryAfter) });
      // A static site: the edge answers from its files (no app, no upstream).
      if (target.static) {
        res.once('close', this.open.open(target.projectId));
        return await serveStatic(req, res, target.static, forwardTo, (status, n, err) => {
          if (err) this.log.error({ err, projectId: pid }, 'edge static request failed');
          bytes = n;
          finish(status);
        });
      }
      let upstream: EdgeUpstream;
      try {
        const up = this.backend.upstream(target.projectId);
        upstream = 'then' in up ? await up : up;
      } catch (e) {
        // Several instances: the app turned out to run on another one (its lease moved since the check above).
        const moved = hop ? null : (this.backend.peer?.(target.projectId) ?? null);
        if (moved) {
          projectId = null;
          return await toPeer(moved);
        }
        return answer(503, 'Project unavailable', (e as Error).message || 'The app is not running.', { 'retry-after': '10' });
      }
      // undici is loaded on the first proxied request (a server that proxies nothing never loads it).
      const undici = undiciIfLoaded() ?? (await loadUndici());
      const headers = upstreamHeaders(req, authority, host, ip, hop ? (hop.secure ? 'https' : 'http') : forwardedProto(req, this.limits.trustedProxies));
      res.once('close', this.open.open(target.projectId));
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && (req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined);
      if (hasBody) this.watchBody(req, res, h2);
      const handler = new UpstreamResponse(res, req.method === 'HEAD', (status, n, err, headersSent) => {
        bytes = n;
        if (err) {
          this.log.debug({ err: err.message, projectId }, 'edge upstream error');
          if (!headersSent) return answer(502, 'Bad gateway', 'The app closed the connection before answering.');
          res.destroy();
        }
        finish(status);
      });
      this.pools.get(upstream, undici).dispatch({ path: forwardTo, method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: hasBody ? req : null }, handler);
    } catch (e) {
      this.log.error({ err: e }, 'edge request failed');
      answer(500, 'Edge error', 'The edge could not handle this request.');
    }
  }

  /** `GET /.well-known/acme-challenge/<token>`: the key authorization (text/plain), else 404. */
  private async answerChallenge(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const token = acmeChallengeToken(req.url);
    let body: string | null = null;
    try {
      body = token ? await this.backend.acmeChallenge!(token) : null;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'edge: could not read an ACME challenge');
    }
    const status = body === null ? 404 : 200;
    const text = body ?? 'No such ACME challenge.';
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  }

  /**
   * A request body idle longer than the limit cuts the connection. The socket's idle timer runs only
   * while the body arrives: once it is in, a slow app may take its time to answer.
   */
  private watchBody(req: http.IncomingMessage, res: http.ServerResponse, h2: boolean): void {
    if (h2) {
      // HTTP/2: the stream's own idle timer (the connection carries other streams).
      req.setTimeout(this.limits.bodyIdleMs, () => req.destroy());
      req.once('end', () => {
        if (!res.writableFinished) req.setTimeout(0);
      });
      return;
    }
    const socket = req.socket;
    req.setTimeout(this.limits.bodyIdleMs, () => socket.destroy());
    req.once('end', () => {
      if (!res.writableFinished) socket.setTimeout(0);
    });
  }
}

/** Limits given whole (the threaded edge's, resolved on the main thread) need no environment. */
function isWhole(l: Partial<EdgeLimits>): l is EdgeLimits {
  return l.headersTimeoutMs !== undefined && l.bodyIdleMs !== undefined && l.requestTimeoutMs !== undefined && l.maxConnectionsPerAddress !== undefined && l.trustedProxies !== undefined && l.fastPath !== undefined;
}

/** Over the per-address connection cap: one 503, then the connection closes. */
function refuseOverCap(req: http.IncomingMessage, res: http.ServerResponse, h2: boolean): void {
  const body = page('Too many connections', OVER_CAP);
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', 'retry-after': '5' };
  if (!h2) {
    res.shouldKeepAlive = false;
    headers.connection = 'close';
  }
  res.writeHead(503, headers);
  res.end(body);
  if (h2) (req as unknown as { stream: { session?: { close(): void } } }).stream.session?.close();
}

/** The request's headers as the app gets them: hop-by-hop and HTTP/2 pseudo-headers dropped, the client named. */
function upstreamHeaders(req: http.IncomingMessage, authority: string | undefined, host: string, ip: string, proto: string): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const k in req.headers) {
    const v = req.headers[k];
    if (v !== undefined && !REQUEST_DROP.has(k) && k.charCodeAt(0) !== 58 /* ':' HTTP/2 pseudo-headers */) headers[k] = v;
  }
  // HTTP/2 names the host in `:authority`; the app gets it as `Host`.
  if (headers.host === undefined && authority !== undefined) headers.host = authority;
  headers['x-forwarded-for'] = ip;
  headers['x-forwarded-proto'] = proto;
  headers['x-forwarded-host'] = authority ?? host;
  headers['x-real-ip'] = ip;
  return headers;
}
