import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { EdgeServer, type EdgeTarget } from '../../src/edge/proxy.js';
import { RequestLog } from '../../src/edge/requests.js';
import { compileRules } from '../../src/edge/rules.js';
import { ChunkedReader } from '../../src/edge/fast/chunked.js';
import { readAnswerHead, readSimpleRequest } from '../../src/edge/fast/head.js';
import { createLogger } from '../../src/lib/logger.js';
import { largeAnswer } from '../support/raw-answers.js';
import { waitFor } from '../support/wait.js';

// The edge's fast path (src/edge/fast/, docs/edge.md "The fast path"): plain GET and HEAD requests on raw
// sockets, everything else handed to node:http on the same connection. The app here is a raw TCP server,
// so each test says exactly which bytes the app sends.

/** What the raw app answers to a request for `path` on one connection (`seen` counts requests on that connection). */
type Script = (path: string, socket: net.Socket, seen: number) => void;
const scripts = new Map<string, Script>();
let app: net.Server;
let appPort = 0;
/** Connections the app accepted, and the request heads it read (the edge's, as sent). */
let appConnections = 0;
const appHeads: string[] = [];
let edge: EdgeServer;
let edgePort = 0;
const requests = new RequestLog(50);
let target: EdgeTarget = { projectId: 'p1', unavailable: null, rules: [] };

const ok = (body: string, extra = '') => `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

before(async () => {
  app = net.createServer((socket) => {
    appConnections++;
    let buf = '';
    let seen = 0;
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        appHeads.push(head);
        const len = /\r\ncontent-length: *(\d+)/i.exec(head);
        if (len) buf = buf.slice(Number(len[1]));
        const path = head.split(' ')[1]!;
        const script = scripts.get(path.split('?')[0]!);
        if (script) script(path, socket, ++seen);
        else socket.write(ok(`hello ${path}`));
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
  appPort = (app.address() as net.AddressInfo).port;
  edge = new EdgeServer(
    {
      lookup: (host) => (host === 'app.test' ? target : null),
      upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }),
    },
    requests,
    createLogger('silent'),
  );
  edgePort = (await edge.listen('127.0.0.1', 0)).port;
});

after(async () => {
  await edge.close();
  app.close();
});

/** A raw client connection: `send` bytes, `read` until `done(text so far)` holds (bounded by a timeout). */
function client(): { send(s: string): void; read(done: (text: string) => boolean): Promise<string>; socket: net.Socket } {
  const socket = net.connect(edgePort, '127.0.0.1');
  let text = '';
  const waiters: (() => void)[] = [];
  socket.on('data', (d) => {
    text += d.toString('latin1');
    for (const w of waiters.splice(0)) w();
  });
  socket.on('close', () => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    socket,
    send: (s) => void socket.write(s, 'latin1'),
    read: (done) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out; read so far: ${JSON.stringify(text)}`)), 5000);
        const check = () => {
          if (done(text) || socket.destroyed) {
            clearTimeout(timer);
            const out = text;
            text = '';
            resolve(out);
          } else waiters.push(check);
        };
        check();
      }),
  };
}

/** Answers (status lines) in `text`. */
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: app.test\r\n${extra}\r\n`;

test('plain GETs on one client connection reach the app over one kept connection, X-Forwarded-* the edge own', async () => {
  const before = appConnections;
  appHeads.length = 0;
  const c = client();
  for (const p of ['/a', '/b?x=1', '/c']) {
    c.send(get(p, 'X-Forwarded-For: 6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nAccept: */*\r\n'));
    const text = await c.read((t) => t.endsWith(`hello ${p}`));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(text, /\r\nconnection: keep-alive\r\n/);
    assert.match(text, /\r\ndate: /);
  }
  c.socket.destroy();
  assert.equal(appConnections - before, 1, 'one connection to the app carried all three');
  for (const h of appHeads) {
    assert.match(h, /\r\nx-forwarded-for: 127\.0\.0\.1(\r\n|$)/);
    assert.match(h, /\r\nx-real-ip: 127\.0\.0\.1(\r\n|$)/);
    assert.match(h, /\r\nx-forwarded-host: app\.test(\r\n|$)/);
    assert.match(h, /\r\nx-forwarded-proto: http(\r\n|$)/);
    assert.doesNotMatch(h, /6\.6\.6\.6/, 'client-sent forwarding headers are dropped');
    assert.match(h, /\r\nAccept: \*\/\*/);
  }
  assert.deepEqual(appHeads.map((h) => h.split('\r\n')[0]), ['GET /a HTTP/1.1', 'GET /b?x=1 HTTP/1.1', 'GET /c HTTP/1.1']);
  assert.deepEqual(requests.recent('p1', 3).map((e) => [e.path, e.status, e.bytes]), [['/a', 200, 8], ['/b', 200, 12], ['/c', 200, 8]]);
});

test('pipelined requests are answered in order, and Connection: close ends the connection after its answer', async () => {
  const c = client();
  c.send(get('/1') + get('/2') + `HEAD /3 HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n`);
  const text = await c.read((t) => t.includes('connection: close') && c.socket.readableEnded);
  assert.deepEqual(statuses(text), [200, 200, 200]);
  assert.ok(text.indexOf('hello /1') < text.indexOf('hello /2'));
  assert.doesNotMatch(text, /hello \/3/, 'a HEAD answer has no body');
  assert.match(text, /content-length: 8\r\n[^]*\r\n\r\n$/, 'the HEAD answer keeps its Content-Length');
});

test('what the fast path does not take goes to node:http on the same connection: a body, a head in pieces, an unknown host, a static site', async () => {
  const c = client();
  c.send(get('/first'));
  await c.read((t) => t.endsWith('hello /first'));
  // A POST with a body: node:http's path (the app reads the body).
  c.send('POST /form HTTP/1.1\r\nHost: app.test\r\nContent-Length: 3\r\n\r\nabc');
  assert.match(await c.read((t) => t.endsWith('hello /form')), /^HTTP\/1\.1 200 OK/);
  // Back on a GET after the hand-over: still answered (node:http's now).
  c.send('GET /after HTTP/1.1\r\nHo');
  await new Promise((r) => setTimeout(r, 50));
  c.send('st: app.test\r\n\r\n');
  assert.match(await c.read((t) => t.endsWith('hello /after')), /^HTTP\/1\.1 200 OK/);
  c.socket.destroy();
  const d = client();
  d.send('GET / HTTP/1.1\r\nHost: nope.test\r\n\r\n');
  assert.deepEqual(statuses(await d.read((t) => t.includes('</html>'))), [404]);
  d.socket.destroy();
});

test('a head outside the strict subset gets the answer node:http gives it: a second Host, a folded header, both body framings, a bad name', async () => {
  const plain = new EdgeServer({ lookup: (host) => (host === 'app.test' ? target : null), upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }) }, requests, createLogger('silent'), { fastPath: false });
  const plainPort = (await plain.listen('127.0.0.1', 0)).port;
  const answer = async (port: number, bytes: string) => {
    const s = net.connect(port, '127.0.0.1');
    s.write(bytes, 'latin1');
    let text = '';
    s.on('data', (d) => (text += d.toString('latin1')));
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 1500);
      s.on('data', () => text.includes('\r\n\r\n') && (clearTimeout(t), resolve()));
      s.on('close', () => (clearTimeout(t), resolve()));
    });
    s.destroy();
    return statuses(text);
  };
  try {
    for (const bad of [
      'GET / HTTP/1.1\r\nHost: app.test\r\nHost: other.test\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: app.test\r\nX-A: 1\r\n  folded\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: app.test\r\nX-Bad\x01: 1\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: app.test\r\nX-A: a\nX-B: b\r\n\r\n',
    ]) {
      const want = await answer(plainPort, bad);
      assert.deepEqual(await answer(edgePort, bad), want, JSON.stringify(bad));
    }
  } finally {
    await plain.close();
  }
});

test("an app's chunked answer reaches the client in the edge's own chunks; one ended by closing is chunked and the client stays connected", async () => {
  scripts.set('/chunked', (_p, s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'));
  scripts.set('/until-close', (_p, s) => s.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it'));
  const c = client();
  c.send(get('/chunked'));
  const text = await c.read((t) => t.endsWith('0\r\n\r\n'));
  assert.match(text, /transfer-encoding: chunked\r\n/);
  assert.ok(text.endsWith('\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'), JSON.stringify(text));
  c.send(get('/until-close'));
  const t2 = await c.read((t) => t.endsWith('0\r\n\r\n'));
  assert.ok(t2.endsWith('\r\n\r\n9\r\nall of it\r\n0\r\n\r\n'), JSON.stringify(t2));
  c.send(get('/still'));
  assert.match(await c.read((t) => t.endsWith('hello /still')), /^HTTP\/1\.1 200/);
  c.socket.destroy();
  assert.equal(requests.recent('p1', 3)[0]!.bytes, 11, 'the chunked body is counted without its framing');
});

test('a large answer to a client that stops reading holds the app back (the edge reads no further than the client takes), and arrives whole', async () => {
  const size = 32 * 1024 * 1024;
  const large = largeAnswer(size);
  const body = large.body;
  scripts.set('/large', large.script);
  const socket = net.connect(edgePort, '127.0.0.1');
  const parts: Buffer[] = [];
  let got = 0;
  socket.pause();
  socket.write(get('/large'), 'latin1');
  await waitFor(() => large.socket(), 'the app to get the request', 5000, 10);
  // The client reads nothing for a while: the edge pauses its read of the app, whose own writes then wait.
  await new Promise((r) => setTimeout(r, 400));
  assert.ok(large.socket()!.writableLength > 0, 'the app still holds part of its answer: the edge did not read it all into memory');
  // The head is well under the first chunk; the whole answer is its length past it.
  const whole = new Promise<void>((resolve) =>
    socket.on('data', (d: Buffer) => {
      parts.push(d);
      got += d.length;
      const head = parts[0]!.indexOf('\r\n\r\n');
      if (head >= 0 && got - head - 4 >= size) resolve();
    }),
  );
  socket.resume();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([whole, new Promise((_, j) => (timer = setTimeout(() => j(new Error(`timed out after ${got} bytes`)), 20000)))]).finally(() => clearTimeout(timer));
  const all = Buffer.concat(parts);
  const received = all.subarray(all.indexOf('\r\n\r\n') + 4);
  assert.equal(received.length, size);
  assert.ok(received.equals(body), 'every byte as the app sent it');
  socket.write(get('/after'), 'latin1');
  const after = await new Promise<string>((resolve) => {
    let t = '';
    socket.on('data', (d: Buffer) => {
      t += d.toString('latin1');
      if (t.endsWith('hello /after')) resolve(t);
    });
  });
  assert.match(after, /^HTTP\/1\.1 200/);
  socket.destroy();
});

test('bytes an app sends past its answer never reach a client: its connection is closed, not reused', async () => {
  scripts.set('/smuggle', (_p, s) => s.write(ok('ok') + ok('EVIL')));
  const c = client();
  c.send(get('/smuggle'));
  assert.ok((await c.read((t) => t.endsWith('ok'))).endsWith('\r\n\r\nok'));
  c.send(get('/next'));
  const next = await c.read((t) => t.endsWith('hello /next') || t.includes('EVIL'));
  assert.doesNotMatch(next, /EVIL/);
  c.socket.destroy();
});

test('an answer outside HTTP/1.1 framing is a 502: a bad status line, two Content-Lengths, both framings, a bad chunk', async () => {
  const answers = [
    'HTTP/1.1 2000 OK\r\ncontent-length: 0\r\n\r\n',
    'HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab',
    'HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nbad header\r\n\r\n',
  ];
  for (const [i, a] of answers.entries()) {
    scripts.set(`/bad${i}`, (_p, s) => s.write(a));
    const c = client();
    c.send(get(`/bad${i}`));
    const text = await c.read((t) => t.includes('</html>'));
    assert.deepEqual(statuses(text), [502], a);
    c.socket.destroy();
  }
  scripts.set('/badchunk', (_p, s) => s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'));
  const c = client();
  c.send(get('/badchunk'));
  const text = await c.read(() => false).catch(() => '');
  assert.ok(c.socket.destroyed || text === '', 'headers sent: the connection is cut');
  assert.equal(requests.recent('p1', 1)[0]!.path, '/badchunk');
});

test('a kept connection the app closed as the request went out is retried once on a new one', async () => {
  // The app answers the first request on a connection, and drops the connection on the second.
  scripts.set('/flaky', (_p, s, seen) => (seen === 1 ? s.write(ok('first')) : s.destroy()));
  const c = client();
  c.send(get('/flaky'));
  assert.ok((await c.read((t) => t.endsWith('first'))).endsWith('first'));
  c.send(get('/flaky'));
  const again = await c.read((t) => t.endsWith('first') || t.includes('</html>'));
  assert.deepEqual(statuses(again), [200], 'answered by a new connection, not a 502');
  c.socket.destroy();
});

test('route rules and an app that cannot serve are answered by the fast path with the same pages', async () => {
  target = { projectId: 'p1', unavailable: null, rules: compileRules([{ id: 'd', kind: 'allow-deny', enabled: 1, path: '/admin', config: JSON.stringify({ action: 'deny', cidrs: ['127.0.0.1/32'] }) }]) };
  try {
    const c = client();
    c.send(get('/admin/x'));
    const text = await c.read((t) => t.includes('</html>'));
    assert.deepEqual(statuses(text), [403]);
    assert.match(text, /Your address may not access this path/);
    c.send(get('/open'));
    assert.match(await c.read((t) => t.endsWith('hello /open')), /^HTTP\/1\.1 200/);
    c.socket.destroy();
    assert.equal(requests.recent('p1', 2)[0]!.status, 403);
  } finally {
    target = { projectId: 'p1', unavailable: null, rules: [] };
  }
});

test('the fast path reads heads strictly: what it does not recognise is left to node:http', () => {
  const head = (s: string) => Buffer.from(s, 'latin1');
  const read = (s: string) => readSimpleRequest(head(s), s.length);
  assert.deepEqual(read('GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*'), { method: 'GET', target: '/x', host: 'a.test', forwardedFor: undefined, forwardedProto: undefined, close: false, pass: 'Host: a.test\r\nAccept: */*\r\n' });
  for (const s of [
    'POST /x HTTP/1.1\r\nHost: a',
    'GET /x HTTP/1.0\r\nHost: a',
    'GET http://a/x HTTP/1.1\r\nHost: a',
    'GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1',
    'GET /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked',
    'GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket',
    'GET /x HTTP/1.1\r\nHost: a\r\nX-Berth-Hop: t',
    'GET /x HTTP/1.1\r\nHost : a',
    'GET /x HTTP/1.1\r\nHost: a\nX: b',
    'GET /x HTTP/1.1\r\nX: ' + ' '.repeat(20000) + '\x01',
    'GET /x HTTP/1.1\r\nAccept: */*',
  ]) assert.equal(read(s), null, JSON.stringify(s.slice(0, 80)));
  assert.equal(read('GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close')!.close, true);
  const answer = (s: string, method = 'GET') => readAnswerHead(head(s), s.length, method);
  const a = answer('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\nKeep-Alive: timeout=2\r\nSet-Cookie: a=1');
  assert.ok(!(a instanceof Error));
  assert.deepEqual([a.status, a.framing, a.reusable, a.keepAliveMs, a.pass], [200, { kind: 'length', length: 3 }, true, 2000, 'Set-Cookie: a=1\r\n']);
  const h = answer('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked', 'HEAD');
  assert.ok(!(h instanceof Error) && h.framing.kind === 'none');
  const c = answer('HTTP/1.0 200 OK\r\nContent-Length: 1');
  assert.ok(!(c instanceof Error) && !c.reusable);
  assert.ok(answer('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip') instanceof Error);
  // Status lines and header lines, character by character (the reader scans them: src/edge/fast/head.ts).
  for (const ok of ['HTTP/1.1 200', 'HTTP/1.1 200 ', 'HTTP/1.1 599 Odd\tReason \xe9', 'HTTP/1.1 200 OK\r\nX-Obs: caf\xe9\r\nX-Empty:\r\nX-Tab:\tv\t']) {
    assert.ok(!(answer(ok) instanceof Error), JSON.stringify(ok));
  }
  for (const bad of ['HTTP/1.1 099 X', 'HTTP/1.2 200 OK', 'HTTP/1.1 2000 OK', 'HTTP/1.1 20x OK', 'HTTP/1.1  200 OK', 'HTTP/1.1 200 O\x7fK', 'HTTP/1.1 200\tOK', 'HTTP/1.1 200 OK\r\nX: a\x01b', 'HTTP/1.1 200 OK\r\nX : a', 'HTTP/1.1 200 OK\r\n: a', 'HTTP/1.1 200 OK\r\nX\xe9: a', 'HTTP/1.1 200 OK\r\nContent-Length: 1x']) {
    assert.ok(answer(bad) instanceof Error, JSON.stringify(bad));
  }
  for (const bad of ['GET /x  HTTP/1.1\r\nHost: a', 'GET /x HTTP/1.1 \r\nHost: a', 'GET /\xe9 HTTP/1.1\r\nHost: a', 'GET /x HTTP/1.1\r\nHost: a\rb', 'GET /x HTTP/1.1\r\nHost: a\r\nX-A\x7f: b', 'GET /x HTTP/1.1\r\nHost: a\r\nHost: b']) {
    assert.equal(read(bad), null, JSON.stringify(bad));
  }
  assert.equal(read('HEAD /a?b=c HTTP/1.1\r\nX-Obs: \xe9\r\nhost:a.test\t')!.host, 'a.test');
});

test('a chunked body is read the same whichever way its bytes are split', () => {
  const body = Buffer.from('4;a=b\r\nwiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\nNEXT', 'latin1');
  for (let cut = 1; cut < body.length; cut++) {
    const r = new ChunkedReader();
    const out: Buffer[] = [];
    const a = r.read(body.subarray(0, cut), (d) => out.push(Buffer.from(d)));
    assert.ok(!(a instanceof Error));
    let used = a;
    if (!r.done) {
      const b = r.read(body.subarray(cut), (d) => out.push(Buffer.from(d)));
      assert.ok(!(b instanceof Error));
      used = cut + b;
    }
    assert.ok(r.done);
    assert.equal(Buffer.concat(out).toString(), 'wikipedia in\r\n\r\nchunks.');
    assert.equal(body.subarray(used).toString(), 'NEXT');
  }
  for (const bad of ['x\r\n', '4\r\nwikiXX', '4\nwiki\r\n', '0\r\nA: b\n\r\n']) assert.ok(new ChunkedReader().read(Buffer.from(bad), () => {}) instanceof Error, bad);
});

test('with the fast path off (BERTH_EDGE_FAST_PATH=0) node:http serves every request', async () => {
  const plain = new EdgeServer({ lookup: () => target, upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }) }, requests, createLogger('silent'), { fastPath: false });
  try {
    assert.equal(plain.limits.fastPath, false);
    const port = (await plain.listen('127.0.0.1', 0)).port;
    const r = await fetch(`http://127.0.0.1:${port}/off`, { headers: { host: 'app.test' } });
    assert.equal(await r.text(), 'hello /off');
    assert.equal(r.headers.get('keep-alive'), 'timeout=10');
  } finally {
    await plain.close();
  }
});

test('the edge closes: idle fast-path connections end, and the listener stops', async () => {
  const other = new EdgeServer({ lookup: () => target, upstream: () => ({ host: '127.0.0.1', port: appPort, key: `127.0.0.1:${appPort}` }) }, requests, createLogger('silent'));
  const port = (await other.listen('127.0.0.1', 0)).port;
  const s = net.connect(port, '127.0.0.1');
  s.write(get('/x'));
  await new Promise((r) => s.once('data', r));
  const closed = new Promise((r) => s.once('close', r));
  await other.close();
  await closed;
  assert.equal(other.server.listening, false);
});

test('a kept-alive connection with no next request is closed once the keep-alive timeout it announced has passed', { timeout: 20_000 }, async () => {
  const c = client();
  c.send(get('/idle'));
  const text = await c.read((t) => t.endsWith('hello /idle'));
  assert.match(text, /\r\nkeep-alive: timeout=10\r\n/);
  const answered = Date.now();
  await new Promise<void>((resolve) => (c.socket.destroyed ? resolve() : c.socket.once('close', () => resolve())));
  const idle = Date.now() - answered;
  // 10 s (the socket's timeout while it waits for a request), not long before it; the bounds leave room
  // for a busy machine (the answer read late by this client, the timer fired late).
  assert.ok(idle >= 9_000 && idle < 15_000, `closed after ${idle} ms of idleness`);
});
