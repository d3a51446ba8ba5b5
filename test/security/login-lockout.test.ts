/**
 * Security review, issue 15 point 7: after 10 failed logins for one (client address, email) pair the
 * pair was locked for 15 minutes, the right password included, so anyone who knew a victim's email and
 * shared (or, before BERTH_TRUSTED_PROXIES, could claim) the victim's address could lock the victim out.
 * A client that signed in to the account before carries a device cookie and is counted on its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

function cookies(res: { headers: Headers }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const i = pair!.indexOf('=');
    out[pair!.slice(0, i)] = pair!.slice(i + 1);
  }
  return out;
}

describe('login lockout', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
  });

  it("an attacker's wrong attempts end in 429 with Retry-After; the victim's right password still signs in from a browser where the victim signed in before", async () => {
    const victim = await createUser(server);
    const api = server.api();
    // The victim signed in earlier from this browser: the answer sets the session and a device cookie.
    const first = await api.post('/api/auth/login', { email: victim.email, password: victim.password });
    assert.equal(first.status, 200);
    const set = cookies(first);
    assert.ok(set.berth_session);
    assert.ok(set.berth_device, 'a device cookie is set');
    assert.match(first.headers.getSetCookie().find((c) => c.startsWith('berth_device='))!, /Path=\/api\/auth\/login; HttpOnly; SameSite=Strict/);
    // The session cookie is still the first one (the CLI reads the first).
    assert.match(first.headers.get('set-cookie')!, /^berth_session=/);

    // The attacker, from the same address, knows only the email.
    for (let i = 0; i < 10; i++) {
      assert.equal((await api.post('/api/auth/login', { email: victim.email, password: `guess-${i}-xxxx` })).status, 401);
    }
    const locked = await api.post('/api/auth/login', { email: victim.email, password: 'guess-10-xxxx' });
    assert.equal(locked.status, 429);
    assert.equal(locked.body.error.code, 'RATE_LIMITED');
    const retry = Number(locked.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 900, `retry-after ${retry}`);
    // A made-up or another account's device cookie does not help the attacker.
    const other = await createUser(server);
    const otherDevice = cookies(await api.post('/api/auth/login', { email: other.email, password: other.password })).berth_device!;
    for (const forged of ['abc.123.def', otherDevice, `${set.berth_device}x`]) {
      const r = await api.post('/api/auth/login', { email: victim.email, password: 'guess-11-xxxx' }, { cookie: `berth_device=${forged}` });
      assert.equal(r.status, 429, forged);
    }
    // Without the device cookie, the pair stays locked for the right password too (contract section 2).
    assert.equal((await api.post('/api/auth/login', { email: victim.email, password: victim.password })).status, 429);

    // The victim, with the device cookie, signs in.
    const victimLogin = await api.post('/api/auth/login', { email: victim.email, password: victim.password }, { cookie: `berth_device=${set.berth_device}` });
    assert.equal(victimLogin.status, 200, victimLogin.text);
    const session = cookies(victimLogin).berth_session!;
    assert.equal((await api.get('/api/auth/me', { cookie: `berth_session=${session}` })).body.data.user.email, victim.email);
  });

  it('a device is limited on its own: 10 wrong passwords with its cookie lock that device, not the others', async () => {
    const u = await createUser(server);
    const api = server.api();
    const deviceA = cookies(await api.post('/api/auth/login', { email: u.email, password: u.password })).berth_device!;
    const deviceB = cookies(await api.post('/api/auth/login', { email: u.email, password: u.password })).berth_device!;
    for (let i = 0; i < 10; i++) {
      assert.equal((await api.post('/api/auth/login', { email: u.email, password: `wrong-${i}-xxxx` }, { cookie: `berth_device=${deviceA}` })).status, 401);
    }
    const lockedA = await api.post('/api/auth/login', { email: u.email, password: u.password }, { cookie: `berth_device=${deviceA}` });
    assert.equal(lockedA.status, 429);
    assert.ok(Number(lockedA.headers.get('retry-after')) > 0);
    assert.equal((await api.post('/api/auth/login', { email: u.email, password: u.password }, { cookie: `berth_device=${deviceB}` })).status, 200);
    // The device's failures did not count against the address either.
    assert.equal((await api.post('/api/auth/login', { email: u.email, password: u.password })).status, 200);
  });
});
