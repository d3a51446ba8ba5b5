import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher, Pool } from 'undici';
import { loadUndici, undiciIfLoaded } from '../lib/undici.js';
import { normalizeIp } from '../lib/cidr.js';
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
  /** The local port of the project's running app; wakes a sleeping app (held until healthy). Throws when it cannot serve. */
  upstream(projectId: string): number | Promise<number>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

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

function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  const p = q >= 0 ? u.slice(0, q) : u;
  return p.length > 2048 ? p.slice(0, 2048) : p || '/';
}

/**
 * The edge proxy: a node:http server that routes by `Host` to the project's running app, streams
 * bodies both ways, passes WebSocket upgrades through, adds `X-Forwarded-For/-Proto/-Host`, enforces
 * the project's route rules, and records every request.
 */
export class EdgeServer {
  readonly server: http.Server;
  /** One keep-alive connection pool per app port; pools unused for a minute are closed. */
  private readonly pools = new Map<number, { pool: Pool; used: number }>();
  private readonly poolSweep: NodeJS.Timeout;
  private readonly counter = new RateCounter();
  private readonly upgrades = new Set<Duplex>();
  /** Open proxied requests and WebSocket connections per project (an app with any is not idle). */
  private readonly active = new Map<string, number>();

  /** How many requests and WebSocket connections of the project are open right now. */
  openConnections(projectId: string): number {
    return this.active.get(projectId) ?? 0;
  }

  constructor(
    private readonly backend: EdgeBackend,
    private readonly requests: RequestLog,
    private readonly log: Logger,
  ) {
    this.server = http.createServer({ keepAliveTimeout: 10000 }, (req, res) => void this.handle(req, res));
    this.server.on('upgrade', (req, socket, head) => void this.handleUpgrade(req, socket, head));
    this.poolSweep = setInterval(() => {
      const now = Date.now();
      for (const [port, p] of this.pools) {
        if (now - p.used > 60000) {
          this.pools.delete(port);
          void p.pool.close().catch(() => {});
        }
      }
    }, 30000);
    this.poolSweep.unref();
    this.server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
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

  private pool(port: number, undici: typeof import('undici')): Pool {
    let p = this.pools.get(port);
    if (!p) {
      p = { pool: new undici.Pool(`http://127.0.0.1:${port}`, { connections: 256, pipelining: 1, keepAliveTimeout: 4000, headersTimeout: 0, bodyTimeout: 0 }), used: Date.now() };
      this.pools.set(port, p);
    } else p.used = Date.now();
    return p.pool;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const ip = normalizeIp(req.socket.remoteAddress ?? '');
    const path = pathOf(req.url);
    let projectId: string | null = null;
    let bytes = 0;
    const finish = (status: number) => {
      if (!projectId) return;
      const entry: RequestEntry = { ts: new Date().toISOString(), method: req.method ?? 'GET', path, status, durationMs: Math.round((performance.now() - started) * 10) / 10, ip, bytes };
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
      const verdict = evaluateRules(target.rules, path, ip, this.counter);
      if (verdict?.status === 403) return answer(403, 'Forbidden', 'Your address may not access this path.');
      if (verdict?.status === 429) return answer(429, 'Too many requests', `Slow down: try again in ${verdict.retryAfter} s.`, { 'retry-after': String(verdict.retryAfter) });
      let port: number;
      try {
        const up = this.backend.upstream(target.projectId);
        port = typeof up === 'number' ? up : await up;
      } catch (e) {
        return answer(503, 'Project unavailable', (e as Error).message || 'The app is not running.', { 'retry-after': '10' });
      }
      // undici is loaded on the first proxied request (a server that proxies nothing never loads it).
      const undici = undiciIfLoaded() ?? (await loadUndici());
      const headers: Record<string, string | string[]> = {};
      for (const k in req.headers) {
        const v = req.headers[k];
        if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'expect') headers[k] = v;
      }
      headers['x-forwarded-for'] = ip;
      headers['x-forwarded-proto'] = 'http';
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
      this.pool(port, undici).stream(
        { path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: hasBody ? req : null, signal: res as unknown as AbortSignal },
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

  private async handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const ip = normalizeIp(req.socket.remoteAddress ?? '');
    const path = pathOf(req.url);
    const started = performance.now();
    socket.on('error', () => socket.destroy());
    const refuse = (status: number, text: string, projectId?: string) => {
      if (socket.writable) socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
      if (projectId) this.requests.record(projectId, { ts: new Date().toISOString(), method: req.method ?? 'GET', path, status, durationMs: Math.round(performance.now() - started), ip, bytes: 0 });
    };
    try {
      const host = hostOf(req.headers.host);
      const target = host ? await this.backend.lookup(host) : null;
      if (!target) return refuse(404, 'no project here');
      if (target.unavailable) return refuse(503, target.unavailable, target.projectId);
      const verdict = evaluateRules(target.rules, path, ip, this.counter);
      if (verdict?.status === 403) return refuse(403, 'forbidden', target.projectId);
      if (verdict?.status === 429) return refuse(429, 'too many requests', target.projectId);
      let port: number;
      try {
        port = await this.backend.upstream(target.projectId);
      } catch (e) {
        return refuse(503, (e as Error).message, target.projectId);
      }
      const up = net.connect(port, '127.0.0.1');
      this.upgrades.add(socket);
      const pid = target.projectId;
      this.active.set(pid, (this.active.get(pid) ?? 0) + 1);
      let cleaned = false;
      const cleanup = () => {
        if (!cleaned) {
          cleaned = true;
          const n = (this.active.get(pid) ?? 1) - 1;
          if (n <= 0) this.active.delete(pid);
          else this.active.set(pid, n);
        }
        this.upgrades.delete(socket);
        up.destroy();
        socket.destroy();
      };
      up.on('error', cleanup);
      socket.on('close', cleanup);
      up.on('close', cleanup);
      // No half-open WebSockets: either side ending closes both (server sockets allow half-open).
      socket.on('end', cleanup);
      up.on('end', cleanup);
      up.once('connect', () => {
        let head1 = `${req.method} ${req.url} HTTP/1.1\r\n`;
        const raw = req.rawHeaders;
        for (let i = 0; i < raw.length; i += 2) {
          const k = raw[i]!.toLowerCase();
          if (k === 'x-forwarded-for' || k === 'x-forwarded-proto' || k === 'x-forwarded-host' || k === 'x-real-ip') continue;
          head1 += `${raw[i]}: ${raw[i + 1]}\r\n`;
        }
        head1 += `X-Forwarded-For: ${ip}\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: ${req.headers.host ?? host}\r\nX-Real-IP: ${ip}\r\n\r\n`;
        up.write(head1);
        if (head?.length) up.write(head);
        socket.pipe(up);
        up.pipe(socket);
        this.requests.record(target.projectId, { ts: new Date().toISOString(), method: req.method ?? 'GET', path, status: 101, durationMs: Math.round(performance.now() - started), ip, bytes: 0 });
      });
    } catch (e) {
      this.log.error({ err: e }, 'edge upgrade failed');
      refuse(500, 'edge error');
    }
  }
}
