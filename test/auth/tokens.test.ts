import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../src/lib/crypto.js';
import { testClock } from '../support/clock.js';
import { createUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('personal access tokens', () => {
  let server: TestServer;
  const clock = testClock();
  before(async () => {
    server = await startTestServer({ clock });
  });
  after(() => server.close());

  it('are shown once, stored only as a hash, listed without secrets, and work as bearer credentials', async () => {
    const u = await createUser(server);
    const res = await server.api(u.token).post('/api/auth/tokens', { name: 'ci', expiresInDays: 30 });
    assert.equal(res.status, 201);
    const t = res.body.data;
    assert.match(t.token, /^berth_pat_/);
    assert.ok(t.expiresAt);
    assert.equal(t.name, 'ci');
    assert.ok(t.token.startsWith(t.prefix));
    const row = await server.ctx.db.selectFrom('apiTokens').selectAll().where('id', '=', t.id).executeTakeFirstOrThrow();
    assert.equal(row.tokenHash, sha256Hex(t.token));
    assert.ok(!JSON.stringify(row).includes(t.token));
    const list = await server.api(u.token).get('/api/auth/tokens');
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes(t.token));
    assert.ok(list.body.data.some((x: any) => x.id === t.id && x.prefix === t.prefix));
    const me = await server.api(t.token).get('/api/auth/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.data.user.id, u.userId);
  });

  it('a request with a token records the token\'s last-used time', async () => {
    const u = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'used' })).body.data;
    await server.api(t.token).get('/api/auth/me');
    const row = await server.ctx.db.selectFrom('apiTokens').select('lastUsedAt').where('id', '=', t.id).executeTakeFirstOrThrow();
    assert.ok(row.lastUsedAt);
  });

  it('a revoked token is 401 at once; revoking someone else\'s token is 404', async () => {
    const u = await createUser(server);
    const other = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'temp' })).body.data;
    assert.equal((await server.api(other.token).delete(`/api/auth/tokens/${t.id}`)).status, 404);
    const del = await server.api(u.token).delete(`/api/auth/tokens/${t.id}`);
    assert.equal(del.status, 200);
    assert.ok(del.body.data.revokedAt);
    const after = await server.api(t.token).get('/api/auth/me');
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'UNAUTHENTICATED');
  });

  it('a token works until its expiry, and is 401 from then on (also where it was already used and cached)', async () => {
    const u = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'old', expiresInDays: 1 })).body.data;
    assert.equal((await server.api(t.token).get('/api/auth/me')).status, 200);
    clock.advance(24 * 3600 * 1000 - 60_000);
    assert.equal((await server.api(t.token).get('/api/auth/me')).status, 200, 'a minute before its expiry');
    clock.advance(60_000 + 1000);
    assert.equal((await server.api(t.token).get('/api/auth/me')).status, 401);
  });

  it('a token this server has resolved once is answered from its cache without a promise; a revoked one is null again', async () => {
    const u = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'cached' })).body.data;
    const auth = server.ctx.ports.auth;
    const first = auth.actorFromBearer(server.ctx, t.token);
    assert.ok(first instanceof Promise, 'the first lookup reads the database');
    assert.equal((await first)?.userId, u.userId);
    const second = auth.actorFromBearer(server.ctx, t.token);
    assert.ok(!(second instanceof Promise), 'the second comes from the cache');
    assert.equal(second?.userId, u.userId);
    assert.equal((await server.api(u.token).delete(`/api/auth/tokens/${t.id}`)).status, 200);
    assert.equal(await auth.actorFromBearer(server.ctx, t.token), null);
  });

  it('an unknown token of the right shape is 401', async () => {
    assert.equal((await server.api('berth_pat_' + 'A'.repeat(43)).get('/api/auth/me')).status, 401);
  });

  it('a token of a user removed from its org by another instance stops working as soon as that instance says so', async () => {
    const owner = await createUser(server, { team: true });
    const m = await createUser(server, { orgId: owner.orgId, role: 'member' });
    assert.equal((await server.api(m.token).get('/api/auth/me')).status, 200);
    // A direct database write and its access change arriving on the bus stand for another instance
    // sharing the database (test/scale/shared-state.test.ts runs two servers).
    await server.ctx.db.deleteFrom('memberships').where('orgId', '=', owner.orgId).where('userId', '=', m.userId).execute();
    server.ctx.bus.inject('access', { orgId: owner.orgId, userId: m.userId }, 'ins_another');
    assert.equal((await server.api(m.token).get('/api/auth/me')).status, 401);
  });

  it('a token revoked through the API is refused on the very next request, even right after use', async () => {
    const u = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'hot' })).body.data;
    assert.equal((await server.api(t.token).get('/api/auth/me')).status, 200);
    assert.equal((await server.api(u.token).delete(`/api/auth/tokens/${t.id}`)).status, 200);
    assert.equal((await server.api(t.token).get('/api/auth/me')).status, 401);
  });

  it('scopes must be permission tags, and a scoped token cannot mint a wider one', async () => {
    const u = await createUser(server);
    const bad = await server.api(u.token).post('/api/auth/tokens', { name: 's', scopes: ['project:read', 'nonsense'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'scopes.1');
    const scoped = (await server.api(u.token).post('/api/auth/tokens', { name: 's', scopes: ['project:read'] })).body.data;
    assert.deepEqual(scoped.scopes, ['project:read']);
    const wider = await server.api(scoped.token).post('/api/auth/tokens', { name: 'w', scopes: ['project:write'] });
    assert.equal(wider.status, 403);
    const inherit = await server.api(scoped.token).post('/api/auth/tokens', { name: 'i' });
    assert.equal(inherit.status, 201);
    assert.deepEqual(inherit.body.data.scopes, ['project:read']);
  });

  it('orgId binds a new token to another org of the user (berth switch); an org the user is not in is 404 naming orgId', async () => {
    const u = await createUser(server);
    const team = await createUser(server, { team: true });
    await createUser(server, { email: u.email, orgId: team.orgId, role: 'member' });
    const res = await server.api(u.token).post('/api/auth/tokens', { name: 'cli in the team', orgId: team.orgId });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.orgId, team.orgId);
    const me = await server.api(res.body.data.token).get('/api/auth/me');
    assert.equal(me.body.data.org.id, team.orgId);
    assert.equal(me.body.data.role, 'member');
    const stranger = await createUser(server);
    const refused = await server.api(u.token).post('/api/auth/tokens', { name: 'not mine', orgId: stranger.orgId });
    assert.equal(refused.status, 404);
    assert.equal(refused.body.error.field, 'orgId');
    // A scoped token's mint in another org keeps its scopes.
    const scoped = (await server.api(u.token).post('/api/auth/tokens', { name: 'narrow', scopes: ['project:read'] })).body.data.token;
    const minted = await server.api(scoped).post('/api/auth/tokens', { name: 'narrow there', orgId: team.orgId });
    assert.equal(minted.status, 201, minted.text);
    assert.deepEqual(minted.body.data.scopes, ['project:read']);
  });

  it('token creation and revocation are written to the audit log', async () => {
    const u = await createUser(server);
    const t = (await server.api(u.token).post('/api/auth/tokens', { name: 'audited' })).body.data;
    await server.api(u.token).delete(`/api/auth/tokens/${t.id}`);
    const events = await server.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', t.id).execute();
    assert.deepEqual(events.map((e) => e.action).sort(), ['token.create', 'token.revoke']);
    assert.ok(!JSON.stringify(events).includes(t.token));
  });
});
