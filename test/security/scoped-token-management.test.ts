/**
 * Security review, issue 15 point 7: a token narrowed with `scopes` (say `project:read`, handed to a CI
 * job) could still list every token of its user and revoke them. Token management now needs a scope
 * that covers it: `token:read` to list, `token:write` to revoke another token (`token:admin` both).
 * Sessions and unscoped tokens keep full rights; any token may revoke itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('scoped tokens and token management', () => {
  let server: TestServer;
  let owner: TestUser;

  async function mint(scopes?: string[]): Promise<{ id: string; token: string }> {
    const res = await server.api(owner.token).post('/api/auth/tokens', { name: `t-${scopes?.join(',') ?? 'full'}`, ...(scopes ? { scopes } : {}) });
    assert.equal(res.status, 201, res.text);
    return { id: res.body.data.id, token: res.body.data.token };
  }

  before(async () => {
    server = await startTestServer();
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
  });

  it('a token scoped to project:read gets 403 listing or revoking the other tokens; they keep working', async () => {
    const ci = await mint(['project:read']);
    const victim = await mint();
    const api = server.api(ci.token);
    const list = await api.get('/api/auth/tokens');
    assert.equal(list.status, 403);
    assert.equal(list.body.error.code, 'FORBIDDEN');
    assert.match(list.body.error.message, /token:read/);
    const del = await api.delete(`/api/auth/tokens/${victim.id}`);
    assert.equal(del.status, 403);
    assert.match(del.body.error.message, /token:write/);
    // An id that does not exist answers the same 403 (no probing of ids).
    assert.equal((await api.delete('/api/auth/tokens/tok_doesnotexist0000000')).status, 403);
    assert.equal((await server.api(victim.token).get('/api/auth/me')).status, 200);
    // What the scope covers still works.
    assert.equal((await api.get('/api/projects')).status, 200);
  });

  it('an unscoped token lists and revokes; a session too', async () => {
    const full = await mint();
    const other = await mint(['project:read']);
    const list = await server.api(full.token).get('/api/auth/tokens');
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((t: { id: string }) => t.id === other.id));
    assert.equal((await server.api(full.token).delete(`/api/auth/tokens/${other.id}`)).status, 200);
    assert.equal((await server.api(other.token).get('/api/projects')).status, 401);

    const login = await server.api().post('/api/auth/login', { email: owner.email, password: owner.password });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const viaSession = await server.api().get('/api/auth/tokens', { cookie });
    assert.equal(viaSession.status, 200);
    assert.ok(viaSession.body.data.length >= 3);
  });

  it('token:read lists but does not revoke others; token:write (or token:admin) revokes', async () => {
    const reader = await mint(['token:read']);
    const writer = await mint(['token:write']);
    const admin = await mint(['token:admin', 'project:read']);
    const target1 = await mint();
    const target2 = await mint();
    assert.equal((await server.api(reader.token).get('/api/auth/tokens')).status, 200);
    assert.equal((await server.api(reader.token).delete(`/api/auth/tokens/${target1.id}`)).status, 403);
    assert.equal((await server.api(writer.token).get('/api/auth/tokens')).status, 200);
    assert.equal((await server.api(writer.token).delete(`/api/auth/tokens/${target1.id}`)).status, 200);
    assert.equal((await server.api(admin.token).delete(`/api/auth/tokens/${target2.id}`)).status, 200);
    assert.equal((await server.api(target2.token).get('/api/auth/me')).status, 401);
  });

  it('a scoped token may revoke itself', async () => {
    const ci = await mint(['project:read']);
    const self = await server.api(ci.token).delete(`/api/auth/tokens/${ci.id}`);
    assert.equal(self.status, 200);
    assert.ok(self.body.data.revokedAt);
    assert.equal((await server.api(ci.token).get('/api/projects')).status, 401);
  });
});
