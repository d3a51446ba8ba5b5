import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CidrMatcher, cidrContains, parseCidr } from '../../src/lib/cidr.js';
import { createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';

let server: TestServer;
let team: TestOrg;
let stranger: TestUser;

before(async () => {
  server = await startTestServer();
  team = await createTeam(server);
  stranger = await createUser(server);
});
after(async () => {
  await server?.close();
});

const api = (u: TestUser) => server.api(u.token);

describe('route rules', () => {
  it('creates, lists, updates and deletes the three kinds', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/route-rules`;
    const c = api(team.member);
    const rl = await c.post(u, { kind: 'rate-limit', path: '/api', limit: 100, windowSeconds: 60 });
    assert.equal(rl.status, 201, rl.text);
    assert.match(rl.body.data.id, /^rr_/);
    assert.equal(rl.body.data.kind, 'rate-limit');
    assert.equal(rl.body.data.enabled, true);
    assert.equal(rl.body.data.path, '/api');
    assert.equal(rl.body.data.limit, 100);
    assert.equal(rl.body.data.windowSeconds, 60);
    assert.ok(rl.body.data.createdAt);

    const ban = await c.post(u, { kind: 'ban', ips: ['203.0.113.7', '2001:db8::/32', '::ffff:198.51.100.0/120'], expiresAt: '2030-01-01T00:00:00Z' });
    assert.equal(ban.status, 201, ban.text);
    assert.deepEqual(ban.body.data.ips, ['203.0.113.7', '2001:db8::/32', '198.51.100.0/24']);
    assert.equal(ban.body.data.expiresAt, '2030-01-01T00:00:00.000Z');

    const ad = await c.post(u, { kind: 'allow-deny', action: 'allow', cidrs: ['10.0.0.0/8', '::1'], path: '/admin/*', enabled: false });
    assert.equal(ad.status, 201, ad.text);
    assert.equal(ad.body.data.action, 'allow');
    assert.equal(ad.body.data.enabled, false);

    const list = await c.get(u);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((r: any) => r.kind), ['rate-limit', 'ban', 'allow-deny']);

    const up = await c.patch(`${u}/${rl.body.data.id}`, { limit: 5, enabled: false });
    assert.equal(up.status, 200, up.text);
    assert.equal(up.body.data.limit, 5);
    assert.equal(up.body.data.windowSeconds, 60);
    assert.equal(up.body.data.enabled, false);
    const up2 = await c.patch(`${u}/${ad.body.data.id}`, { action: 'deny', path: null });
    assert.equal(up2.body.data.action, 'deny');
    assert.equal(up2.body.data.path, null);
    assert.deepEqual(up2.body.data.cidrs, ['10.0.0.0/8', '::1']);

    const del = await c.delete(`${u}/${ban.body.data.id}`);
    assert.equal(del.status, 200, del.text);
    assertError(await c.delete(`${u}/${ban.body.data.id}`), 404, 'NOT_FOUND');
    assertError(await c.patch(`${u}/rr_missing`, { limit: 1 }), 404, 'NOT_FOUND');
    assert.equal((await c.get(u)).body.data.length, 2);
  });

  it('answers 400 naming the field: unknown kind, missing or non-positive limits, bad IPs and CIDRs (v4 and v6), bad path, kind change', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/route-rules`;
    const c = api(team.member);
    assertError(await c.post(u, {}), 400, 'VALIDATION_FAILED', 'kind');
    assertError(await c.post(u, { kind: 'throttle' }), 400, 'VALIDATION_FAILED', 'kind');
    assertError(await c.post(u, { kind: 'rate-limit', windowSeconds: 60 }), 400, 'VALIDATION_FAILED', 'limit');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 0, windowSeconds: 60 }), 400, 'VALIDATION_FAILED', 'limit');
    assertError(await c.post(u, { kind: 'rate-limit', limit: -3, windowSeconds: 60 }), 400, 'VALIDATION_FAILED', 'limit');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 1.5, windowSeconds: 60 }), 400, 'VALIDATION_FAILED', 'limit');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 10 }), 400, 'VALIDATION_FAILED', 'windowSeconds');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 10, windowSeconds: 0 }), 400, 'VALIDATION_FAILED', 'windowSeconds');
    assertError(await c.post(u, { kind: 'ban' }), 400, 'VALIDATION_FAILED', 'ips');
    assertError(await c.post(u, { kind: 'ban', ips: [] }), 400, 'VALIDATION_FAILED', 'ips');
    assertError(await c.post(u, { kind: 'ban', ips: ['1.2.3.4', '999.1.1.1'] }), 400, 'VALIDATION_FAILED', 'ips.1');
    assertError(await c.post(u, { kind: 'ban', ips: ['10.0.0.0/33'] }), 400, 'VALIDATION_FAILED', 'ips.0');
    assertError(await c.post(u, { kind: 'ban', ips: ['2001:db8::/129'] }), 400, 'VALIDATION_FAILED', 'ips.0');
    assertError(await c.post(u, { kind: 'ban', ips: ['2001:db8:::1'] }), 400, 'VALIDATION_FAILED', 'ips.0');
    assertError(await c.post(u, { kind: 'ban', ips: ['1.2.3.4'], expiresAt: 'tomorrow' }), 400, 'VALIDATION_FAILED', 'expiresAt');
    assertError(await c.post(u, { kind: 'allow-deny', cidrs: ['10.0.0.0/8'] }), 400, 'VALIDATION_FAILED', 'action');
    assertError(await c.post(u, { kind: 'allow-deny', action: 'maybe', cidrs: ['10.0.0.0/8'] }), 400, 'VALIDATION_FAILED', 'action');
    assertError(await c.post(u, { kind: 'allow-deny', action: 'deny' }), 400, 'VALIDATION_FAILED', 'cidrs');
    assertError(await c.post(u, { kind: 'allow-deny', action: 'deny', cidrs: ['example.com'] }), 400, 'VALIDATION_FAILED', 'cidrs.0');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 1, windowSeconds: 1, path: 'api' }), 400, 'VALIDATION_FAILED', 'path');
    assertError(await c.post(u, { kind: 'rate-limit', limit: 1, windowSeconds: 1, path: '/a b' }), 400, 'VALIDATION_FAILED', 'path');
    const r = await c.post(u, { kind: 'rate-limit', limit: 1, windowSeconds: 1 });
    assertError(await c.patch(`${u}/${r.body.data.id}`, { kind: 'ban' }), 400, 'VALIDATION_FAILED', 'kind');
    assertError(await c.patch(`${u}/${r.body.data.id}`, { limit: 0 }), 400, 'VALIDATION_FAILED', 'limit');
  });

  it('authorization: 404 for another org (and for a rule of another project), 403 without the tag', async () => {
    const org = await createTeam(server);
    const p = await createProject(server, org.owner);
    const q = await createProject(server, org.owner);
    const rule = await api(org.owner).post(`/api/projects/${p.id}/route-rules`, { kind: 'rate-limit', limit: 1, windowSeconds: 1 });
    const u = `/api/projects/${p.id}/route-rules`;
    const body = { kind: 'rate-limit', limit: 1, windowSeconds: 1 };
    assertError(await api(stranger).get(u), 404, 'NOT_FOUND');
    assertError(await api(stranger).post(u, body), 404, 'NOT_FOUND');
    assertError(await api(stranger).patch(`${u}/${rule.body.data.id}`, { limit: 2 }), 404, 'NOT_FOUND');
    assertError(await api(stranger).delete(`${u}/${rule.body.data.id}`), 404, 'NOT_FOUND');
    assertError(await api(org.owner).patch(`/api/projects/${q.id}/route-rules/${rule.body.data.id}`, { limit: 2 }), 404, 'NOT_FOUND');
    assertError(await api(org.restricted).get(u), 403, 'FORBIDDEN');
    await createGrant(server, org.restricted, 'project', p.id, ['read']);
    assert.equal((await api(org.restricted).get(u)).status, 200);
    assertError(await api(org.restricted).post(u, body), 403, 'FORBIDDEN');
    assertError(await api(org.restricted).patch(`${u}/${rule.body.data.id}`, { limit: 2 }), 403, 'FORBIDDEN');
    assertError(await api(org.restricted).delete(`${u}/${rule.body.data.id}`), 403, 'FORBIDDEN');
    assert.equal((await api(org.member).delete(`${u}/${rule.body.data.id}`)).status, 200);
  });
});

describe('cidr helpers (shared with the edge proxy)', () => {
  it('parse and match v4, v6 and v4-mapped addresses', () => {
    assert.deepEqual(parseCidr('10.1.0.0/16'), { family: 4, address: '10.1.0.0', prefix: 16 });
    assert.equal(parseCidr('1.2.3.4/'), null);
    assert.equal(parseCidr('fe80::1%eth0'), null);
    assert.ok(cidrContains('10.0.0.0/8', '10.200.1.1'));
    assert.ok(cidrContains('10.0.0.0/8', '::ffff:10.200.1.1'));
    assert.ok(!cidrContains('10.0.0.0/8', '11.0.0.1'));
    assert.ok(cidrContains('2001:db8::/32', '2001:db8:ffff::1'));
    assert.ok(!cidrContains('2001:db8::/32', '2001:db9::1'));
    const m = new CidrMatcher(['192.0.2.1', '2001:db8::/48']);
    assert.ok(m.contains('192.0.2.1') && !m.contains('192.0.2.2') && m.contains('2001:db8:0:1::5'));
    assert.ok(!m.contains('not-an-ip'));
  });
});

describe('cloud mode', () => {
  it('route-rule routes answer 404 on a cloud instance (self-hosted only); the other project routes stay', async () => {
    const cloud = await startTestServer({ flags: { mode: 'cloud' } });
    try {
      const owner = await createUser(cloud);
      const c = cloud.api(owner.token);
      const p = (await c.post('/api/projects', { name: 'cloudy' })).body.data;
      assert.ok(p?.id);
      assertError(await c.get(`/api/projects/${p.id}/route-rules`), 404, 'NOT_FOUND');
      assertError(await c.post(`/api/projects/${p.id}/route-rules`, { kind: 'rate-limit', limit: 1, windowSeconds: 1 }), 404, 'NOT_FOUND');
      assertError(await c.patch(`/api/projects/${p.id}/route-rules/rr_x`, { limit: 1 }), 404, 'NOT_FOUND');
      assertError(await c.delete(`/api/projects/${p.id}/route-rules/rr_x`), 404, 'NOT_FOUND');
      assert.equal((await c.get(`/api/projects/${p.id}`)).status, 200);
    } finally {
      await cloud.close();
    }
  });
});
