/**
 * What the edge security tests share: a real Berth server (startTestServer, background work on) with a
 * real app deployed from a local folder and served by the edge, and a raw HTTP/1.1 client that sends
 * request-targets exactly as written and reads several responses off one connection.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer, type TestServerOptions } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import type { HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/host.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

/**
 * The app: answers every request with JSON of what it saw ({ url, xff, xri, forwarded, proto }) and
 * keeps the list of URLs it saw (GET /__seen). `/ws` upgrades to a WebSocket echo; any other upgrade
 * request gets an ordinary 200 (the app does not speak WebSocket there) and the connection stays HTTP.
 */
const APP = String.raw`
const http = require('node:http');
const crypto = require('node:crypto');
const seen = [];
const describe = (req, extra) => JSON.stringify({ url: req.url, xff: req.headers['x-forwarded-for'] ?? null, xri: req.headers['x-real-ip'] ?? null,
  forwarded: req.headers['forwarded'] ?? null, proto: req.headers['x-forwarded-proto'] ?? null, ...extra });
const server = http.createServer((req, res) => {
  if (req.url === '/__seen') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(seen)); return; }
  seen.push(req.url);
  let bytes = 0;
  req.on('data', (c) => (bytes += c.length));
  req.on('end', () => { res.setHeader('content-type', 'application/json'); res.end(describe(req, { bodyBytes: bytes })); });
});
server.on('upgrade', (req, socket, head) => {
  seen.push(req.url);
  if (req.url === '/ws') {
    const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
    socket.on('data', (d) => socket.write(d));
    return;
  }
  const body = describe(req, { upgraded: false });
  socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body);
  if (head.length) socket.unshift(head);
  server.emit('connection', socket);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`;

export interface EdgeApp {
  server: TestServer;
  owner: TestUser;
  api: HttpClient;
  projectId: string;
  /** The Host the edge serves the app at. */
  host: string;
  edgePort(): number;
  /** Creates a route rule over the API (201 asserted) and answers its record. */
  addRule(body: Record<string, unknown>): Promise<any>;
  /** The URLs the app has seen so far. */
  seen(): Promise<string[]>;
  /** The edge's request log of the project (oldest first). */
  requestLog(): Promise<Array<{ method: string; path: string; status: number; ip: string }>>;
  close(): Promise<void>;
}

/** Boots Berth with `env`, deploys the app from a local folder and waits until the edge serves it. */
export async function startEdgeApp(env: Record<string, string> = {}, build: TestServerOptions['build'] = undefined): Promise<EdgeApp> {
  const root = tempDir('berth-edge-sec-');
  const appDir = path.join(root, 'local', 'app');
  mkdirSync(appDir, { recursive: true });
  writeFileSync(path.join(appDir, 'server.js'), APP);
  const server = await startTestServer({ background: true, build, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_EDGE_PORT: '0', ...env } });
  try {
    const runtime = getRuntime(server.ctx);
    await runtime.restored;
    const owner = await createUser(server);
    const api = server.api(owner.token);
    const created = await api.post('/api/projects', { name: `edge-sec-${Math.random().toString(36).slice(2, 8)}`, startCommand: 'node server.js' });
    assert.equal(created.status, 201, created.text);
    const projectId: string = created.body.data.id;
    const host = `${created.body.data.slug}.localhost`;
    await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', projectId).execute();
    const d = await api.post('/api/deployments', { projectId });
    assert.equal(d.status, 202, d.text);
    const done = await waitForDeployment(api, d.body.data.id);
    if (done.status !== 'ready') {
      const logs = await api.get(`/api/deployments/${d.body.data.id}/logs`);
      assert.fail(`the app did not deploy (${done.status}: ${done.error}); build log:\n${(logs.body.data ?? []).map((l: any) => l.line).join('\n')}`);
    }
    const edgePort = () => runtime.edgePort();
    await waitFor(async () => (await rawRequest(edgePort(), 'GET', '/', host)).status === 200, 'the edge to serve the app', 20000, 100);
    return {
      server,
      owner,
      api,
      projectId,
      host,
      edgePort,
      async addRule(body) {
        const r = await api.post(`/api/projects/${projectId}/route-rules`, body);
        assert.equal(r.status, 201, r.text);
        return r.body.data;
      },
      async seen() {
        return JSON.parse((await rawRequest(edgePort(), 'GET', '/__seen', host)).body) as string[];
      },
      async requestLog() {
        const r = await api.get(`/api/projects/${projectId}/server-logs/recent?limit=1000`);
        assert.equal(r.status, 200, r.text);
        return r.body.data;
      },
      async close() {
        await server.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await server.close();
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 connection written to byte for byte: requests go out exactly as given (any
 * request-target, any headers) and responses are read one at a time (Content-Length, chunked, or
 * until the connection closes).
 */
export class RawConnection {
  readonly socket: net.Socket;
  private buf = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | null = null;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    socket.on('end', end);
    socket.on('close', end);
    socket.on('error', end);
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => resolve(new RawConnection(s)));
      s.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.ended;
  }

  /** The bytes received and not read yet, as text. */
  unread(): string {
    return this.buf.toString('latin1');
  }

  write(text: string | Buffer): void {
    this.socket.write(text);
  }

  /** Sends `METHOD target HTTP/1.1` with Host and the given headers (no body). */
  send(method: string, target: string, host: string, headers: Record<string, string> = {}): void {
    let head = `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    this.write(head + '\r\n');
  }

  /** Waits for more bytes (or the end); throws after `timeoutMs`. */
  private more(timeoutMs: number): Promise<void> {
    if (this.ended) return Promise.reject(new Error(`connection closed; unread: ${JSON.stringify(this.buf.toString('latin1').slice(0, 200))}`));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.wake = null;
        reject(new Error(`no response within ${timeoutMs} ms; have: ${JSON.stringify(this.buf.toString('latin1').slice(0, 200))}`));
      }, timeoutMs);
      this.wake = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
    });
  }

  /** Reads the next response (a `HEAD` request's has no body: pass `head`). */
  async read(opts: { timeoutMs?: number; head?: boolean } = {}): Promise<RawResponse> {
    const timeoutMs = opts.timeoutMs ?? 15000;
    let sep: number;
    while ((sep = this.buf.indexOf('\r\n\r\n')) < 0) await this.more(timeoutMs);
    const lines = this.buf.subarray(0, sep).toString('latin1').split('\r\n');
    this.buf = this.buf.subarray(sep + 4);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1]);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    if (opts.head || status === 101 || status === 204 || status === 304) return { status, headers, body: '' };
    if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      while (this.buf.length < n) await this.more(timeoutMs);
      const body = this.buf.subarray(0, n).toString('utf8');
      this.buf = this.buf.subarray(n);
      return { status, headers, body };
    }
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      let body = '';
      for (;;) {
        let eol: number;
        while ((eol = this.buf.indexOf('\r\n')) < 0) await this.more(timeoutMs);
        const size = parseInt(this.buf.subarray(0, eol).toString('latin1'), 16);
        while (this.buf.length < eol + 2 + size + 2) await this.more(timeoutMs);
        body += this.buf.subarray(eol + 2, eol + 2 + size).toString('utf8');
        this.buf = this.buf.subarray(eol + 2 + size + 2);
        if (size === 0) return { status, headers, body };
      }
    }
    while (!this.ended) await this.more(timeoutMs).catch(() => undefined);
    const body = this.buf.toString('utf8');
    this.buf = Buffer.alloc(0);
    return { status, headers, body };
  }

  /** Resolves once the server has closed the connection; throws after `timeoutMs`. */
  async waitClosed(timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > end) throw new Error(`the connection is still open after ${timeoutMs} ms`);
      await this.more(Math.max(1, end - Date.now())).catch(() => undefined);
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** One request on a fresh connection (`Connection: close`), read to its end. */
export async function rawRequest(port: number, method: string, target: string, host: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const c = await RawConnection.open(port);
  try {
    c.send(method, target, host, { Connection: 'close', ...headers });
    return await c.read({ head: method === 'HEAD' });
  } finally {
    c.close();
  }
}
