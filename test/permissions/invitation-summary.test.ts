/**
 * What the invitation link's page reads before anyone signs in (GET invitations/:id/summary, public:
 * the org's name and who invited, nothing else), and what the dashboard hides actions by (the
 * caller's own grants in /api/auth/me).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomString } from '../../src/lib/ids.js';
import { createGrant, createProject, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { testClock } from '../support/clock.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('permissions: the invitation summary and the caller\'s own grants', () => {
  let server: TestServer;
  let team: TestOrg;
  let orgName: string;
  const clock = testClock();
  before(async () => {
    server = await startTestServer({ clock });
    team = await createTeam(server);
    orgName = (await server.api(team.owner.token).get('/api/permissions/org-meta')).body.data.name;
  });
  after(() => server.close());

  const invite = async (grants: unknown[] = []) => {
    const res = await server.api(team.admin.token).post('/api/permissions/invite-with-grants', { email: `sum-${randomString(8)}@example.test`, role: grants.length ? 'restricted' : 'member', grants });
    assert.equal(res.status, 201, res.text);
    return res.body.data.id as string;
  };

  it('without a credential, names the organization, who invited (name and email), the role and the status; nothing else', async () => {
    const project = await createProject(server, team.owner);
    const id = await invite([{ resourceType: 'project', resourceId: project.id, permissions: ['read'] }]);
    const admin = (await server.api(team.admin.token).get('/api/auth/me')).body.data.user;
    const res = await server.api().get(`/api/permissions/invitations/${id}/summary`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body.data).sort(), ['expiresAt', 'id', 'invitedBy', 'orgName', 'role', 'status'], 'no invitee email, no grants, no org id');
    assert.equal(res.body.data.orgName, orgName);
    assert.deepEqual(res.body.data.invitedBy, { name: admin.name, email: team.admin.email });
    assert.equal(res.body.data.role, 'restricted');
    assert.equal(res.body.data.status, 'pending');
  });

  it('says when the invitation is no longer open (expired, cancelled), and an unknown id is 404', async () => {
    const expired = await invite();
    clock.advance(7 * 24 * 3600 * 1000 + 1000);
    assert.equal((await server.api().get(`/api/permissions/invitations/${expired}/summary`)).body.data.status, 'expired');
    const cancelled = await invite();
    assert.equal((await server.api(team.admin.token).post(`/api/permissions/invitations/${cancelled}/cancel`)).status, 200);
    assert.equal((await server.api().get(`/api/permissions/invitations/${cancelled}/summary`)).body.data.status, 'cancelled');
    const missing = await server.api().get(`/api/permissions/invitations/inv_${randomString(20)}/summary`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'NOT_FOUND');
  });

  it('once the inviter\'s account is gone, the summary says no inviter rather than failing', async () => {
    const inviter = await createUser(server, { orgId: team.orgId, role: 'admin' });
    const res = await server.api(inviter.token).post('/api/permissions/invite-with-grants', { email: `gone-${randomString(8)}@example.test`, role: 'member' });
    assert.equal(res.status, 201, res.text);
    await server.ctx.db.updateTable('invitations').set({ invitedBy: null }).where('id', '=', res.body.data.id).execute();
    const summary = await server.api().get(`/api/permissions/invitations/${res.body.data.id}/summary`);
    assert.equal(summary.status, 200, summary.text);
    assert.equal(summary.body.data.invitedBy, null);
  });

  it("/api/auth/me lists a restricted member's grants in the active org; other roles list none", async () => {
    const project = await createProject(server, team.owner);
    const restricted = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(server, restricted, 'project', project.id, ['read', 'write']);
    const me = await server.api(restricted.token).get('/api/auth/me');
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(me.body.data.grants, [{ resourceType: 'project', resourceId: project.id, permissions: ['read', 'write'] }]);
    assert.deepEqual((await server.api(team.member.token).get('/api/auth/me')).body.data.grants, []);
    assert.deepEqual((await server.api(team.owner.token).get('/api/auth/me')).body.data.grants, []);

    // A grant added later shows at once (the cached `me` is per credential, its grants are not).
    await createGrant(server, restricted, 'audit', '*', ['read']);
    const again = await server.api(restricted.token).get('/api/auth/me');
    assert.deepEqual(again.body.data.grants.map((g: { resourceType: string }) => g.resourceType).sort(), ['audit', 'project']);
  });
});
