import http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { clientAddress } from '../lib/trusted-proxies.js';
import type { EdgeBackend, EdgeUpstream } from './backend.js';
import { isOverCap } from './connection-cap.js';
import { BAD_PATH, OVER_CAP, page } from './error-page.js';
import { hopHeaders, readHop } from './forward.js';
import type { EdgeLimits } from './limits.js';
import { normalizeTarget, pathOfTarget } from './normalize.js';
import type { OpenRequests } from './open-requests.js';
import type { RequestSink } from './requests.js';
import { HOP_BY_HOP, UPGRADE_DROP, asksClose, forwardedProto, hostHeader, hostOf, httpsLocation, isSecure, logPath, pathOf } from './request-head.js';
import { evaluateRules, type RateCounter } from './rules.js';

/** What an upgrade request needs of the edge server that received it. */
export interface UpgradeContext {
  server: http.Server;
  backend: EdgeBackend;
  requests: RequestSink;
  log: Logger;
  limits: EdgeLimits;
  counter: RateCounter;
  /** Client sockets of open tunnels (destroyed when the edge closes). */
  upgrades: Set<Duplex>;
  open: OpenRequests;
}

/**
 * A request with `Upgrade`: node:http hands over the raw socket. The request is checked like any
 * other (path, rules, bans, rate limits, log), then sent to the app on a connection of its own. Only
 * a `101` answer joins the two sockets into a tunnel; any other answer is an ordinary response: it is
 * written to the client, and the socket goes back to the HTTP server, so every later request on it
 * is checked and logged like the first (docs/edge.md).
 */
export async function handleUpgrade(edge: UpgradeContext, req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const started = performance.now();
  // Forwarded by another instance's edge (src/edge/forward.ts): its client and scheme as that edge saw them.
  const hop = readHop(req, edge.backend.hopToken);
  const secure = hop ? hop.secure : isSecure(req);
  const ip = hop ? hop.ip : clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], edge.limits.trustedProxies);
  /** Set when the request goes to another instance's edge: that edge checks and logs it. */
  let viaPeer = false;
  let path = pathOf(req.url);
  const onError = () => socket.destroy();
  socket.on('error', onError);
  const record = (projectId: string, status: number, bytes: number): void => {
    if (!viaPeer) edge.requests.record(projectId, { ts: new Date().toISOString(), method: req.method ?? 'GET', path, status, durationMs: Math.round((performance.now() - started) * 10) / 10, ip, bytes });
  };
  const refuse = (status: number, text: string, projectId?: string) => {
    if (socket.writable) socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
    if (projectId) record(projectId, status, Buffer.byteLength(text));
  };
  if (isOverCap(socket) && !hop) return refuse(503, OVER_CAP);
  try {
    const host = hostOf(hostHeader(req));
    const target = host ? await edge.backend.lookup(host) : null;
    if (!target) return refuse(404, 'no project here');
    // Another live instance runs the app: the upgrade goes to its edge as it came (never again from there).
    const toPeer = (peer: EdgeUpstream) => {
      viaPeer = true;
      const cl = req.headers['content-length'];
      if (req.headers['transfer-encoding'] !== undefined || (cl !== undefined && cl !== '0')) return refuse(400, 'an upgrade request cannot carry a body');
      const headers = passedHeaders(req);
      for (const [k, v] of hopHeaders(edge.backend.hopToken ?? '', ip, secure)) headers.push(k, v);
      tunnel(edge, req, socket, head, peer, req.url ?? '/', headers, target.projectId, record, refuse, onError);
    };
    const peer = hop || target.static ? null : (edge.backend.peer?.(target.projectId) ?? null);
    if (peer) return toPeer(peer);
    if (target.httpsRedirect && !secure) {
      const to = normalizeTarget(req.url ?? '/');
      if (to === null) return refuse(400, BAD_PATH, target.projectId);
      const location = httpsLocation(host, edge.backend.httpsPort?.() ?? null, to);
      if (socket.writable) socket.end(`HTTP/1.1 308 Permanent Redirect\r\nConnection: close\r\nLocation: ${location}\r\nContent-Length: 0\r\n\r\n`);
      return record(target.projectId, 308, 0);
    }
    if (target.unavailable) return refuse(503, target.unavailable, target.projectId);
    const forwardTo = normalizeTarget(req.url ?? '/');
    if (forwardTo === null) return refuse(400, BAD_PATH, target.projectId);
    const fullPath = pathOfTarget(forwardTo);
    path = logPath(fullPath);
    const verdict = evaluateRules(target.rules, fullPath, ip, edge.counter);
    if (verdict?.status === 403) return refuse(403, 'forbidden', target.projectId);
    if (verdict?.status === 429) return refuse(429, 'too many requests', target.projectId);
    // A static site has no app to upgrade to: a 400 page, and the connection closes.
    if (target.static) {
      const body = page('Bad request', 'This is a static site: it takes no WebSocket or other protocol upgrade.');
      if (socket.writable) socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${req.method === 'HEAD' ? '' : body}`);
      record(target.projectId, 400, req.method === 'HEAD' ? 0 : Buffer.byteLength(body));
      return;
    }
    // The bytes after an upgrade request's head are the next protocol's (or the next request's):
    // a body could not be told from them, so an upgrade request carries none.
    const cl = req.headers['content-length'];
    if (req.headers['transfer-encoding'] !== undefined || (cl !== undefined && cl !== '0')) return refuse(400, 'an upgrade request cannot carry a body', target.projectId);
    let upstream: EdgeUpstream;
    try {
      upstream = await edge.backend.upstream(target.projectId);
    } catch (e) {
      // Several instances: the app turned out to run on another one (its lease moved since the check above).
      const moved = hop ? null : (edge.backend.peer?.(target.projectId) ?? null);
      if (moved) return toPeer(moved);
      return refuse(503, (e as Error).message, target.projectId);
    }
    const headers = passedHeaders(req);
    headers.push('X-Forwarded-For', ip, 'X-Forwarded-Proto', hop ? (hop.secure ? 'https' : 'http') : forwardedProto(req, edge.limits.trustedProxies), 'X-Forwarded-Host', req.headers.host ?? host, 'X-Real-IP', ip);
    tunnel(edge, req, socket, head, upstream, forwardTo, headers, target.projectId, record, refuse, onError);
  } catch (e) {
    edge.log.error({ err: e }, 'edge upgrade failed');
    refuse(500, 'edge error');
  }
}

/** The client's headers as they go on (raw name and value pairs), without the ones the edge sets or drops. */
function passedHeaders(req: http.IncomingMessage): string[] {
  const headers: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (!UPGRADE_DROP.has(raw[i]!.toLowerCase())) headers.push(raw[i]!, raw[i + 1]!);
  return headers;
}

/**
 * Sends an upgrade request on a connection of its own (to the app, or to the edge of the instance
 * running it) and joins the two sockets on a 101; any other answer is relayed as an ordinary response.
 */
function tunnel(
  edge: UpgradeContext,
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  upstream: EdgeUpstream,
  forwardTo: string,
  headers: string[],
  pid: string,
  record: (projectId: string, status: number, bytes: number) => unknown,
  refuse: (status: number, text: string, projectId?: string) => void,
  onError: () => void,
): void {
  edge.upgrades.add(socket);
  const closeOpen = edge.open.open(pid);
  const release = () => {
    edge.upgrades.delete(socket);
    closeOpen();
  };
  let answered = false;
  const upReq = http.request({ host: upstream.host, port: upstream.port, method: req.method, path: forwardTo, headers, agent: false, setHost: false });
  const timer = setTimeout(() => upReq.destroy(new Error('the app did not answer in time')), edge.limits.requestTimeoutMs);
  timer.unref();
  const onClientGone = () => {
    release();
    upReq.destroy();
  };
  socket.once('close', onClientGone);
  upReq.on('error', (err) => {
    clearTimeout(timer);
    edge.log.debug({ err: err.message, projectId: pid }, 'edge upgrade upstream error');
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
    relayResponse(edge.server, req, socket, res, (status, bytes, reuse) => {
      record(pid, status, bytes);
      release();
      socket.removeListener('close', onClientGone);
      socket.removeListener('error', onError);
      if (!reuse || socket.destroyed) return void socket.end();
      // Back to the HTTP server: the bytes read after the upgrade request's head come first.
      if (head.length) socket.unshift(head);
      edge.server.emit('connection', socket);
    });
  });
  upReq.end();
}

/**
 * Writes an app's non-101 answer to an upgrade request on the raw client socket: its status and
 * end-to-end headers, the body framed by its Content-Length or else chunked (or, when the connection
 * closes after it, by the close). `done` gets the status, the body bytes and whether the connection
 * can carry another request.
 */
function relayResponse(server: http.Server, req: http.IncomingMessage, socket: Duplex, res: http.IncomingMessage, done: (status: number, bytes: number, reuse: boolean) => void): void {
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
  const keepAlive = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && !asksClose(req.headers.connection) && server.listening;
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
