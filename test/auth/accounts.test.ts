import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

function cookieOf(res: { headers: Headers }): string {
  return (res.headers.get('set-cookie') ?? '').split(';')[0]!;
}

describe('accounts: signup, login, sessions', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('signup creates the user and a personal org owned by them, and signs in with an HttpOnly SameSite=Lax cookie', async () => {
    const res = await server.api().post('/api/auth/signup', { email: 'Alice@Example.test', password: 'correct horse', name: 'Alice' });
    assert.equal(res.status, 201);
    assert.equal(res.body.data.user.email, 'alice@example.test');
    const setCookie = res.headers.get('set-cookie')!;
    assert.match(setCookie, /^berth_session=/);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Lax/);
    const me = await server.api().get('/api/auth/me', { cookie: cookieOf(res) });
    assert.equal(me.status, 200);
    assert.equal(me.body.data.role, 'owner');
    assert.equal(me.body.data.org.isTeam, false);
    assert.deepEqual(me.body.data.orgs.map((o: any) => o.role), ['owner']);
  });

  it('a duplicate signup email is 409 whatever its case', async () => {
    await server.api().post('/api/auth/signup', { email: 'dup@example.test', password: 'password1' });
    const res = await server.api().post('/api/auth/signup', { email: 'DUP@example.test', password: 'password2' });
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'CONFLICT');
  });

  it('a short password is 400 naming password', async () => {
    const res = await server.api().post('/api/auth/signup', { email: 'short@example.test', password: 'abc' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'password');
  });

  it('login with the right password sets a session; a wrong one is 401; passwords are stored as scrypt hashes', async () => {
    const u = await createUser(server);
    const ok = await server.api().post('/api/auth/login', { email: u.email, password: u.password });
    assert.equal(ok.status, 200);
    assert.ok(cookieOf(ok).startsWith('berth_session='));
    const bad = await server.api().post('/api/auth/login', { email: u.email, password: 'wrong-password' });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error.code, 'UNAUTHENTICATED');
    const row = await server.ctx.db.selectFrom('users').select('passwordHash').where('id', '=', u.userId).executeTakeFirstOrThrow();
    assert.match(row.passwordHash!, /^scrypt\$/);
    assert.ok(!row.passwordHash!.includes(u.password));
  });

  it('after 10 failed logins for one address and email, the 11th is 429 with Retry-After, even with the right password', async () => {
    const u = await createUser(server);
    for (let i = 0; i < 10; i++) {
      const r = await server.api().post('/api/auth/login', { email: u.email, password: `nope-${i}-xx` });
      assert.equal(r.status, 401);
    }
    const limited = await server.api().post('/api/auth/login', { email: u.email, password: u.password });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'RATE_LIMITED');
    const retry = Number(limited.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 900, `retry-after ${retry}`);
    // Another email from the same address is not affected.
    const other = await createUser(server);
    assert.equal((await server.api().post('/api/auth/login', { email: other.email, password: other.password })).status, 200);
  });

  it('30 wrong passwords sent at once for one address and email: at most 10 are checked (401), the rest are 429, and then the right one is 429 too', async () => {
    const u = await createUser(server);
    const all = await Promise.all(Array.from({ length: 30 }, (_, i) => server.api().post('/api/auth/login', { email: u.email, password: `burst-${i}-xx` })));
    const statuses = all.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','));
    const checked = statuses.filter((s) => s === 401).length;
    // Each attempt counts the others already recorded, so a burst may even refuse them all: never more than 10 get through.
    assert.ok(checked <= 10, `${checked} attempts were checked: ${statuses.join(',')}`);
    assert.equal((await server.api().post('/api/auth/login', { email: u.email, password: u.password })).status, checked === 10 ? 429 : 200);
  });

  it('logout ends the session', async () => {
    const u = await createUser(server);
    const login = await server.api().post('/api/auth/login', { email: u.email, password: u.password });
    const cookie = cookieOf(login);
    const origin = new URL(server.url).origin;
    const out = await server.api().post('/api/auth/logout', undefined, { cookie, origin });
    assert.equal(out.status, 200);
    assert.match(out.headers.get('set-cookie')!, /Max-Age=0/);
    assert.equal((await server.api().get('/api/auth/me', { cookie })).status, 401);
  });

  it('cookie-authenticated unsafe requests need a matching Origin (CSRF); bearer requests do not', async () => {
    const u = await createUser(server);
    const login = await server.api().post('/api/auth/login', { email: u.email, password: u.password });
    const cookie = cookieOf(login);
    const none = await server.api().post('/api/auth/tokens', { name: 'x' }, { cookie });
    assert.equal(none.status, 403);
    assert.equal(none.body.error.code, 'FORBIDDEN');
    const evil = await server.api().post('/api/auth/tokens', { name: 'x' }, { cookie, origin: 'http://evil.example' });
    assert.equal(evil.status, 403);
    const good = await server.api().post('/api/auth/tokens', { name: 'x' }, { cookie, origin: new URL(server.url).origin });
    assert.equal(good.status, 201);
    const bearer = await server.api(u.token).post('/api/auth/tokens', { name: 'y' });
    assert.equal(bearer.status, 201);
    // Safe methods with a cookie need no Origin.
    assert.equal((await server.api().get('/api/auth/me', { cookie })).status, 200);
  });

  it('with no BERTH_PUBLIC_URL, another loopback name of the same port passes the CSRF check; another port or host does not', async () => {
    const u = await createUser(server);
    const cookie = cookieOf(await server.api().post('/api/auth/login', { email: u.email, password: u.password }));
    const port = new URL(server.url).port;
    const post = (origin: string) => server.api().post('/api/auth/tokens', { name: 'x' }, { cookie, origin });
    assert.equal((await post(`http://localhost:${port}`)).status, 201);
    assert.equal((await post(`http://[::1]:${port}`)).status, 201);
    assert.equal((await post(`http://localhost:${Number(port) + 1}`)).status, 403);
    assert.equal((await post(`https://localhost:${port}`)).status, 403);
    assert.equal((await post(`http://localhost.evil.example:${port}`)).status, 403);
    // With BERTH_PUBLIC_URL set, only its origin passes.
    const pinned = await startTestServer({ env: { BERTH_PUBLIC_URL: 'http://127.0.0.1:1' } });
    try {
      const v = await createUser(pinned);
      const c = cookieOf(await pinned.api().post('/api/auth/login', { email: v.email, password: v.password }));
      const p2 = new URL(pinned.url).port;
      assert.equal((await pinned.api().post('/api/auth/tokens', { name: 'x' }, { cookie: c, origin: `http://localhost:${p2}` })).status, 403);
      assert.equal((await pinned.api().post('/api/auth/tokens', { name: 'x' }, { cookie: c, origin: 'http://127.0.0.1:1' })).status, 201);
    } finally {
      await pinned.close();
    }
  });

  it('switch-org changes the active org of a session to another org of the user only', async () => {
    const u = await createUser(server);
    const team = await createUser(server, { team: true });
    await createUser(server, { orgId: team.orgId, email: u.email, role: 'admin' });
    const stranger = await createUser(server);
    const login = await server.api().post('/api/auth/login', { email: u.email, password: u.password });
    const h = { cookie: cookieOf(login), origin: new URL(server.url).origin };
    const sw = await server.api().post('/api/auth/switch-org', { orgId: team.orgId }, h);
    assert.equal(sw.status, 200);
    assert.equal(sw.body.data.org.id, team.orgId);
    assert.equal(sw.body.data.role, 'admin');
    assert.equal((await server.api().get('/api/auth/me', h)).body.data.org.id, team.orgId);
    const notMine = await server.api().post('/api/auth/switch-org', { orgId: stranger.orgId }, h);
    assert.equal(notMine.status, 404);
    // A token is bound to its org.
    const viaToken = await server.api(u.token).post('/api/auth/switch-org', { orgId: team.orgId });
    assert.equal(viaToken.status, 403);
  });
});
