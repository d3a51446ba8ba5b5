/**
 * ACME Renewal Information (RFC 9773) in front of Debian's Pebble 2.4, which predates ARI: a loopback
 * HTTPS server (Pebble's own certificate, so BERTH_ACME_CA_FILE trusts it) that passes every ACME
 * request through to the real Pebble unchanged, Host header included (Pebble builds its URLs from it,
 * so the directory, orders and the JWS `url` all name this server), and adds what Pebble lacks:
 *
 * - `renewalInfo` in the directory, and `GET /renewal-info/<certificate id>` answering the window the
 *   test sets for that id (`windows`), with its `Retry-After`; an id without a window gets 404;
 * - a record of every request for renewal information (`polls`) and of every newOrder payload
 *   (`orders`, read from the JWS the client signed: the `replaces` field a renewal sends).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { Pebble } from '../support/pebble.js';

export interface AriWindow {
  start: Date;
  end: Date;
  /** Retry-After in seconds (omitted: no header). */
  retryAfter?: number;
}

export interface AriFront {
  directoryUrl: string;
  /** The window answered per certificate id. */
  windows: Map<string, AriWindow>;
  /** The window of an id not in `windows` (null: 404). */
  defaultWindow: AriWindow | null;
  /** Certificate ids asked for, in order. */
  polls: string[];
  /** Decoded newOrder payloads, in order. */
  orders: { identifiers: { type: string; value: string }[]; replaces?: string }[];
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startAriFront(pebble: Pebble): Promise<AriFront> {
  const upstream = new URL(pebble.directoryUrl);
  const windows = new Map<string, AriWindow>();
  const front = { windows, defaultWindow: null as AriWindow | null };
  const polls: string[] = [];
  const orders: AriFront['orders'] = [];
  let newOrderPath = '';

  /** The same request sent to Pebble; its answer, body buffered. */
  const forward = (req: http.IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const out = https.request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers, ca: pebble.caCertPem, agent: false, timeout: 10_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      out.on('timeout', () => out.destroy(new Error('pebble did not answer')));
      out.on('error', reject);
      out.end(body);
    });

  const server = https.createServer({ cert: readFileSync(pebble.tlsCertFile), key: readFileSync(pebble.tlsKeyFile) }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'https://front');
      if (req.method === 'GET' && url.pathname.startsWith('/renewal-info/')) {
        const id = url.pathname.slice('/renewal-info/'.length);
        polls.push(id);
        const w = windows.get(id) ?? front.defaultWindow;
        if (!w) return res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'urn:ietf:params:acme:error:malformed', detail: 'no such certificate' }));
        const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
        if (w.retryAfter !== undefined) headers['retry-after'] = String(w.retryAfter);
        return res.writeHead(200, headers).end(JSON.stringify({ suggestedWindow: { start: w.start.toISOString(), end: w.end.toISOString() } }));
      }
      const body = await readBody(req);
      if (req.method === 'POST' && newOrderPath && url.pathname === newOrderPath) {
        const jws = JSON.parse(body.toString('utf8')) as { payload: string };
        orders.push(JSON.parse(Buffer.from(jws.payload, 'base64url').toString('utf8')));
      }
      const answer = await forward(req, body);
      let out = answer.body;
      if (req.method === 'GET' && url.pathname === upstream.pathname && answer.status === 200) {
        const dir = JSON.parse(out.toString('utf8')) as Record<string, unknown>;
        newOrderPath = new URL(String(dir.newOrder)).pathname;
        dir.renewalInfo = `https://${req.headers.host}/renewal-info`;
        out = Buffer.from(JSON.stringify(dir));
      }
      const headers = { ...answer.headers };
      delete headers['content-length'];
      delete headers['transfer-encoding'];
      delete headers.connection;
      res.writeHead(answer.status, { ...headers, 'content-length': String(out.length) }).end(out);
    })().catch((e: Error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(e.message);
      else res.destroy();
    });
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return Object.assign(front, {
    directoryUrl: `https://127.0.0.1:${port}${upstream.pathname}`,
    polls,
    orders,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  });
}
