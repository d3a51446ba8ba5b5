import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('audit log: GET /api/audit', () => {
  let server: TestServer;
  let team: TestOrg;
  before(async () => {
    server = await startTestServer();
    team = await createTeam(server);
  });
  after(() => server.close());

  it('answers events { id, at, actorId, action, resourceType, resourceId, details }, newest first, with cursor pagination', async () => {
    const names: string[] = [];
    for (let i = 0; i < 7; i++) {
      names.push(`t${i}`);
      await server.api(team.admin.token).post('/api/auth/tokens', { name: `t${i}` });
    }
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await server.api(team.owner.token).get(`/api/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.status, 200);
      assert.ok(res.body.data.length <= 3);
      seen.push(...res.body.data);
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    assert.equal(new Set(seen.map((e) => e.id)).size, seen.length, 'no event twice');
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1].at >= seen[i].at, 'newest first');
    const tokenNames = seen.filter((e) => e.action === 'token.create' && e.actorId === team.admin.userId).map((e) => e.details.name);
    assert.deepEqual(tokenNames, [...names].reverse());
    for (const e of seen) assert.deepEqual(Object.keys(e).sort(), ['action', 'actorId', 'at', 'details', 'id', 'resourceId', 'resourceType']);
  });

  it('shows only the active org\'s events', async () => {
    const other = await createUser(server, { team: true });
    await server.api(other.token).post('/api/auth/tokens', { name: 'elsewhere' });
    const res = await server.api(team.owner.token).get('/api/audit?limit=200');
    assert.ok(!res.body.data.some((e: any) => e.details?.name === 'elsewhere'));
    const mine = await server.api(other.token).get('/api/audit?limit=200');
    assert.ok(mine.body.data.some((e: any) => e.details?.name === 'elsewhere'));
  });

  it('needs audit:read: owner and admin yes; member and restricted without a grant 403', async () => {
    assert.equal((await server.api(team.owner.token).get('/api/audit')).status, 200);
    assert.equal((await server.api(team.admin.token).get('/api/audit')).status, 200);
    assert.equal((await server.api(team.member.token).get('/api/audit')).status, 403);
    assert.equal((await server.api(team.restricted.token).get('/api/audit')).status, 403);
    assert.equal((await server.api().get('/api/audit')).status, 401);
  });

  it('a bad limit or an unknown cursor is 400 naming the field', async () => {
    const a = await server.api(team.owner.token).get('/api/audit?limit=0');
    assert.equal(a.status, 400);
    assert.equal(a.body.error.field, 'limit');
    const b = await server.api(team.owner.token).get('/api/audit?limit=abc');
    assert.equal(b.status, 400);
    const c = await server.api(team.owner.token).get('/api/audit?cursor=aud_nope');
    assert.equal(c.status, 400);
    assert.equal(c.body.error.field, 'cursor');
  });
});
