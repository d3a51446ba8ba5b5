import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProject, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('grants really widen the restricted role (projects)', () => {
  let server: TestServer;
  let team: TestOrg;
  before(async () => {
    server = await startTestServer();
    team = await createTeam(server);
  });
  after(() => server.close());

  const grant = (userId: string, resourceId: string, permissions: string[]) =>
    server.api(team.owner.token).post('/api/permissions/grants', { userId, resourceType: 'project', resourceId, permissions });

  it('a restricted member with read on project P can read P and nothing else, lists only P, and gets 403 on writes to P', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const p = await createProject(server, team.owner, { name: 'granted' });
    const q = await createProject(server, team.owner, { name: 'not-granted' });
    assert.equal((await server.api(u.token).get(`/api/projects/${p.id}`)).status, 403, 'nothing before the grant');
    assert.equal((await grant(u.userId, p.id, ['read'])).status, 201);
    const get = await server.api(u.token).get(`/api/projects/${p.id}`);
    assert.equal(get.status, 200);
    assert.equal(get.body.data.id, p.id);
    assert.equal((await server.api(u.token).get(`/api/projects/${q.id}`)).status, 403);
    const list = await server.api(u.token).get('/api/projects');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((x: any) => x.id), [p.id]);
    assert.equal((await server.api(u.token).patch(`/api/projects/${p.id}`, { buildCommand: 'make' })).status, 403);
    assert.equal((await server.api(u.token).delete(`/api/projects/${p.id}`)).status, 403);
    assert.equal((await server.api(u.token).post('/api/projects', { name: 'mine' })).status, 403, 'no `*` grant: cannot create');
  });

  it('write on P allows PATCH P but not DELETE P; admin on P allows DELETE P', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const p = await createProject(server, team.owner);
    await grant(u.userId, p.id, ['write']);
    assert.equal((await server.api(u.token).patch(`/api/projects/${p.id}`, { buildCommand: 'make' })).status, 200);
    assert.equal((await server.api(u.token).delete(`/api/projects/${p.id}`)).status, 403);
    await grant(u.userId, p.id, ['admin']);
    assert.equal((await server.api(u.token).delete(`/api/projects/${p.id}`)).status, 200);
  });

  it('a `*` grant covers every project of the org, including ones made later', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await grant(u.userId, '*', ['read']);
    const later = await createProject(server, team.owner, { name: 'made-later' });
    assert.equal((await server.api(u.token).get(`/api/projects/${later.id}`)).status, 200);
    const list = (await server.api(u.token).get('/api/projects')).body.data.map((x: any) => x.id);
    assert.ok(list.includes(later.id));
    assert.equal((await server.api(u.token).patch(`/api/projects/${later.id}`, { buildCommand: 'x' })).status, 403);
  });

  it('revoking the grant takes effect on the next request; another org\'s project stays 404', async () => {
    const u = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    const p = await createProject(server, team.owner);
    await grant(u.userId, p.id, ['read']);
    assert.equal((await server.api(u.token).get(`/api/projects/${p.id}`)).status, 200);
    await grant(u.userId, p.id, []);
    assert.equal((await server.api(u.token).get(`/api/projects/${p.id}`)).status, 403);
    const other = await createUser(server, { team: true });
    const foreign = await createProject(server, other);
    assert.equal((await server.api(u.token).get(`/api/projects/${foreign.id}`)).status, 404);
  });

  it('grants do not affect a member: a member with a read grant still writes every project (roles resolve first)', async () => {
    const p = await createProject(server, team.owner);
    await grant(team.member.userId, p.id, ['read']);
    assert.equal((await server.api(team.member.token).patch(`/api/projects/${p.id}`, { buildCommand: 'make' })).status, 200);
  });
});
