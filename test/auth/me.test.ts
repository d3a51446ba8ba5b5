import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createGrant, createProject, createTeam, createToken, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/**
 * `GET /api/auth/me` keeps its answer as the route's JSON text beside the cached answer, per
 * credential (src/modules/auth/auth.me.ts `meJson`): what it sends from there must be what a fresh
 * read sends, and every change that the cached answer depends on must show in the next one.
 */
describe('GET /api/auth/me from its cache', () => {
  let server: TestServer;
  let team: TestOrg;
  before(async () => {
    server = await startTestServer();
    team = await createTeam(server);
  });
  after(() => server.close());

  it('sends the same bytes and content type as the answer it read from the database', async () => {
    const u = await createUser(server);
    const first = await server.api(u.token).get('/api/auth/me');
    const again = await server.api(u.token).get('/api/auth/me');
    assert.equal(first.status, 200, first.text);
    assert.equal(again.status, 200);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(again.headers.get('content-type'), first.headers.get('content-type'));
    assert.deepEqual(Object.keys(again.body.data), ['user', 'org', 'role', 'orgs', 'grants']);
    assert.equal(again.body.data.user.email, u.email);
  });

  it("shows a role changed in another of the user's orgs in the next answer", async () => {
    const u = await createUser(server);
    await createUser(server, { orgId: team.orgId, role: 'member', email: u.email });
    const roleIn = async (orgId: string) => (await server.api(u.token).get('/api/auth/me')).body.data.orgs.find((o: { id: string }) => o.id === orgId)?.role;
    assert.equal(await roleIn(team.orgId), 'member');
    assert.equal(await roleIn(team.orgId), 'member'); // from the cache now
    const r = await server.api(team.owner.token).patch(`/api/permissions/members/${u.userId}`, { role: 'admin' });
    assert.equal(r.status, 200, r.text);
    assert.equal(await roleIn(team.orgId), 'admin');
  });

  it("two credentials of one restricted member, used in turn, each get the member's grants, and a new grant shows in both", async () => {
    const project = await createProject(server, team.owner);
    const m = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(server, m, 'project', project.id, ['read']);
    const second = await createToken(server, m, { name: 'second' });
    const grantsOf = async (token: string) => (await server.api(token).get('/api/auth/me')).body.data.grants.map((g: { resourceType: string }) => g.resourceType).sort();
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await grantsOf(m.token), ['project']);
      assert.deepEqual(await grantsOf(second.token), ['project']);
    }
    await createGrant(server, m, 'audit', '*', ['read']);
    assert.deepEqual(await grantsOf(m.token), ['audit', 'project']);
    assert.deepEqual(await grantsOf(second.token), ['audit', 'project']);
  });
});
