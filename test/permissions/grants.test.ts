import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProject, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

// One server for the whole file.
let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

describe('permissions: org-meta, team orgs and the resources catalog', () => {
  let team: TestOrg;
  before(async () => {
    team = await createTeam(server);
  });

  it('GET org-meta answers { id, name, isTeam, memberCount } to any member, restricted included', async () => {
    for (const u of [team.owner, team.member, team.restricted]) {
      const res = await server.api(u.token).get('/api/permissions/org-meta');
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body.data).sort(), ['id', 'isTeam', 'memberCount', 'name']);
      assert.equal(res.body.data.id, team.orgId);
      assert.equal(res.body.data.isTeam, true);
      assert.equal(res.body.data.memberCount, 4);
    }
    const solo = await createUser(server);
    const res = await server.api(solo.token).get('/api/permissions/org-meta');
    assert.equal(res.body.data.isTeam, false);
    assert.equal(res.body.data.memberCount, 1);
  });

  it('POST create-team-org answers 201 { id, name, isTeam: true }, makes the caller owner, and the personal workspace stays personal', async () => {
    const solo = await createUser(server);
    const res = await server.api(solo.token).post('/api/permissions/create-team-org', { name: 'Acme' });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body.data).sort(), ['id', 'isTeam', 'name']);
    assert.equal(res.body.data.name, 'Acme');
    assert.equal(res.body.data.isTeam, true);
    const me = await server.api(solo.token).get('/api/auth/me');
    const orgs = me.body.data.orgs;
    assert.deepEqual(orgs.find((o: any) => o.id === res.body.data.id), { id: res.body.data.id, name: 'Acme', isTeam: true, role: 'owner' });
    assert.equal(orgs.find((o: any) => o.id === solo.orgId).isTeam, false);
    assert.equal(me.body.data.org.id, solo.orgId, 'the active org does not change');
  });

  it('POST create-team-org without a name, or with a blank one, is 400 naming name; a restricted member may create one', async () => {
    const a = await server.api(team.member.token).post('/api/permissions/create-team-org', {});
    assert.equal(a.status, 400);
    assert.equal(a.body.error.field, 'name');
    const b = await server.api(team.member.token).post('/api/permissions/create-team-org', { name: '   ' });
    assert.equal(b.status, 400);
    assert.equal(b.body.error.field, 'name');
    const c = await server.api(team.restricted.token).post('/api/permissions/create-team-org', { name: 'Side project' });
    assert.equal(c.status, 201);
  });

  it('GET resources lists the org\'s projects as { id, label } and never another org\'s or `*`', async () => {
    const p1 = await createProject(server, team.owner, { name: 'alpha' });
    const p2 = await createProject(server, team.owner, { name: 'beta' });
    const other = await createUser(server, { team: true });
    const foreign = await createProject(server, other, { name: 'foreign' });
    const res = await server.api(team.member.token).get('/api/permissions/resources?type=project');
    assert.equal(res.status, 200);
    const ids = res.body.data.map((e: any) => e.id);
    assert.ok(ids.includes(p1.id) && ids.includes(p2.id));
    assert.ok(!ids.includes(foreign.id));
    assert.ok(!ids.includes('*'));
    assert.equal(res.body.data.find((e: any) => e.id === p1.id).label, 'alpha');
  });

  it('GET resources for billing and audit has only the org-wide `*` entry', async () => {
    for (const type of ['billing', 'audit']) {
      const res = await server.api(team.owner.token).get(`/api/permissions/resources?type=${type}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.length, 1);
      assert.equal(res.body.data[0].id, '*');
      assert.equal(typeof res.body.data[0].label, 'string');
    }
  });

  it('GET resources for the git provider types is for admins and owners only', async () => {
    for (const type of ['gitprovider_installation', 'gitprovider_repository']) {
      assert.equal((await server.api(team.admin.token).get(`/api/permissions/resources?type=${type}`)).status, 200);
      assert.equal((await server.api(team.owner.token).get(`/api/permissions/resources?type=${type}&owner=acme`)).status, 200);
      assert.equal((await server.api(team.member.token).get(`/api/permissions/resources?type=${type}`)).status, 403);
      assert.equal((await server.api(team.restricted.token).get(`/api/permissions/resources?type=${type}`)).status, 403);
    }
  });

  it('GET resources with an unknown type is 400 INVALID_RESOURCE_TYPE, without a type 400 naming type', async () => {
    const bad = await server.api(team.owner.token).get('/api/permissions/resources?type=spaceship');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_RESOURCE_TYPE');
    const none = await server.api(team.owner.token).get('/api/permissions/resources');
    assert.equal(none.status, 400);
    assert.equal(none.body.error.field, 'type');
  });

  it('a restricted member sees in the catalog only the projects it can read', async () => {
    const p = await createProject(server, team.owner, { name: 'granted' });
    await createProject(server, team.owner, { name: 'hidden' });
    const g = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'project', resourceId: p.id, permissions: ['read'] });
    assert.equal(g.status, 201);
    const res = await server.api(team.restricted.token).get('/api/permissions/resources?type=project');
    assert.deepEqual(res.body.data.map((e: any) => e.id), [p.id]);
  });
});

describe('permissions: grants', () => {
  let team: TestOrg;
  let other: TestOrg;
  let project: { id: string };
  let foreignProject: { id: string };
  before(async () => {
    [team, other] = await Promise.all([createTeam(server), createTeam(server)]);
    project = await createProject(server, team.owner);
    foreignProject = await createProject(server, other.owner);
  });

  const grantsOf = async (userId: string) => (await server.api(team.owner.token).get(`/api/permissions/grants?userId=${userId}`)).body.data;

  it('POST grants upserts one grant: 201 { data: grant }, idempotent on (userId, resourceType, resourceId), permissions replaced in place', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const body = { userId: u.userId, resourceType: 'project', resourceId: project.id, permissions: ['read'] };
    const a = await server.api(team.admin.token).post('/api/permissions/grants', body);
    assert.equal(a.status, 201);
    assert.equal(a.body.data.userId, u.userId);
    assert.equal(a.body.data.resourceType, 'project');
    assert.equal(a.body.data.resourceId, project.id);
    assert.deepEqual(a.body.data.permissions, ['read']);
    const b = await server.api(team.admin.token).post('/api/permissions/grants', body);
    assert.equal(b.status, 201);
    assert.equal(b.body.data.id, a.body.data.id);
    const c = await server.api(team.admin.token).post('/api/permissions/grants', { ...body, permissions: ['write', 'read', 'write'] });
    assert.equal(c.body.data.id, a.body.data.id);
    assert.deepEqual(c.body.data.permissions, ['read', 'write']);
    const list = await grantsOf(u.userId);
    assert.equal(list.length, 1);
    assert.deepEqual(list[0].permissions, ['read', 'write']);
  });

  it('POST grants with empty permissions revokes and answers { data: null, revoked: true }', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'audit', resourceId: '*', permissions: ['read'] });
    const res = await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'audit', resourceId: '*', permissions: [] });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: null, revoked: true });
    assert.deepEqual(await grantsOf(u.userId), []);
    const again = await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'audit', resourceId: '*', permissions: [] });
    assert.deepEqual(again.body, { data: null, revoked: true });
  });

  it('POST grants without userId, resourceType or resourceId is 400 naming the field', async () => {
    const full = { userId: team.restricted.userId, resourceType: 'project', resourceId: project.id, permissions: ['read'] };
    for (const f of ['userId', 'resourceType', 'resourceId'] as const) {
      const body: Record<string, unknown> = { ...full };
      delete body[f];
      const res = await server.api(team.owner.token).post('/api/permissions/grants', body);
      assert.equal(res.status, 400, f);
      assert.equal(res.body.error.code, 'VALIDATION_FAILED');
      assert.equal(res.body.error.field, f);
    }
  });

  it('POST grants rejects an unknown resourceType (INVALID_RESOURCE_TYPE) and permissions outside read/write/admin', async () => {
    const a = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'rocket', resourceId: '*', permissions: ['read'] });
    assert.equal(a.status, 400);
    assert.equal(a.body.error.code, 'INVALID_RESOURCE_TYPE');
    assert.equal(a.body.error.field, 'resourceType');
    const b = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'project', resourceId: '*', permissions: ['read', 'delete'] });
    assert.equal(b.status, 400);
    assert.equal(b.body.error.field, 'permissions.1');
  });

  it('a grant on another org\'s project, or an unknown id, is 400 RESOURCE_NOT_IN_ORG; billing and audit take only `*`', async () => {
    for (const body of [
      { resourceType: 'project', resourceId: foreignProject.id },
      { resourceType: 'project', resourceId: 'prj_doesnotexist' },
      { resourceType: 'backup_destination', resourceId: 'bkd_nope' },
      { resourceType: 'audit', resourceId: 'something' },
    ]) {
      const res = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.restricted.userId, ...body, permissions: ['read'] });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'RESOURCE_NOT_IN_ORG');
      assert.equal(res.body.error.field, 'resourceId');
    }
  });

  it('POST grants for a user who is not a member of the org is 404', async () => {
    const res = await server.api(team.owner.token).post('/api/permissions/grants', { userId: other.member.userId, resourceType: 'project', resourceId: '*', permissions: ['read'] });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'NOT_FOUND');
    const missing = await server.api(team.owner.token).get('/api/permissions/grants?userId=usr_nobody');
    assert.equal(missing.status, 404);
  });

  it('PUT grants diffs against the existing set: upserts added and changed tuples, deletes absent ones, drops zero-permission entries', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const p2 = await createProject(server, team.owner);
    await server.api(team.owner.token).put('/api/permissions/grants', {
      userId: u.userId,
      grants: [
        { resourceType: 'project', resourceId: project.id, permissions: ['read'] },
        { resourceType: 'audit', resourceId: '*', permissions: ['read'] },
      ],
    });
    const before = await grantsOf(u.userId);
    const keptId = before.find((g: any) => g.resourceId === project.id).id;
    const res = await server.api(team.owner.token).put('/api/permissions/grants', {
      userId: u.userId,
      grants: [
        { resourceType: 'project', resourceId: project.id, permissions: ['read', 'write'] },
        { resourceType: 'project', resourceId: p2.id, permissions: ['admin'] },
        { resourceType: 'backup_destination', resourceId: '*', permissions: [] },
      ],
    });
    assert.equal(res.status, 200);
    const after = await grantsOf(u.userId);
    assert.deepEqual(after.map((g: any) => `${g.resourceType}:${g.resourceId}:${g.permissions.join('+')}`).sort(), [`project:${p2.id}:admin`, `project:${project.id}:read+write`].sort());
    assert.equal(after.find((g: any) => g.resourceId === project.id).id, keptId, 'a changed tuple is updated in place');
    assert.deepEqual(res.body.data.map((g: any) => g.id).sort(), after.map((g: any) => g.id).sort());
    const rows = await server.ctx.db.selectFrom('grants').selectAll().where('userId', '=', u.userId).execute();
    assert.ok(rows.every((r) => JSON.parse(r.permissions).length > 0), 'no zero-permission row is kept');
  });

  it('PUT grants with a resource of another org is 400 RESOURCE_NOT_IN_ORG naming the entry, and changes nothing', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'project', resourceId: project.id, permissions: ['read'] });
    const res = await server.api(team.owner.token).put('/api/permissions/grants', {
      userId: u.userId,
      grants: [
        { resourceType: 'project', resourceId: '*', permissions: ['read'] },
        { resourceType: 'project', resourceId: foreignProject.id, permissions: ['read'] },
      ],
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'RESOURCE_NOT_IN_ORG');
    assert.equal(res.body.error.field, 'grants.1.resourceId');
    const list = await grantsOf(u.userId);
    assert.deepEqual(list.map((g: any) => g.resourceId), [project.id]);
    const badType = await server.api(team.owner.token).put('/api/permissions/grants', { userId: u.userId, grants: [{ resourceType: 'nope', resourceId: '*', permissions: ['read'] }] });
    assert.equal(badType.body.error.code, 'INVALID_RESOURCE_TYPE');
    assert.equal(badType.body.error.field, 'grants.0.resourceType');
    const notMember = await server.api(team.owner.token).put('/api/permissions/grants', { userId: other.restricted.userId, grants: [] });
    assert.equal(notMember.status, 404);
  });

  it('DELETE grants/:id revokes one grant; another org\'s grant and a missing id are the same 404', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const g = (await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'project', resourceId: '*', permissions: ['read'] })).body.data;
    const foreign = (await server.api(other.owner.token).post('/api/permissions/grants', { userId: other.restricted.userId, resourceType: 'project', resourceId: '*', permissions: ['read'] })).body.data;
    const a = await server.api(team.owner.token).delete(`/api/permissions/grants/${foreign.id}`);
    const b = await server.api(team.owner.token).delete('/api/permissions/grants/grt_missing000000000000');
    assert.equal(a.status, 404);
    assert.equal(b.status, 404);
    assert.deepEqual({ ...a.body.error, requestId: 0 }, { ...b.body.error, requestId: 0 });
    const ok = await server.api(team.admin.token).delete(`/api/permissions/grants/${g.id}`);
    assert.equal(ok.status, 200);
    assert.deepEqual(await grantsOf(u.userId), []);
    assert.equal((await server.api(other.owner.token).get(`/api/permissions/grants?userId=${other.restricted.userId}`)).body.data.length, 1);
  });

  it('the grant routes are admin/owner only: a member or restricted member gets 403', async () => {
    const body = { userId: team.restricted.userId, resourceType: 'project', resourceId: '*', permissions: ['read'] };
    for (const u of [team.member, team.restricted]) {
      assert.equal((await server.api(u.token).get(`/api/permissions/grants?userId=${team.restricted.userId}`)).status, 403);
      assert.equal((await server.api(u.token).post('/api/permissions/grants', body)).status, 403);
      assert.equal((await server.api(u.token).put('/api/permissions/grants', { userId: team.restricted.userId, grants: [] })).status, 403);
    }
  });

  it('nobody grants above what they hold: a token scoped to permissions:write cannot grant project admin', async () => {
    const scoped = (await server.api(team.admin.token).post('/api/auth/tokens', { name: 'perm-only', scopes: ['permissions:write'] })).body.data;
    const res = await server.api(scoped.token).post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'project', resourceId: project.id, permissions: ['admin'] });
    assert.equal(res.status, 403);
  });

  it('grants can be stored for any member but take effect only for the restricted role', async () => {
    const res = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.member.userId, resourceType: 'audit', resourceId: '*', permissions: ['read'] });
    assert.equal(res.status, 201);
    assert.equal((await server.api(team.member.token).get('/api/audit')).status, 403, 'a member stays a member');
  });

  it('a restricted member with a grant on audit `*` can read the audit log; without it, 403', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    assert.equal((await server.api(u.token).get('/api/audit')).status, 403);
    await server.api(team.owner.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'audit', resourceId: '*', permissions: ['read'] });
    const res = await server.api(u.token).get('/api/audit');
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body.data));
  });

  it('every grant change is in the audit log with who, what and the permissions', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const g = (await server.api(team.admin.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'project', resourceId: project.id, permissions: ['read'] })).body.data;
    await server.api(team.admin.token).post('/api/permissions/grants', { userId: u.userId, resourceType: 'project', resourceId: project.id, permissions: ['write'] });
    await server.api(team.admin.token).delete(`/api/permissions/grants/${g.id}`);
    const events = (await server.api(team.owner.token).get('/api/audit?limit=200')).body.data.filter((e: any) => e.resourceId === g.id);
    assert.deepEqual(events.map((e: any) => e.action), ['grant.revoke', 'grant.update', 'grant.create']);
    for (const e of events) {
      assert.equal(e.actorId, team.admin.userId);
      assert.equal(e.resourceType, 'grant');
      assert.equal(e.details.userId, u.userId);
      assert.deepEqual(Object.keys(e).sort(), ['action', 'actorId', 'at', 'details', 'id', 'resourceId', 'resourceType']);
    }
    assert.deepEqual(events[1].details.permissions, ['write']);
  });
});
