import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import crypto from 'node:crypto';
import { EdgeServer, hostOf, type EdgeTarget } from '../../src/edge/proxy.js';
import { RequestLog } from '../../src/edge/requests.js';
import { compileRules, evaluateRules, pathMatcher, RateCounter, type RuleRow } from '../../src/edge/rules.js';
import { createLogger } from '../../src/lib/logger.js';

const rule = (kind: string, config: object, path: string | null = null, id = kind): RuleRow => ({ id, kind, enabled: 1, path, config: JSON.stringify(config) });

test('hostOf strips the port and trailing dot, lowercases, and refuses junk', () => {
  assert.equal(hostOf('App.Example.com:8080'), 'app.example.com');
  assert.equal(hostOf('app.localhost.'), 'app.localhost');
  assert.equal(hostOf('[::1]:80'), '::1');
  assert.equal(hostOf('bad host'), '');
  assert.equal(hostOf(undefined), '');
});

test('rule paths: none covers all, a prefix covers on segment boundaries, a glob covers by pattern', () => {
  assert.ok(pathMatcher(null)('/anything'));
  const p = pathMatcher('/api');
  assert.ok(p('/api') && p('/api/x/y'));
  assert.ok(!p('/apix'));
  const g = pathMatcher('/api/*');
  assert.ok(g('/api/x') && g('/api/x/y'));
  assert.ok(!g('/apix') && !g('/other/api/x'));
  assert.ok(pathMatcher('/files/*.png')('/files/a.png'));
  assert.ok(!pathMatcher('/files/*.png')('/files/a.jpg'));
});

test('ban rules refuse listed addresses and ranges, v4 and v6, until they expire', () => {
  const c = new RateCounter();
  const rules = compileRules([rule('ban', { ips: ['203.0.113.7', '2001:db8::/32'] })]);
  assert.equal(evaluateRules(rules, '/', '203.0.113.7', c)?.status, 403);
  assert.equal(evaluateRules(rules, '/', '::ffff:203.0.113.7', c)?.status, 403);
  assert.equal(evaluateRules(rules, '/', '2001:db8:1::5', c)?.status, 403);
  assert.equal(evaluateRules(rules, '/', '2001:db9::1', c), null);
  assert.equal(evaluateRules(rules, '/', '203.0.113.8', c), null);
  const expired = compileRules([rule('ban', { ips: ['203.0.113.7'], expiresAt: new Date(Date.now() - 1000).toISOString() })]);
  assert.equal(evaluateRules(expired, '/', '203.0.113.7', c), null);
  const disabled = compileRules([{ ...rule('ban', { ips: ['203.0.113.7'] }), enabled: 0 }]);
  assert.equal(evaluateRules(disabled, '/', '203.0.113.7', c), null);
});

test('allow-deny: deny matches refuse; when an allow rule covers a path only its addresses pass', () => {
  const c = new RateCounter();
  const rules = compileRules([
    rule('allow-deny', { action: 'deny', cidrs: ['198.51.100.0/24'] }, null, 'd'),
    rule('allow-deny', { action: 'allow', cidrs: ['10.0.0.0/8', 'fd00::/8'] }, '/admin', 'a'),
  ]);
  assert.equal(evaluateRules(rules, '/', '198.51.100.9', c)?.status, 403);
  assert.equal(evaluateRules(rules, '/', '192.0.2.1', c), null);
  assert.equal(evaluateRules(rules, '/admin/x', '192.0.2.1', c)?.status, 403);
  assert.equal(evaluateRules(rules, '/admin/x', '10.1.2.3', c), null);
  assert.equal(evaluateRules(rules, '/admin', 'fd00::1', c), null);
});

test('rate-limit counts per client address and answers 429 with the seconds to wait', () => {
  const c = new RateCounter();
  const rules = compileRules([rule('rate-limit', { limit: 2, windowSeconds: 10 }, '/api')]);
  const t = 1_000_000;
  assert.equal(evaluateRules(rules, '/api/a', '192.0.2.1', c, t), null);
  assert.equal(evaluateRules(rules, '/api/b', '192.0.2.1', c, t + 1), null);
  const v = evaluateRules(rules, '/api/c', '192.0.2.1', c, t + 2000);
  assert.equal(v?.status, 429);
  assert.equal(v && v.status === 429 ? v.retryAfter : 0, 8);
  assert.equal(evaluateRules(rules, '/api/a', '192.0.2.2', c, t + 2000), null, 'another client has its own count');
  assert.equal(evaluateRules(rules, '/other', '192.0.2.1', c, t + 2000), null, 'uncovered paths do not count');
  assert.equal(evaluateRules(rules, '/api/a', '192.0.2.1', c, t + 10001), null, 'a new window starts');
});

// ---- the proxy itself, against a real upstream on 127.0.0.1

let upstream: http.Server;
let upstreamPort: number;
let edge: EdgeServer;
let edgePort: number;
const requests = new RequestLog(10);
let target: EdgeTarget | null = null;
/** Called when the app's `/hang` response is closed (its request was aborted). */
let hangClosed: (() => void) | null = null;

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const t = setInterval(() => {
        res.write(`chunk ${n}\n`);
        if (++n === 3) {
          clearInterval(t);
          res.end();
        }
      }, 20);
      return;
    }
    if (req.url === '/drop') return void req.socket.destroy();
    if (req.url === '/big') {
      // 4 MiB without Content-Length: more than the client's socket takes at once, so the edge must wait for it to drain.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let left = 64;
      const more = () => {
        while (left > 0) {
          left--;
          if (!res.write(Buffer.alloc(65536, 120))) return void res.once('drain', more);
        }
        res.end();
      };
      return more();
    }
    if (req.url === '/hang') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      res.once('close', () => hangClosed?.());
      return;
    }
    res.setHeader('set-cookie', ['a=1', 'b=2']);
    res.end(JSON.stringify({ url: req.url, xff: req.headers['x-forwarded-for'], host: req.headers['x-forwarded-host'] }));
  });
  upstream.on('upgrade', (req, socket) => {
    const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nX-Saw-Xff: ${req.headers['x-forwarded-for']}\r\n\r\n`);
    socket.on('data', (d) => socket.write(d));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
  edge = new EdgeServer(
    {
      lookup: async (host) => (host === 'app.test' ? target : null),
      upstream: async () => ({ host: '127.0.0.1', port: upstreamPort, key: `127.0.0.1:${upstreamPort}` }),
    },
    requests,
    createLogger('silent'),
  );
  edgePort = (await edge.listen('127.0.0.1', 0)).port;
});

after(async () => {
  await edge.close();
  upstream.close();
});

function get(host: string, path = '/', headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: edgePort, path, headers: { host, ...headers } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
      })
      .on('error', reject);
  });
}

test('the edge proxies by Host, sets X-Forwarded-*, keeps multi-value headers, and streams responses', async () => {
  target = { projectId: 'p1', unavailable: null, rules: [] };
  const r = await get('app.test', '/x?q=1', { 'x-forwarded-for': '6.6.6.6' });
  assert.equal(r.status, 200);
  const j = JSON.parse(r.body);
  assert.equal(j.url, '/x?q=1');
  assert.equal(j.xff, '127.0.0.1', 'a client-sent X-Forwarded-For is not trusted');
  assert.equal(j.host, 'app.test');
  assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
  const s = await get('app.test', '/stream');
  assert.equal(s.body, 'chunk 0\nchunk 1\nchunk 2\n');
  const last = requests.recent('p1', 1)[0]!;
  assert.equal(last.path, '/stream');
  assert.equal(last.bytes, s.body.length);
});

test('a body larger than the client takes at once is streamed whole, and the log counts its bytes', async () => {
  target = { projectId: 'p1', unavailable: null, rules: [] };
  const r = await get('app.test', '/big');
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 64 * 65536);
  assert.equal(requests.recent('p1', 1)[0]!.bytes, 64 * 65536);
});

test('an app that closes the connection before answering gets a 502 page, logged as 502', async () => {
  target = { projectId: 'p1', unavailable: null, rules: [] };
  const r = await get('app.test', '/drop');
  assert.equal(r.status, 502);
  assert.match(r.body, /The app closed the connection before answering/);
  const last = requests.recent('p1', 1)[0]!;
  assert.equal(last.path, '/drop');
  assert.equal(last.status, 502);
});

test('a client that goes away mid-answer aborts the request to the app', async () => {
  target = { projectId: 'p1', unavailable: null, rules: [] };
  const closed = new Promise<void>((resolve) => (hangClosed = resolve));
  await new Promise<void>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: edgePort, path: '/hang', headers: { host: 'app.test' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
  });
  await closed;
  hangClosed = null;
  assert.equal(edge.openConnections('p1'), 0, 'the request no longer counts as open');
});

test('unknown hosts get 404, unavailable projects 503, and both are clear HTML pages', async () => {
  const r = await get('nope.test');
  assert.equal(r.status, 404);
  assert.match(r.body, /No project is served at nope\.test/);
  target = { projectId: 'p1', unavailable: 'This project is disabled.', rules: [] };
  const u = await get('app.test');
  assert.equal(u.status, 503);
  assert.match(u.body, /This project is disabled/);
  target = { projectId: 'p1', unavailable: null, rules: [] };
});

test('WebSocket upgrades pass through the edge both ways', async () => {
  const sock = net.connect(edgePort, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write('GET /ws HTTP/1.1\r\nHost: app.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
  let buf = '';
  await new Promise<void>((resolve) => {
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n\r\n')) resolve();
    });
  });
  assert.match(buf, /^HTTP\/1.1 101/);
  assert.match(buf, /Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
  assert.match(buf, /X-Saw-Xff: 127.0.0.1/);
  buf = '';
  sock.write('ping-frame');
  await new Promise<void>((resolve) => {
    const check = () => (buf.includes('ping-frame') ? resolve() : sock.once('data', (d) => ((buf += d.toString()), check())));
    check();
  });
  sock.destroy();
});

test('the request log keeps the newest entries of each project, oldest first', () => {
  const log = new RequestLog(3);
  const e = (i: number) => ({ ts: String(i), method: 'GET', path: `/${i}`, status: 200, durationMs: 1, ip: '127.0.0.1', bytes: 0 });
  for (let i = 1; i <= 5; i++) log.record('p', e(i));
  assert.deepEqual(log.recent('p', 10).map((x) => x.path), ['/3', '/4', '/5']);
  assert.deepEqual(log.recent('p', 2).map((x) => x.path), ['/4', '/5']);
  assert.deepEqual(log.recent('other'), []);
});
