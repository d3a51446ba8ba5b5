/**
 * Finding: X-Forwarded-For trusted from anyone (issue 15, point 7, the edge's part). Only a request
 * whose socket address is listed in BERTH_TRUSTED_PROXIES may name the client through X-Forwarded-For
 * (the right-most address that is not a trusted proxy); any other request's client is its socket
 * address, for rules, bans, rate limits and the request log, and the app gets the edge's own
 * X-Forwarded-For and X-Real-IP. Two servers: one with the default (no trusted proxy), one that trusts
 * loopback (where this test's requests come from).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { getRuntime } from '../../src/modules/hosting/host.js';
import { clientAddress, parseTrustedProxies } from '../../src/lib/trusted-proxies.js';
import { waitFor } from '../support/wait.js';
import { RawConnection, rawRequest, startEdgeApp, type EdgeApp } from './edge-support.js';

let plain: EdgeApp;
let behindProxy: EdgeApp;

before(async () => {
  delete process.env.BERTH_TRUSTED_PROXIES;
  plain = await startEdgeApp();
  // The edge reads the variable when it starts.
  process.env.BERTH_TRUSTED_PROXIES = '127.0.0.0/8, ::1';
  try {
    behindProxy = await startEdgeApp();
  } finally {
    delete process.env.BERTH_TRUSTED_PROXIES;
  }
  for (const app of [plain, behindProxy]) {
    await app.addRule({ kind: 'ban', ips: ['203.0.113.9'] });
    await app.addRule({ kind: 'rate-limit', limit: 2, windowSeconds: 3600, path: '/counted' });
  }
  await waitFor(async () => (await rawRequest(behindProxy.edgePort(), 'GET', '/', behindProxy.host, { 'X-Forwarded-For': '203.0.113.9' })).status === 403, 'the ban to apply', 3000, 50);
});

after(async () => {
  await plain?.close();
  await behindProxy?.close();
});

const whoami = async (app: EdgeApp, headers: Record<string, string>) => {
  const r = await rawRequest(app.edgePort(), 'GET', '/whoami', app.host, headers);
  return { status: r.status, seen: r.status === 200 ? JSON.parse(r.body) : null };
};

test('by default X-Forwarded-For is nobody\'s word: the socket address is the client for bans, limits, the app and the log', async () => {
  const forged = { 'X-Forwarded-For': '198.51.100.1', 'X-Real-IP': '198.51.100.1', Forwarded: 'for=198.51.100.1', 'X-Forwarded-Proto': 'https' };
  const r = await whoami(plain, forged);
  assert.equal(r.status, 200);
  assert.equal(r.seen.xff, '127.0.0.1');
  assert.equal(r.seen.xri, '127.0.0.1');
  assert.equal(r.seen.forwarded, null);
  assert.equal(r.seen.proto, 'http');

  // A banned address cannot get in by naming another, nor be banned by someone naming it.
  assert.equal((await whoami(plain, { 'X-Forwarded-For': '203.0.113.9' })).status, 200);

  // Rate limits count the socket address, whatever each request claims.
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await rawRequest(plain.edgePort(), 'GET', '/counted', plain.host, { 'X-Forwarded-For': `192.0.2.${i + 1}` })).status);
  assert.deepEqual(statuses, [200, 200, 429]);

  const log = await plain.requestLog();
  assert.ok(log.length > 0 && log.every((e) => e.ip === '127.0.0.1'), JSON.stringify(log.map((e) => e.ip)));
});

test('from a trusted proxy, the right-most untrusted X-Forwarded-For address is the client', async () => {
  const one = await whoami(behindProxy, { 'X-Forwarded-For': '198.51.100.7' });
  assert.equal(one.seen.xff, '198.51.100.7', 'the app is sent the resolved client only');
  assert.equal(one.seen.xri, '198.51.100.7');

  // Trusted hops on the right are skipped; what a client wrote on the left proves nothing.
  const chain = await whoami(behindProxy, { 'X-Forwarded-For': '6.6.6.6, 198.51.100.8, 127.0.0.9' });
  assert.equal(chain.seen.xff, '198.51.100.8');

  // A banned client behind the proxy is refused, even when it prepends another address.
  assert.equal((await whoami(behindProxy, { 'X-Forwarded-For': '203.0.113.9' })).status, 403);
  assert.equal((await whoami(behindProxy, { 'X-Forwarded-For': '198.51.100.1, 203.0.113.9' })).status, 403);
  assert.equal((await whoami(behindProxy, { 'X-Forwarded-For': '203.0.113.9, 198.51.100.1' })).status, 200, 'the left-most entry is not the client');

  // Rate limits count per resolved client.
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 3; i++) a.push((await rawRequest(behindProxy.edgePort(), 'GET', '/counted', behindProxy.host, { 'X-Forwarded-For': '198.51.100.20' })).status);
  for (let i = 0; i < 2; i++) b.push((await rawRequest(behindProxy.edgePort(), 'GET', '/counted', behindProxy.host, { 'X-Forwarded-For': '198.51.100.21' })).status);
  assert.deepEqual(a, [200, 200, 429]);
  assert.deepEqual(b, [200, 200]);

  // A malformed entry stops the walk at the proxy itself; no header: the proxy is the client.
  assert.equal((await whoami(behindProxy, { 'X-Forwarded-For': '198.51.100.1, not-an-ip' })).seen.xff, '127.0.0.1');
  assert.equal((await whoami(behindProxy, {})).seen.xff, '127.0.0.1');

  // A trusted proxy's X-Forwarded-Proto is passed on.
  assert.equal((await whoami(behindProxy, { 'X-Forwarded-For': '198.51.100.7', 'X-Forwarded-Proto': 'https' })).seen.proto, 'https');

  const log = await behindProxy.requestLog();
  assert.ok(log.some((e) => e.ip === '198.51.100.7' && e.path === '/whoami'));
  assert.ok(log.some((e) => e.ip === '203.0.113.9' && e.status === 403));
});

test('upgrade requests resolve the client the same way', async () => {
  const headers = { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' };
  for (const [app, want] of [
    [behindProxy, 403],
    [plain, 101],
  ] as const) {
    const c = await RawConnection.open(app.edgePort());
    try {
      c.send('GET', '/ws', app.host, { ...headers, 'X-Forwarded-For': '203.0.113.9' });
      assert.equal((await c.read()).status, want);
    } finally {
      c.close();
    }
  }
});

test('connections from a trusted proxy are not held to the per-address cap', async () => {
  const c = await RawConnection.open(behindProxy.edgePort());
  try {
    c.send('GET', '/', behindProxy.host);
    assert.equal((await c.read()).status, 200);
    assert.equal(await getRuntime(behindProxy.server.ctx).edge!.connectionsOf('127.0.0.1'), 0);
  } finally {
    c.close();
  }
});

test('the shared parser: CIDRs and addresses, junk refused; clientAddress walks right to left', () => {
  assert.throws(() => parseTrustedProxies('10.0.0.0/8, nonsense'), /BERTH_TRUSTED_PROXIES/);
  const none = parseTrustedProxies(undefined);
  assert.equal(clientAddress('::ffff:10.1.1.1', '198.51.100.1', none), '10.1.1.1');
  const t = parseTrustedProxies('10.0.0.0/8,fd00::/8');
  assert.equal(clientAddress('10.0.0.2', '198.51.100.1, 10.0.0.3', t), '198.51.100.1');
  assert.equal(clientAddress('192.0.2.5', '198.51.100.1', t), '192.0.2.5', 'an untrusted socket is its own client');
  assert.equal(clientAddress('fd00::2', '[2001:db8::1]:443', t), '2001:db8::1');
});
