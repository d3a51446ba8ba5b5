import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomString } from '../../src/lib/ids.js';
import { createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { testClock } from '../support/clock.js';
import { startTestServer, type TestServer } from '../support/harness.js';

const DAY = 24 * 3600 * 1000;

describe('permissions: invitations and members', () => {
  let server: TestServer;
  let team: TestOrg;
  let project: { id: string };
  const clock = testClock();
  before(async () => {
    server = await startTestServer({ clock });
    team = await createTeam(server);
    project = await createProject(server, team.owner);
  });
  after(() => server.close());

  /** A signed-up user (personal org) with an email not in the team yet. */
  const outsider = (email?: string) => createUser(server, { email: email ?? `inv-${randomString(8)}@example.test` });
  const invite = (by: TestUser, body: Record<string, unknown>) => server.api(by.token).post('/api/permissions/invite-with-grants', body);
  /** Moves the server's time past the 7-day expiry of every invitation made or resent so far. */
  const afterSevenDays = () => clock.advance(7 * DAY + 1000);

  it('POST invite-with-grants answers 201 { id, email, role, pendingGrantCount } and the list shows the pending grants', async () => {
    const email = `New-${randomString(6)}@Example.test`;
    const res = await invite(team.admin, {
      email,
      role: 'restricted',
      grants: [
        { resourceType: 'project', resourceId: project.id, permissions: ['read'] },
        { resourceType: 'audit', resourceId: '*', permissions: ['read'] },
        { resourceType: 'billing', resourceId: '*', permissions: [] },
      ],
    });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body.data).sort(), ['email', 'id', 'pendingGrantCount', 'role']);
    assert.equal(res.body.data.email, email.toLowerCase());
    assert.equal(res.body.data.role, 'restricted');
    assert.equal(res.body.data.pendingGrantCount, 2, 'zero-permission entries are dropped');
    const list = await server.api(team.owner.token).get('/api/permissions/invitations');
    assert.equal(list.status, 200);
    const inv = list.body.data.find((i: any) => i.id === res.body.data.id);
    assert.equal(inv.status, 'pending');
    assert.equal(inv.pendingGrantCount, 2);
    assert.deepEqual(inv.pendingGrants.map((g: any) => g.resourceType).sort(), ['audit', 'project']);
    const expires = Date.parse(inv.expiresAt) - clock.now();
    assert.ok(expires > 6.9 * DAY && expires <= 7 * DAY, 'expires in 7 days');
  });

  it('POST invite-with-grants without an email is 400 naming email; bad grants are 400 with their codes', async () => {
    const a = await invite(team.owner, { role: 'member' });
    assert.equal(a.status, 400);
    assert.equal(a.body.error.field, 'email');
    const b = await invite(team.owner, { email: 'x@example.test', grants: [{ resourceType: 'rocket', resourceId: '*', permissions: ['read'] }] });
    assert.equal(b.body.error.code, 'INVALID_RESOURCE_TYPE');
    const other = await createUser(server, { team: true });
    const foreign = await createProject(server, other);
    const c = await invite(team.owner, { email: 'x@example.test', grants: [{ resourceType: 'project', resourceId: foreign.id, permissions: ['read'] }] });
    assert.equal(c.status, 400);
    assert.equal(c.body.error.code, 'RESOURCE_NOT_IN_ORG');
    assert.equal(c.body.error.field, 'grants.0.resourceId');
  });

  it('nobody invites above their own role: an admin cannot invite an owner, a member cannot invite at all', async () => {
    const a = await invite(team.admin, { email: `o-${randomString(6)}@example.test`, role: 'owner' });
    assert.equal(a.status, 403);
    const b = await invite(team.member, { email: `m-${randomString(6)}@example.test`, role: 'member' });
    assert.equal(b.status, 403);
    const c = await invite(team.owner, { email: `o-${randomString(6)}@example.test`, role: 'owner' });
    assert.equal(c.status, 201);
  });

  it('inviting an existing member, or an email with a pending invitation, is 409', async () => {
    assert.equal((await invite(team.owner, { email: team.member.email, role: 'member' })).status, 409);
    const email = `dup-${randomString(6)}@example.test`;
    assert.equal((await invite(team.owner, { email })).status, 201);
    assert.equal((await invite(team.owner, { email })).status, 409);
  });

  it('accept: the invited email (case-insensitive) joins the org with the invitation role and the status becomes accepted', async () => {
    const u = await outsider(`case-${randomString(6)}@example.test`);
    const inv = (await invite(team.owner, { email: u.email.toUpperCase(), role: 'restricted' })).body.data;
    const res = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.status, 'accepted');
    assert.equal(res.body.data.orgId, team.orgId);
    const me = await server.api(u.token).get('/api/auth/me');
    assert.equal(me.body.data.orgs.find((o: any) => o.id === team.orgId).role, 'restricted');
    const meta = await server.api(team.owner.token).get('/api/permissions/org-meta');
    assert.ok(meta.body.data.memberCount >= 5);
  });

  it('accept by someone whose email does not match is 403; an unknown invitation is 404', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: `someone-${randomString(6)}@example.test` })).body.data;
    assert.equal((await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`)).status, 403);
    assert.equal((await server.api(u.token).post('/api/permissions/invitations/inv_missing00000000000/accept')).status, 404);
  });

  it('an invitation expires after 7 days: accept is refused; resend gives a fresh 7-day expiry and accept works again', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email })).body.data;
    afterSevenDays();
    const listed = (await server.api(team.owner.token).get('/api/permissions/invitations')).body.data.find((i: any) => i.id === inv.id);
    assert.equal(listed.status, 'expired');
    const refused = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    assert.equal(refused.status, 409);
    const resent = await server.api(team.admin.token).post(`/api/permissions/invitations/${inv.id}/resend`);
    assert.equal(resent.status, 200);
    assert.equal(resent.body.data.status, 'pending');
    assert.ok(Date.parse(resent.body.data.expiresAt) - clock.now() > 6.9 * DAY);
    assert.equal((await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`)).status, 200);
  });

  it('resend of a pending invitation moves its expiry; resend or cancel of an answered one is 409', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email })).body.data;
    clock.advance(6 * DAY);
    const resent = await server.api(team.owner.token).post(`/api/permissions/invitations/${inv.id}/resend`);
    assert.equal(resent.body.data.status, 'pending');
    assert.ok(Date.parse(resent.body.data.expiresAt) - clock.now() > 6.9 * DAY, 'a week from the resend, not from the invite 6 days ago');
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    assert.equal((await server.api(team.owner.token).post(`/api/permissions/invitations/${inv.id}/resend`)).status, 409);
    assert.equal((await server.api(team.owner.token).post(`/api/permissions/invitations/${inv.id}/cancel`)).status, 409);
  });

  it('decline: the invitee refuses, nobody joins, and the invitation cannot be accepted afterwards', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email, grants: [{ resourceType: 'project', resourceId: project.id, permissions: ['read'] }] })).body.data;
    const other = await outsider();
    assert.equal((await server.api(other.token).post(`/api/permissions/invitations/${inv.id}/decline`)).status, 403);
    const res = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/decline`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.status, 'declined');
    assert.equal(res.body.data.pendingGrantCount, 0);
    assert.equal((await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`)).status, 409);
    const me = await server.api(u.token).get('/api/auth/me');
    assert.ok(!me.body.data.orgs.some((o: any) => o.id === team.orgId));
  });

  it('cancel: an admin withdraws an unanswered invitation; the invitee can no longer accept; another org\'s invitation is 404', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email })).body.data;
    const otherTeam = await createUser(server, { team: true });
    assert.equal((await server.api(otherTeam.token).post(`/api/permissions/invitations/${inv.id}/cancel`)).status, 404);
    assert.equal((await server.api(team.member.token).post(`/api/permissions/invitations/${inv.id}/cancel`)).status, 403);
    const res = await server.api(team.admin.token).post(`/api/permissions/invitations/${inv.id}/cancel`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.status, 'cancelled');
    assert.equal((await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`)).status, 409);
    const open = (await server.api(team.owner.token).get('/api/permissions/invitations')).body.data;
    assert.ok(!open.some((i: any) => i.id === inv.id), 'the default list holds only unanswered invitations');
    const all = (await server.api(team.owner.token).get('/api/permissions/invitations?status=all')).body.data;
    assert.equal(all.find((i: any) => i.id === inv.id).status, 'cancelled');
  });

  it('materialize: 400 until accepted, 403 for another email, then upserts the pending grants and clears them ({ materialized: n })', async () => {
    const u = await outsider();
    const inv = (
      await invite(team.owner, {
        email: u.email,
        role: 'restricted',
        grants: [
          { resourceType: 'project', resourceId: project.id, permissions: ['read'] },
          { resourceType: 'audit', resourceId: '*', permissions: ['read'] },
        ],
      })
    ).body.data;
    const early = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`);
    assert.equal(early.status, 400);
    assert.equal(early.body.error.code, 'INVITATION_NOT_ACCEPTED');
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    const stranger = await outsider();
    assert.equal((await server.api(stranger.token).post(`/api/permissions/invitations/${inv.id}/materialize`)).status, 403);
    // The invitee's token still acts in its personal org: the invitation is found whatever the active org.
    const res = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: { materialized: 2 } });
    const grants = (await server.api(team.owner.token).get(`/api/permissions/grants?userId=${u.userId}`)).body.data;
    assert.deepEqual(grants.map((g: any) => g.resourceType).sort(), ['audit', 'project']);
    const pending = await server.ctx.db.selectFrom('invitationGrants').selectAll().where('invitationId', '=', inv.id).execute();
    assert.equal(pending.length, 0, 'pending rows are cleared');
    const again = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`);
    assert.deepEqual(again.body, { data: { materialized: 0 } });
  });

  it('materialize of an expired invitation is 400', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email, grants: [{ resourceType: 'audit', resourceId: '*', permissions: ['read'] }] })).body.data;
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    afterSevenDays();
    const res = await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'INVITATION_NOT_ACCEPTED');
  });

  it('materialize is atomic under concurrent calls: the grants are written once', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email, grants: [{ resourceType: 'project', resourceId: project.id, permissions: ['write'] }] })).body.data;
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    const results = await Promise.all([1, 2, 3].map(() => server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`)));
    const total = results.filter((r) => r.status === 200).reduce((n, r) => n + r.body.data.materialized, 0);
    assert.equal(total, 1);
    assert.ok(results.every((r) => r.status === 200 || r.status === 409));
    const rows = await server.ctx.db.selectFrom('grants').selectAll().where('userId', '=', u.userId).execute();
    assert.equal(rows.length, 1);
  });

  it('GET members lists every member with role; member and restricted get 403', async () => {
    const res = await server.api(team.admin.token).get('/api/permissions/members');
    assert.equal(res.status, 200);
    const me = res.body.data.find((m: any) => m.userId === team.owner.userId);
    assert.equal(me.role, 'owner');
    assert.equal(me.email, team.owner.email);
    assert.equal((await server.api(team.member.token).get('/api/permissions/members')).status, 403);
    assert.equal((await server.api(team.restricted.token).get('/api/permissions/members')).status, 403);
  });

  it('PATCH members/:userId changes a role; nobody promotes above their own role and an admin cannot change an owner', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'member' });
    const res = await server.api(team.admin.token).patch(`/api/permissions/members/${u.userId}`, { role: 'restricted' });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.role, 'restricted');
    assert.equal((await server.api(u.token).get('/api/permissions/org-meta')).status, 200);
    assert.equal((await server.api(team.admin.token).patch(`/api/permissions/members/${u.userId}`, { role: 'owner' })).status, 403);
    assert.equal((await server.api(team.admin.token).patch(`/api/permissions/members/${team.owner.userId}`, { role: 'member' })).status, 403);
    const bad = await server.api(team.owner.token).patch(`/api/permissions/members/${u.userId}`, { role: 'emperor' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'role');
    assert.equal((await server.api(team.owner.token).patch(`/api/permissions/members/${u.userId}`, { role: 'admin' })).body.data.role, 'admin');
  });

  it('the last owner cannot be demoted or removed (409); with a second owner, one can step down', async () => {
    const solo = await createUser(server, { team: true });
    const demote = await server.api(solo.token).patch(`/api/permissions/members/${solo.userId}`, { role: 'admin' });
    assert.equal(demote.status, 409);
    const remove = await server.api(solo.token).delete(`/api/permissions/members/${solo.userId}`);
    assert.equal(remove.status, 409);
    const second = await createUser(server, { orgId: solo.orgId, role: 'member' });
    await server.api(solo.token).patch(`/api/permissions/members/${second.userId}`, { role: 'owner' });
    const stepDown = await server.api(solo.token).patch(`/api/permissions/members/${solo.userId}`, { role: 'admin' });
    assert.equal(stepDown.status, 200);
    assert.equal((await server.api(second.token).patch(`/api/permissions/members/${second.userId}`, { role: 'member' })).status, 409);
  });

  it('the last owner holds under concurrent demotions: two owners demoting each other leave one owner', async () => {
    const a = await createUser(server, { team: true });
    const b = await createUser(server, { orgId: a.orgId, role: 'owner' });
    const [ra, rb] = await Promise.all([
      server.api(a.token).patch(`/api/permissions/members/${b.userId}`, { role: 'member' }),
      server.api(b.token).patch(`/api/permissions/members/${a.userId}`, { role: 'member' }),
    ]);
    const owners = await server.ctx.db.selectFrom('memberships').selectAll().where('orgId', '=', a.orgId).where('role', '=', 'owner').execute();
    assert.ok(owners.length >= 1, `statuses ${ra.status} ${rb.status}`);
  });

  it('DELETE members/:userId removes the member and their grants; their token stops working; an admin cannot remove an owner', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'project', resourceId: project.id, permissions: ['read'] });
    assert.equal((await server.api(team.admin.token).delete(`/api/permissions/members/${team.owner.userId}`)).status, 403);
    const res = await server.api(team.admin.token).delete(`/api/permissions/members/${u.userId}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { userId: u.userId, removed: true });
    assert.equal((await server.api(u.token).get('/api/permissions/org-meta')).status, 401);
    const rows = await server.ctx.db.selectFrom('grants').selectAll().where('userId', '=', u.userId).where('orgId', '=', team.orgId).execute();
    assert.equal(rows.length, 0);
    const missing = await server.api(team.admin.token).delete(`/api/permissions/members/${u.userId}`);
    assert.equal(missing.status, 404);
    const foreign = await createUser(server);
    const other = await server.api(team.admin.token).delete(`/api/permissions/members/${foreign.userId}`);
    assert.equal(other.status, 404);
    assert.deepEqual({ ...other.body.error, requestId: 0 }, { ...missing.body.error, requestId: 0 });
  });

  it('every invitation, membership and role change is in the audit log', async () => {
    const u = await outsider();
    const inv = (await invite(team.owner, { email: u.email, role: 'restricted', grants: [{ resourceType: 'audit', resourceId: '*', permissions: ['read'] }] })).body.data;
    await server.api(team.owner.token).post(`/api/permissions/invitations/${inv.id}/resend`);
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/accept`);
    await server.api(u.token).post(`/api/permissions/invitations/${inv.id}/materialize`);
    await server.api(team.owner.token).patch(`/api/permissions/members/${u.userId}`, { role: 'member' });
    await server.api(team.owner.token).delete(`/api/permissions/members/${u.userId}`);
    const events = (await server.api(team.owner.token).get('/api/audit?limit=200')).body.data;
    const mine = events.filter((e: any) => e.resourceId === inv.id || e.resourceId === u.userId || e.details?.userId === u.userId).map((e: any) => e.action);
    for (const a of ['invitation.create', 'invitation.resend', 'invitation.accept', 'member.add', 'invitation.materialize', 'grant.create', 'member.role_change', 'member.remove']) {
      assert.ok(mine.includes(a), `${a} in ${mine.join(', ')}`);
    }
    const change = events.find((e: any) => e.action === 'member.role_change' && e.resourceId === u.userId);
    assert.deepEqual(change.details, { from: 'restricted', to: 'member' });
    assert.equal(change.actorId, team.owner.userId);
  });
});
