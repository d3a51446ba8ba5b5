import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { EdgeTls } from '../../src/edge/https.js';
import { EdgeServer, type EdgeTarget } from '../../src/edge/proxy.js';
import { RequestLog } from '../../src/edge/requests.js';
import { compileRules } from '../../src/edge/rules.js';
import { createLogger } from '../../src/lib/logger.js';
import { makeCertificate } from '../support/certificates.js';
import { tempDir } from '../support/harness.js';
import { largeAnswer } from '../support/raw-answers.js';
import { waitFor } from '../support/wait.js';

// The edge's HTTP/2 fast path (src/edge/fast/h2.ts, docs/edge.md "The fast path"): bodiless GET and
// HEAD streams go to the app over the fast path's kept raw connections and are answered with
// node:http2's core API; every other stream goes to the compatibility layer and the edge's request
// handler. The app is a raw TCP server, so each test says exactly which bytes it sends.

type Script = (path: string, socket: net.Socket) => void;
const scripts = new Map<string, Script>();
let app: net.Server;
let appPort = 0;
let appConnections = 0;
/** The request heads the app read (the edge's, as sent), and the bodies of those that had one. */
const appHeads: string[] = [];
const appBodies: string[] = [];
let edge: EdgeServer;
let edgeTls: EdgeTls;
let tlsPort = 0;
let ca = '';
let pair = { cert: '', key: '' };
let root = '';
const requests = new RequestLog(50);
let target: EdgeTarget = { projectId: 'p1', unavailable: null, rules: [] };
/** Streams the fast path took (the last ones kept), with the drain and close listeners it added to each. */
let taken = 0;
const takenStreams: http2.ServerHttp2Stream[] = [];
const addedListeners = new Map<http2.ServerHttp2Stream, Function[]>();
const streamListeners = (stream: http2.ServerHttp2Stream) => [...stream.listeners('drain'), ...stream.listeners('close')];

const ok = (body: string, extra = '') => `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

before(async () => {
  app = net.createServer((socket) => {
    appConnections++;
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        const len = /\r\ncontent-length: *(\d+)/i.exec(head);
        // A request whose body has not all arrived waits for the rest.
        if (len && buf.length < end + 4 + Number(len[1])) return;
        buf = buf.slice(end + 4);
        appHeads.push(head);
        if (len) {
          appBodies.push(buf.slice(0, Number(len[1])));
          buf = buf.slice(Number(len[1]));
        }
        const path = head.split(' ')[1]!;
        const script = scripts.get(path.split('?')[0]!);
        if (script) script(path, socket);
        else socket.write(ok(`hello ${path}`));
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
  appPort = (app.address() as net.AddressInfo).port;
  root = tempDir('berth-fast-h2-');
  const made = makeCertificate(root, ['app.test', 'gone.test']);
  ca = made.ca;
  pair = { cert: made.cert, key: made.key };
  const log = createLogger('silent');
  edge = new EdgeServer(
    {
      lookup: (host) => (host === 'app.test' ? target : null),
      upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }),
    },
    requests,
    log,
  );
  const fast = edge.fastStreams!;
  const take = fast.take.bind(fast);
  fast.take = (...args) => {
    const before = streamListeners(args[0]);
    const took = take(...args);
    if (took) {
      taken++;
      takenStreams.push(args[0]);
      addedListeners.set(args[0], streamListeners(args[0]).filter((f) => !before.includes(f)));
      if (takenStreams.length > 50) addedListeners.delete(takenStreams.shift()!);
    }
    return took;
  };
  edgeTls = new EdgeTls(edge, () => ({ forServerName: async () => ({ cert: made.cert, key: made.key }) }), log);
  tlsPort = (await edgeTls.listen('127.0.0.1', 0)).port;
});

after(async () => {
  await edgeTls.close();
  await edge.close();
  app.close();
  rmSync(root, { recursive: true, force: true });
});

interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/2 session to an edge's TLS port (ALPN h2; this file's edge by default), with SNI `app.test`. */
function session(port = tlsPort): http2.ClientHttp2Session {
  const s = http2.connect(`https://127.0.0.1:${port}`, { ca, servername: 'app.test' });
  s.on('error', () => {});
  return s;
}

/** A request on `s`; its answer (bounded by a timeout). */
function request(s: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const req = s.request({ ':authority': 'app.test', ...headers }, { endStream: body === undefined });
    const timer = setTimeout(() => reject(new Error(`no answer to ${String(headers[':path'])}`)), 10_000);
    let head: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (head = h));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve({ status: Number(head[':status']), headers: head, body: Buffer.concat(chunks) });
    });
    if (body !== undefined) req.end(body);
  });
}

test('GETs over HTTP/2 reach the app over one kept connection with X-Forwarded-* the edge own; the answer has no connection-specific headers', async () => {
  const s = session();
  try {
    const before = appConnections;
    const took = taken;
    appHeads.length = 0;
    scripts.set('/cookies', (_p, sock) => sock.write(ok('two', 'set-cookie: a=1\r\nset-cookie: b=2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\nx-app: yes\r\n')));
    for (const p of ['/a', '/b?x=1', '/cookies']) {
      const r = await request(s, { ':path': p, 'x-forwarded-for': '6.6.6.6', 'x-real-ip': '6.6.6.6', accept: '*/*', cookie: 'c=1' });
      assert.equal(r.status, 200);
      if (p !== '/cookies') assert.equal(r.body.toString(), `hello ${p}`);
    }
    const last = await request(s, { ':path': '/cookies' });
    assert.deepEqual(last.headers['set-cookie'], ['a=1', 'b=2'], 'a repeated header keeps every value');
    assert.equal(last.headers['x-app'], 'yes');
    assert.equal(last.headers['content-length'], '3');
    assert.ok(last.headers.date, 'a Date header');
    for (const h of ['connection', 'keep-alive', 'transfer-encoding']) assert.equal(last.headers[h], undefined, h);
    assert.equal(taken - took, 4, 'the fast path took every stream');
    assert.equal(appConnections - before, 1, 'one connection to the app carried all four');
    for (const h of appHeads) {
      assert.match(h, /\r\nhost: app\.test(\r\n|$)/);
      assert.match(h, /\r\nx-forwarded-for: 127\.0\.0\.1(\r\n|$)/);
      assert.match(h, /\r\nx-real-ip: 127\.0\.0\.1(\r\n|$)/);
      assert.match(h, /\r\nx-forwarded-host: app\.test(\r\n|$)/);
      assert.match(h, /\r\nx-forwarded-proto: https(\r\n|$)/);
      assert.doesNotMatch(h, /6\.6\.6\.6/, 'client-sent forwarding headers are dropped');
      assert.doesNotMatch(h, /\r\n:/, 'no pseudo-header reaches the app');
    }
    assert.match(appHeads[0]!, /\r\naccept: \*\/\*\r\n/);
    assert.match(appHeads[0]!, /\r\ncookie: c=1\r\n/);
    assert.deepEqual(appHeads.slice(0, 3).map((h) => h.split('\r\n')[0]), ['GET /a HTTP/1.1', 'GET /b?x=1 HTTP/1.1', 'GET /cookies HTTP/1.1']);
    assert.deepEqual(requests.recent('p1', 4).map((e) => [e.method, e.path, e.status, e.bytes]), [['GET', '/a', 200, 8], ['GET', '/b', 200, 12], ['GET', '/cookies', 200, 3], ['GET', '/cookies', 200, 3]]);
  } finally {
    s.close();
  }
});

test('HEAD keeps the Content-Length and has no body; a chunked answer and one ended by closing arrive whole', async () => {
  scripts.set('/chunked', (_p, sock) => sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'));
  scripts.set('/until-close', (_p, sock) => sock.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it'));
  const s = session();
  try {
    const head = await request(s, { ':path': '/h', ':method': 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], '8');
    assert.equal(head.body.length, 0);
    const chunked = await request(s, { ':path': '/chunked' });
    assert.equal(chunked.body.toString(), 'hello world');
    assert.equal(chunked.headers['transfer-encoding'], undefined);
    assert.equal(requests.recent('p1', 1)[0]!.bytes, 11, 'the chunked body is counted without its framing');
    const closed = await request(s, { ':path': '/until-close' });
    assert.equal(closed.body.toString(), 'all of it');
    assert.equal((await request(s, { ':path': '/still' })).body.toString(), 'hello /still');
  } finally {
    s.close();
  }
});

test('what the fast path does not take goes to the compatibility layer: a body, an Expect, an unknown host', async () => {
  const s = session();
  try {
    const took = taken;
    appBodies.length = 0;
    scripts.set('/echo', (_p, sock) => sock.write(ok('got it')));
    const post = await request(s, { ':path': '/echo', ':method': 'POST', 'content-length': '5' }, 'hello');
    assert.equal(post.status, 200);
    assert.equal(post.body.toString(), 'got it');
    assert.deepEqual(appBodies, ['hello'], 'the body reached the app');
    const expect = await request(s, { ':path': '/e', expect: '100-continue' });
    assert.equal(expect.status, 200);
    assert.equal(expect.body.toString(), 'hello /e');
    const unknown = await request(s, { ':path': '/', ':authority': 'gone.test' });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.toString(), /No project is served at gone\.test/);
    assert.equal(taken, took, 'none of them was taken');
  } finally {
    s.close();
  }
});

test('route rules, an app that cannot serve and an answer HTTP/2 cannot carry get the same pages as over HTTP/1.1', async () => {
  const s = session();
  target = { projectId: 'p1', unavailable: null, rules: compileRules([{ id: 'd', kind: 'allow-deny', enabled: 1, path: '/admin', config: JSON.stringify({ action: 'deny', cidrs: ['127.0.0.1/32'] }) }]) };
  try {
    const denied = await request(s, { ':path': '/admin/x' });
    assert.equal(denied.status, 403);
    assert.match(denied.body.toString(), /Your address may not access this path/);
    assert.equal(denied.headers['cache-control'], 'no-store');
    assert.equal(requests.recent('p1', 1)[0]!.status, 403);
    assert.equal((await request(s, { ':path': '/open' })).status, 200);
    scripts.set('/bad', (_p, sock) => sock.write('HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab'));
    assert.equal((await request(s, { ':path': '/bad' })).status, 502);
    scripts.set('/two-types', (_p, sock) => sock.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-type: text/html\r\ncontent-length: 2\r\n\r\nab'));
    const two = await request(s, { ':path': '/two-types' });
    assert.equal(two.status, 502);
    assert.equal(requests.recent('p1', 1)[0]!.status, 502);
    scripts.set('/drop', (_p, sock) => sock.destroy());
    assert.equal((await request(s, { ':path': '/drop' })).status, 502);
    assert.equal((await request(s, { ':path': '/after' })).body.toString(), 'hello /after', 'the session goes on');
  } finally {
    target = { projectId: 'p1', unavailable: null, rules: [] };
    s.close();
  }
});

test('a large answer to a client that stops reading holds the app back, and arrives whole', async () => {
  const large = largeAnswer(16 * 1024 * 1024);
  scripts.set('/large', large.script);
  const s = session();
  try {
    const req = s.request({ ':authority': 'app.test', ':path': '/large' });
    req.pause();
    await waitFor(() => large.socket(), 'the app to get the request', 5000, 10);
    // The client reads nothing for a while: HTTP/2 flow control fills, the edge pauses its read of the app, whose writes then wait.
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(large.socket()!.writableLength > 0, 'the app still holds part of its answer: the edge did not read it all into memory');
    const parts: Buffer[] = [];
    const whole = new Promise<void>((resolve, reject) => {
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => resolve());
      req.on('error', reject);
    });
    req.resume();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([whole, new Promise((_, j) => (timer = setTimeout(() => j(new Error('timed out')), 20000)))]).finally(() => clearTimeout(timer));
    assert.ok(Buffer.concat(parts).equals(large.body), 'every byte as the app sent it');
  } finally {
    s.close();
  }
});

test('a stream that is over keeps no listener of the edge: node:http2 may keep the stream until a full collection, and the exchange is not kept with it', async () => {
  const large = largeAnswer(2 * 1024 * 1024);
  scripts.set('/large2', large.script);
  scripts.set('/drop2', (_p, sock) => sock.destroy());
  const s = session();
  try {
    const streams: http2.ServerHttp2Stream[] = [];
    for (const [p, status] of [['/plain', 200], ['/large2', 200], ['/drop2', 502]] as const) {
      const took = taken;
      assert.equal((await request(s, { ':path': p })).status, status, p);
      assert.equal(taken - took, 1, `the fast path took ${p}`);
      streams.push(takenStreams.at(-1)!);
    }
    for (const stream of streams) {
      const added = addedListeners.get(stream)!;
      assert.ok(added.length >= 2, 'the fast path listened for drain and close');
      await waitFor(() => stream.destroyed && stream.closed, 'the stream to be over', 5000, 10);
      assert.deepEqual(streamListeners(stream).filter((f) => added.includes(f)), [], 'none of them is left');
    }
  } finally {
    s.close();
  }
});

test('a client that resets its stream mid-answer ends the exchange: the connection to the app is not reused, the request is logged', async () => {
  let appSocket: net.Socket | null = null;
  scripts.set('/slow', (_p, sock) => {
    appSocket = sock;
    sock.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart');
  });
  const s = session();
  try {
    const req = s.request({ ':authority': 'app.test', ':path': '/slow' });
    req.on('error', () => {});
    await new Promise<void>((resolve) => req.once('response', () => resolve()));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => appSocket?.destroyed || appSocket?.readableEnded, 'the edge to close its connection to the app', 5000, 10);
    await waitFor(() => requests.recent('p1', 1)[0]?.path === '/slow', 'the request to be logged', 5000, 10);
    assert.equal(requests.recent('p1', 1)[0]!.status, 200);
    assert.equal((await request(s, { ':path': '/next' })).body.toString(), 'hello /next');
  } finally {
    s.close();
  }
});

test('a stream whose app turns out to run on another instance while it wakes goes on to the compatibility path, which forwards it there', async () => {
  // The app "wakes" (a pending upstream) and meanwhile its lease moves: the peer is the raw app itself, which answers the forwarded request.
  let moved = false;
  const log = createLogger('silent');
  const other = new EdgeServer(
    {
      lookup: () => target,
      upstream: async () => {
        moved = true;
        throw new Error('the app runs on another instance now');
      },
      peer: () => (moved ? { host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` } : null),
      hopToken: 'hop-token-for-the-test',
    },
    requests,
    log,
  );
  const otherTls = new EdgeTls(other, () => ({ forServerName: async () => pair }), log);
  const port = (await otherTls.listen('127.0.0.1', 0)).port;
  const s = session(port);
  try {
    appHeads.length = 0;
    const r = await request(s, { ':path': '/moved' });
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'hello /moved');
    assert.match(appHeads[0]!, /\r\nx-berth-hop: hop-token-for-the-test\r\n/i, 'sent on as another instance edge forwards it');
  } finally {
    s.close();
    await otherTls.close();
    await other.close();
  }
});

test('with the fast path off (BERTH_EDGE_FAST_PATH=0) there is no HTTP/2 fast path either', () => {
  const plain = new EdgeServer({ lookup: () => target, upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }) }, requests, createLogger('silent'), { fastPath: false });
  assert.equal(plain.fastStreams, null);
});

test("the TLS listener turns Nagle's algorithm off for every connection, HTTP/2 ones included, as node:https and nginx do", () => {
  // node:tls and node:http2 default to it on; net.Server keeps the `noDelay` option it applies to each accepted socket.
  assert.equal((edgeTls.server as unknown as { noDelay?: boolean }).noDelay, true);
});
