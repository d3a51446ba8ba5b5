/**
 * Finding: upgrade tunnel (issue 15, point 1). The edge used to turn a connection into a raw tunnel as
 * soon as a request carried `Upgrade:`, whatever the app answered. When the app answered 200, every
 * later request on that connection went straight to the app: no deny/allow/ban/rate-limit rule, the
 * client's own X-Forwarded-For, nothing in the request log. Now only a 101 makes a tunnel.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/wait.js';
import { RawConnection, rawRequest, startEdgeApp, type EdgeApp } from './edge-support.js';

let app: EdgeApp;

before(async () => {
  app = await startEdgeApp();
  await app.addRule({ kind: 'allow-deny', action: 'deny', cidrs: ['0.0.0.0/0', '::/0'], path: '/admin' });
  await app.addRule({ kind: 'rate-limit', limit: 2, windowSeconds: 3600, path: '/limited' });
  await waitFor(async () => (await rawRequest(app.edgePort(), 'GET', '/admin', app.host)).status === 403, 'the deny rule to apply', 3000, 50);
});

after(async () => {
  await app?.close();
});

const upgradeHeaders = { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' };

test('an upgrade the app answers with 200 leaves an HTTP connection whose later requests are all checked, re-addressed and logged', async () => {
  const seenBefore = (await app.seen()).length;
  const c = await RawConnection.open(app.edgePort());
  try {
    c.send('GET', '/not-a-socket', app.host, upgradeHeaders);
    const first = await c.read();
    assert.equal(first.status, 200);
    assert.equal(JSON.parse(first.body).upgraded, false, 'the app answered the upgrade request itself, with a 200');

    // The same connection: a denied path is refused by the edge and never reaches the app.
    c.send('GET', '/admin', app.host, { 'X-Forwarded-For': '10.9.9.9' });
    const denied = await c.read();
    assert.equal(denied.status, 403, `the deny rule holds on the same connection: ${denied.body.slice(0, 200)}`);
    assert.match(denied.body, /Forbidden/);

    // A rate limit counts these requests too.
    const limited: number[] = [];
    for (let i = 0; i < 3; i++) {
      c.send('GET', '/limited', app.host);
      limited.push((await c.read()).status);
    }
    assert.deepEqual(limited, [200, 200, 429]);

    // The app sees the edge's X-Forwarded-For, not the client's.
    c.send('GET', '/whoami', app.host, { 'X-Forwarded-For': '6.6.6.6', 'X-Real-IP': '6.6.6.6', Forwarded: 'for=6.6.6.6' });
    const who = JSON.parse((await c.read()).body);
    assert.equal(who.url, '/whoami');
    assert.equal(who.xff, '127.0.0.1');
    assert.equal(who.xri, '127.0.0.1');
    assert.equal(who.forwarded, null);

    // A second upgrade request on the kept connection is handled like the first.
    c.send('GET', '/again', app.host, upgradeHeaders);
    assert.equal((await c.read()).status, 200);
    c.send('GET', '/admin/x', app.host);
    assert.equal((await c.read()).status, 403);
  } finally {
    c.close();
  }

  const seen = (await app.seen()).slice(seenBefore);
  assert.ok(!seen.some((u) => u.startsWith('/admin')), `the app never saw /admin: ${JSON.stringify(seen)}`);
  const log = await app.requestLog();
  const paths = log.map((e) => `${e.status} ${e.path}`);
  for (const want of ['200 /not-a-socket', '403 /admin', '429 /limited', '200 /whoami', '200 /again', '403 /admin/x']) {
    assert.ok(paths.includes(want), `the request log has "${want}": ${JSON.stringify(paths)}`);
  }
  assert.ok(log.every((e) => e.ip === '127.0.0.1'));
});

test('pipelined requests sent right behind a refused upgrade are parsed as HTTP and checked', async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    let head = `GET /pipelined HTTP/1.1\r\nHost: ${app.host}\r\n`;
    for (const [k, v] of Object.entries(upgradeHeaders)) head += `${k}: ${v}\r\n`;
    c.write(`${head}\r\nGET /admin HTTP/1.1\r\nHost: ${app.host}\r\n\r\n`);
    assert.equal((await c.read()).status, 200);
    assert.equal((await c.read()).status, 403);
  } finally {
    c.close();
  }
});

test('an upgrade to a denied path is refused before the app sees it', async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.send('GET', '/admin/ws', app.host, upgradeHeaders);
    assert.equal((await c.read()).status, 403);
  } finally {
    c.close();
  }
  assert.ok(!(await app.seen()).includes('/admin/ws'));
});

test('a 101 still makes a WebSocket tunnel both ways', async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.send('GET', '/ws', app.host, upgradeHeaders);
    const r = await c.read();
    assert.equal(r.status, 101);
    assert.equal(r.headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    const got: Buffer[] = [];
    c.socket.on('data', (d: Buffer) => got.push(d));
    c.write('echo-me');
    await waitFor(async () => Buffer.concat(got).toString().includes('echo-me'), 'the echo', 5000, 20);
  } finally {
    c.close();
  }
  const log = await app.requestLog();
  assert.ok(log.some((e) => e.path === '/ws' && e.status === 101));
});
