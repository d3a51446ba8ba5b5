/**
 * Issue 15, point 7 (trusted proxies): a client must not choose its own address by writing
 * `X-Forwarded-For`, or it picks a fresh login rate-limit bucket per attempt and hides in the
 * records. Only requests from BERTH_TRUSTED_PROXIES (none by default) set the client address
 * through the header, on the API as on the edge (src/lib/trusted-proxies.ts, shared with it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { clientAddress, parseTrustedProxies } from '../../src/lib/trusted-proxies.js';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

const MAX_FAILURES = 10;

async function failuresOf(server: TestServer, email: string): Promise<string[]> {
  const rows = await server.ctx.db.selectFrom('loginFailures').select('ip').where('email', '=', email.toLowerCase()).execute();
  return rows.map((r) => r.ip);
}

const login = (server: TestServer, email: string, xff?: string) =>
  server.api().post('/api/auth/login', { email, password: 'not-the-password' }, xff ? { 'x-forwarded-for': xff } : {});

describe('X-Forwarded-For from an untrusted client (no BERTH_TRUSTED_PROXIES)', () => {
  let server: TestServer;
  let user: TestUser;
  before(async () => {
    server = await startTestServer();
    user = await createUser(server);
  });
  after(() => server.close());

  it('a spoofed header does not dodge the login rate limit and is not the recorded address', async () => {
    for (let i = 0; i < MAX_FAILURES; i++) {
      const res = await login(server, user.email, `198.51.100.${i + 1}`);
      assert.equal(res.status, 401, res.text);
    }
    const limited = await login(server, user.email, '198.51.100.200');
    assert.equal(limited.status, 429, limited.text);
    assert.equal(limited.body.error.code, 'RATE_LIMITED');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    const recorded = await failuresOf(server, user.email);
    assert.equal(recorded.length, MAX_FAILURES);
    assert.deepEqual([...new Set(recorded)], ['127.0.0.1'], 'the socket address is recorded, not the header');
  });
});

describe('X-Forwarded-For from a trusted proxy (BERTH_TRUSTED_PROXIES=127.0.0.1)', () => {
  let server: TestServer;
  let user: TestUser;
  before(async () => {
    server = await startTestServer({ env: { BERTH_TRUSTED_PROXIES: '127.0.0.1' } });
    user = await createUser(server);
  });
  after(() => server.close());

  it('the forwarded address is the client: recorded, and rate-limited per client behind the proxy', async () => {
    for (let i = 0; i < MAX_FAILURES; i++) assert.equal((await login(server, user.email, '203.0.113.7')).status, 401);
    assert.equal((await login(server, user.email, '203.0.113.7')).status, 429);
    // Another client behind the same proxy has its own bucket.
    assert.equal((await login(server, user.email, '203.0.113.8')).status, 401);
    const recorded = await failuresOf(server, user.email);
    assert.equal(recorded.filter((ip) => ip === '203.0.113.7').length, MAX_FAILURES);
    assert.ok(recorded.includes('203.0.113.8'));
    assert.ok(!recorded.includes('127.0.0.1'));
  });

  it('the client is the rightmost untrusted hop: a value the client prepended is ignored', async () => {
    const other = await createUser(server);
    // The client wrote "6.6.6.6"; the proxy appended the address it saw.
    assert.equal((await login(server, other.email, '6.6.6.6, 203.0.113.9')).status, 401);
    assert.deepEqual(await failuresOf(server, other.email), ['203.0.113.9']);
  });
});

describe('clientAddress (the one rule of the API and the edge)', () => {
  const trusted = parseTrustedProxies('10.0.0.0/8, 127.0.0.1');
  it('walks X-Forwarded-For from the right past trusted proxies only', () => {
    assert.equal(clientAddress('8.8.8.8', '1.2.3.4', trusted), '8.8.8.8');
    assert.equal(clientAddress('127.0.0.1', '1.2.3.4', trusted), '1.2.3.4');
    assert.equal(clientAddress('::ffff:127.0.0.1', '6.6.6.6, 1.2.3.4, 10.1.1.1', trusted), '1.2.3.4');
    assert.equal(clientAddress('127.0.0.1', 'junk', trusted), '127.0.0.1');
    assert.equal(clientAddress('127.0.0.1', ['5.5.5.5', '[2001:db8::1]:443'], trusted), '2001:db8::1');
    assert.equal(clientAddress('127.0.0.1', '1.2.3.4', parseTrustedProxies('')), '127.0.0.1');
    assert.throws(() => parseTrustedProxies('not-a-cidr'));
  });
});
