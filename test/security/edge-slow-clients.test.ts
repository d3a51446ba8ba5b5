/**
 * Finding: slow clients (issue 15, point 5, the edge's part). Slow headers and bodies stayed open for
 * minutes, and enough of them used up the file descriptors of the whole server. The edge now closes
 * a request whose headers take over 30 s, whose body idles 30 s, or that takes over 120 s in all, and
 * holds at most 256 connections per client address (the next one gets a 503). The limits are turned
 * down here (the variables of docs/edge.md) so the test runs in seconds.
 */
process.env.BERTH_EDGE_HEADERS_TIMEOUT_MS = '500';
process.env.BERTH_EDGE_BODY_IDLE_TIMEOUT_MS = '500';
process.env.BERTH_EDGE_REQUEST_TIMEOUT_MS = '2000';
process.env.BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS = '4';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { edgeLimitsFromEnv } from '../../src/edge/limits.js';
import { getRuntime } from '../../src/modules/hosting/host.js';
import { waitFor } from '../support/wait.js';
import { RawConnection, startEdgeApp, type EdgeApp } from './edge-support.js';

let app: EdgeApp;

before(async () => {
  app = await startEdgeApp();
});

after(async () => {
  await app?.close();
});

const openConnections = () => getRuntime(app.server.ctx).edge!.connectionsOf('127.0.0.1');

/** Writes `chunk` every `everyMs` until the server closes the connection or `maxMs` passes; answers the ms it stayed open. */
async function dribble(c: RawConnection, chunk: string, everyMs: number, maxMs: number): Promise<number> {
  const start = Date.now();
  while (!c.closed && Date.now() - start < maxMs) {
    if (!c.socket.destroyed) c.socket.write(chunk);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return Date.now() - start;
}

test('the defaults are the contract\'s: headers 30 s, idle body 30 s, whole request 120 s, 256 connections per address, no trusted proxy', () => {
  const d = edgeLimitsFromEnv({});
  assert.equal(d.headersTimeoutMs, 30_000);
  assert.equal(d.bodyIdleMs, 30_000);
  assert.equal(d.requestTimeoutMs, 120_000);
  assert.equal(d.maxConnectionsPerAddress, 256);
  assert.equal(d.trustedProxies.size, 0);
  assert.throws(() => edgeLimitsFromEnv({ BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS: '0' }), /BERTH_EDGE_MAX_CONNECTIONS_PER_ADDRESS/);
  assert.throws(() => edgeLimitsFromEnv({ BERTH_TRUSTED_PROXIES: 'not-a-cidr' }), /BERTH_TRUSTED_PROXIES/);
});

test('a slowloris header dribble is cut off (408) after the headers timeout', { timeout: 30_000 }, async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.write(`GET / HTTP/1.1\r\nHost: ${app.host}\r\n`);
    const open = await dribble(c, 'X-Slow: 1\r\n', 100, 10_000);
    assert.ok(c.closed, 'the edge closed the connection');
    assert.ok(open < 8000, `closed after ${open} ms, not after the 10 s dribble`);
    assert.match(c.unread(), /^HTTP\/1\.1 408 /);
  } finally {
    c.close();
  }
});

test('a connection that never sends a byte is closed too', { timeout: 30_000 }, async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    await c.waitClosed(8000);
  } finally {
    c.close();
  }
});

test('a request body that stops arriving is cut off after the idle-body timeout', { timeout: 30_000 }, async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.write(`POST /upload HTTP/1.1\r\nHost: ${app.host}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n` + 'x'.repeat(10));
    const started = Date.now();
    await c.waitClosed(8000);
    assert.ok(Date.now() - started < 8000);
  } finally {
    c.close();
  }
});

test('a body that keeps trickling in is cut off after the whole-request timeout', { timeout: 30_000 }, async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.write(`POST /upload HTTP/1.1\r\nHost: ${app.host}\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n`);
    // One byte every 150 ms: never idle for the 0.5 s idle limit, but far slower than the 2 s whole-request limit allows.
    const open = await dribble(c, 'x', 150, 12_000);
    assert.ok(c.closed, 'the edge closed the connection');
    assert.ok(open < 10_000, `closed after ${open} ms`);
  } finally {
    c.close();
  }
});

test('a body that arrives in time is proxied whole', async () => {
  const c = await RawConnection.open(app.edgePort());
  try {
    c.write(`POST /upload HTTP/1.1\r\nHost: ${app.host}\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n\r\n` + 'y'.repeat(10));
    await new Promise((r) => setTimeout(r, 200));
    c.write('y'.repeat(10));
    const r = await c.read();
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).bodyBytes, 20);
  } finally {
    c.close();
  }
});

test('one address holds at most the cap of connections: the next one is answered 503 and closed, and a freed slot is usable again', { timeout: 60_000 }, async () => {
  await waitFor(async () => (await openConnections()) === 0, 'earlier connections to close', 10_000, 50);
  const held: RawConnection[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const c = await RawConnection.open(app.edgePort());
      held.push(c);
      c.send('GET', `/held-${i}`, app.host);
      assert.equal((await c.read()).status, 200);
    }
    assert.equal(await openConnections(), 4);

    const extra = await RawConnection.open(app.edgePort());
    try {
      extra.send('GET', '/one-too-many', app.host);
      const r = await extra.read();
      assert.equal(r.status, 503);
      assert.match(r.body, /Too many connections/);
      await extra.waitClosed(5000);
    } finally {
      extra.close();
    }

    held.pop()!.close();
    await waitFor(async () => (await openConnections()) === 3, 'the freed connection to be counted out', 5000, 20);
    const again = await RawConnection.open(app.edgePort());
    try {
      again.send('GET', '/after-free', app.host);
      assert.equal((await again.read()).status, 200);
    } finally {
      again.close();
    }
  } finally {
    for (const c of held) c.close();
  }
  await waitFor(async () => (await openConnections()) === 0, 'all connections to close', 5000, 20);
  const seen = await app.seen();
  assert.ok(!seen.includes('/one-too-many'), 'the refused request never reached the app');
});
