/**
 * Custom domains (contract section 12): list, add, remove, verify, connect, and what the edge
 * routes. On an instance without verification (the self-hosted default) a domain is verified at
 * once; with BERTH_DOMAIN_VERIFICATION=dns it is routed only once a TXT record proves the claim
 * (answered here by a DNS stub on 127.0.0.1).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isUniqueViolation } from '../../src/db/client.js';
import * as m015 from '../../src/db/migrations/015_domain_verification.js';
import * as m021 from '../../src/db/migrations/021_drop_domain_tls.js';
import { newId, nowIso, randomString } from '../../src/lib/ids.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError, edgeRequest } from '../support/http.js';
import { waitFor } from '../support/wait.js';

const APPS = 'apps.test';
const uniq = (label: string) => `${label}-${randomString(6)}.example.com`;

/** The status the edge of `server` answers for `host` (404: no project is served there; 503: a project not deployed yet). */
async function edgeStatus(server: TestServer, host: string): Promise<number> {
  return (await edgeRequest(getRuntime(server.ctx).edgePort(), host, '/', { timeoutMs: 10000 })).status;
}

/** Waits until the edge routes `host` to a project (a project with no release answers 503) or serves nothing there (404). */
async function waitRouted(server: TestServer, host: string, routed: boolean): Promise<void> {
  const want = routed ? 503 : 404;
  await waitFor(async () => (await edgeStatus(server, host)) === want, `the edge to answer ${want} for ${host}`, 3000);
}

async function auditOf(server: TestServer, projectId: string, action: string) {
  return server.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', projectId).where('action', '=', action).orderBy('at').orderBy('id').execute();
}

describe('custom domains on an instance without verification (the self-hosted default)', () => {
  let server: TestServer;
  let team: TestOrg;
  let stranger: TestUser;
  const api = (u: TestUser) => server.api(u.token);

  before(async () => {
    server = await startTestServer({ background: true, env: { BERTH_APPS_DOMAIN: APPS } });
    team = await createTeam(server);
    stranger = await createUser(server);
  });
  after(() => server?.close());

  it('a domain added is verified at once, answered without a verification record, and routed by the edge', async () => {
    const p = await createProject(server, team.owner);
    const domain = uniq('shop');
    const r = await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: domain.toUpperCase() + '.' });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(Object.keys(r.body.data).sort(), ['createdAt', 'domain', 'primary', 'tls', 'verified']);
    assert.equal(r.body.data.domain, domain);
    assert.equal(r.body.data.primary, false);
    assert.equal(r.body.data.verified, true);
    assert.deepEqual(r.body.data.tls, { status: 'none' });
    await waitRouted(server, domain, true);
    assert.equal(await edgeStatus(server, uniq('nobody')), 404);
    // verifying is nothing to do: it is already verified
    const v = await api(team.member).post(`/api/projects/${p.id}/domains/${domain}/verify`);
    assert.equal(v.status, 200, v.text);
    assert.equal(v.body.data.verified, true);
    const add = await auditOf(server, p.id, 'project.domain.add');
    assert.equal(add.length, 1);
    assert.equal(add[0]!.actorId, team.member.userId);
    assert.deepEqual(JSON.parse(add[0]!.details as string), { domain, primary: false, verified: true });
  });

  it('GET lists the project\'s domains oldest first, IDNA names as ASCII; the project record marks them verified', async () => {
    const p = await createProject(server, team.owner);
    const first = uniq('list');
    assert.equal((await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: first })).status, 201);
    const idn = `bücher-${randomString(6)}.example`;
    const r2 = await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: idn });
    assert.equal(r2.status, 201, r2.text);
    assert.match(r2.body.data.domain, /^xn--bcher-.*\.example$/);
    const list = await api(team.member).get(`/api/projects/${p.id}/domains`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((d: any) => [d.domain, d.primary, d.verified, d.tls.status]),
      [
        [first, false, true, 'none'],
        [r2.body.data.domain, false, true, 'none'],
      ],
    );
    for (const d of list.body.data) assert.ok(!Number.isNaN(Date.parse(d.createdAt)));
    const rec = (await api(team.member).get(`/api/projects/${p.id}`)).body.data;
    assert.deepEqual(
      rec.routes.domains.map((d: any) => [d.domain, d.primary, d.verified]),
      [
        [first, false, true],
        [r2.body.data.domain, false, true],
      ],
    );
    assert.equal(rec.routes.primaryDomain, `${p.slug}.${APPS}`, 'no primary custom domain: the free domain is primary');
  });

  it('primary: added with primary true, switched by another add or by connect, one primary at a time', async () => {
    const p = await createProject(server, team.owner);
    const [a, b] = [uniq('pa'), uniq('pb')];
    let r = await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: a, primary: true });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.data.primary, true);
    assert.equal((await api(team.member).get(`/api/projects/${p.id}`)).body.data.routes.primaryDomain, a);
    r = await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: b, primary: true });
    assert.equal(r.body.data.primary, true);
    let list = (await api(team.member).get(`/api/projects/${p.id}/domains`)).body.data;
    assert.deepEqual(list.map((d: any) => [d.domain, d.primary]), [[a, false], [b, true]]);
    const c = await api(team.member).post(`/api/projects/${p.id}/connect`, { domain: a });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.routes.primaryDomain, a);
    list = (await api(team.member).get(`/api/projects/${p.id}/domains`)).body.data;
    assert.deepEqual(list.map((d: any) => [d.domain, d.primary]), [[a, true], [b, false]]);
    // The info URL is the primary domain's.
    const info = await api(team.member).get(`/api/projects/${p.id}/info`);
    assert.match(info.body.data.runtime.url, new RegExp(`^http://${a.replace(/\./g, '\\.')}(:\\d+)?$`));
  });

  it('DELETE removes a domain (the edge stops routing it); when the primary goes the free domain serves as primary', async () => {
    const p = await createProject(server, team.owner);
    const [a, b] = [uniq('ra'), uniq('rb')];
    await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: a, primary: true });
    await api(team.member).post(`/api/projects/${p.id}/domains`, { domain: b });
    await waitRouted(server, b, true);
    let r = await api(team.member).delete(`/api/projects/${p.id}/domains/${b}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { domain: b, deleted: true, primaryDomain: a });
    await waitRouted(server, b, false);
    r = await api(team.member).delete(`/api/projects/${p.id}/domains/${a.toUpperCase()}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { domain: a, deleted: true, primaryDomain: `${p.slug}.${APPS}` });
    const rec = (await api(team.member).get(`/api/projects/${p.id}`)).body.data;
    assert.deepEqual(rec.routes.domains, []);
    assert.equal(rec.routes.primaryDomain, `${p.slug}.${APPS}`);
    assertError(await api(team.member).delete(`/api/projects/${p.id}/domains/${a}`), 404, 'NOT_FOUND');
    const removed = await auditOf(server, p.id, 'project.domain.remove');
    assert.deepEqual(
      removed.map((e) => [e.actorId, JSON.parse(e.details as string)]),
      [
        [team.member.userId, { domain: b, wasPrimary: false, wasVerified: true }],
        [team.member.userId, { domain: a, wasPrimary: true, wasVerified: true }],
      ],
    );
    // A removed domain is free for another project.
    const q = await createProject(server, stranger);
    assert.equal((await api(stranger).post(`/api/projects/${q.id}/domains`, { domain: b })).status, 201);
  });

  it('409 naming domain when another project (any org) verified it, or this project already has it', async () => {
    const p = await createProject(server, team.owner);
    const domain = uniq('taken');
    assert.equal((await api(team.member).post(`/api/projects/${p.id}/domains`, { domain })).status, 201);
    assertError(await api(team.member).post(`/api/projects/${p.id}/domains`, { domain }), 409, 'CONFLICT', 'domain');
    assertError(await api(team.member).post(`/api/projects/${p.id}/domains`, { domain, primary: true }), 409, 'CONFLICT', 'domain');
    const q = await createProject(server, stranger);
    assertError(await api(stranger).post(`/api/projects/${q.id}/domains`, { domain: domain.toUpperCase() }), 409, 'CONFLICT', 'domain');
    assertError(await api(stranger).post(`/api/projects/${q.id}/connect`, { domain }), 409, 'CONFLICT', 'domain');
    const own = await createProject(server, team.owner);
    assertError(await api(team.member).post(`/api/projects/${own.id}/domains`, { domain }), 409, 'CONFLICT', 'domain');
    assert.deepEqual((await api(stranger).get(`/api/projects/${q.id}/domains`)).body.data, []);
  });

  it('400 naming domain for bad domains; 404 for another org\'s project; 403 without access', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/domains`;
    for (const domain of ['example.com:8080', '*.example.com', 'https://example.com', 'example.com/path', '10.0.0.1', 'localhost', 'bad_label.example.com', `x.${APPS}`, '', ' ']) {
      assertError(await api(team.member).post(u, { domain }), 400, 'VALIDATION_FAILED', 'domain');
    }
    assertError(await api(team.member).post(u, {}), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await api(team.member).post(u, { domain: 'a.example.net', primary: 'yes' }), 400, 'VALIDATION_FAILED', 'primary');
    assertError(await api(team.member).delete(`${u}/${encodeURIComponent('*.example.com')}`), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await api(team.member).post(`${u}/${encodeURIComponent('x:1')}/verify`), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await api(team.member).post(`${u}/not-held.example.com/verify`), 404, 'NOT_FOUND');
    const domain = uniq('mine');
    assert.equal((await api(team.member).post(u, { domain })).status, 201);
    for (const r of [
      await api(stranger).get(u),
      await api(stranger).post(u, { domain: uniq('x') }),
      await api(stranger).delete(`${u}/${domain}`),
      await api(stranger).post(`${u}/${domain}/verify`),
    ]) {
      assertError(r, 404, 'NOT_FOUND');
    }
    assertError(await api(team.restricted).get(u), 403, 'FORBIDDEN');
    const reader = await createUser(server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(server, reader, 'project', p.id, ['read']);
    assert.equal((await api(reader).get(u)).status, 200);
    assertError(await api(reader).post(u, { domain: uniq('r') }), 403, 'FORBIDDEN');
    assertError(await api(reader).delete(`${u}/${domain}`), 403, 'FORBIDDEN');
    assertError(await api(reader).post(`${u}/${domain}/verify`), 403, 'FORBIDDEN');
    assert.equal((await api(team.member).get(u)).body.data.length, 1, 'nothing was added or removed');
  });
});

describe('custom domains with BERTH_DOMAIN_VERIFICATION=dns (TXT record _berth-challenge.<domain>)', () => {
  let server: TestServer;
  let dns: DnsStub;
  let team: TestOrg;
  let stranger: TestUser;
  const api = (u: TestUser) => server.api(u.token);

  before(async () => {
    dns = await startDnsStub();
    server = await startTestServer({ background: true, env: { BERTH_APPS_DOMAIN: APPS, BERTH_DOMAIN_VERIFICATION: 'dns', BERTH_DNS_SERVERS: dns.server } });
    team = await createTeam(server);
    stranger = await createUser(server);
  });
  after(async () => {
    await server?.close();
    await dns?.close();
  });

  it('a domain is added unverified with its TXT record, not routed, and verified once the record holds the value', async () => {
    const p = await createProject(server, team.owner);
    const domain = uniq('dns');
    const name = `_berth-challenge.${domain}`;
    const r = await api(team.member).post(`/api/projects/${p.id}/domains`, { domain, primary: true });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.data.verified, false);
    assert.equal(r.body.data.primary, true);
    assert.equal(r.body.data.verification.type, 'TXT');
    assert.equal(r.body.data.verification.name, name);
    assert.match(r.body.data.verification.value, /^berth-verify=[a-z0-9]{32}$/);
    const value: string = r.body.data.verification.value;
    assert.deepEqual((await api(team.member).get(`/api/projects/${p.id}/domains`)).body.data[0].verification, r.body.data.verification);

    // Not routed, and not what the project is served at, while unverified.
    assert.equal(await edgeStatus(server, domain), 404);
    let rec = (await api(team.member).get(`/api/projects/${p.id}`)).body.data;
    assert.equal(rec.routes.primaryDomain, `${p.slug}.${APPS}`);
    assert.deepEqual(rec.routes.domains.map((d: any) => [d.domain, d.primary, d.verified]), [[domain, true, false]]);
    let info = (await api(team.member).get(`/api/projects/${p.id}/info`)).body.data;
    assert.ok(info.runtime.url.startsWith(`http://${p.slug}.${APPS}`), info.runtime.url);

    // No record, other values, a failing lookup: 400 naming domain, saying what was found.
    const verify = () => api(team.member).post(`/api/projects/${p.id}/domains/${domain}/verify`);
    let v = await verify();
    assertError(v, 400, 'VALIDATION_FAILED', 'domain');
    assert.match(v.body.error.message, /no TXT record at _berth-challenge\./);
    assert.ok(v.body.error.message.includes(value), 'says which value is expected');
    dns.txt.set(name, ['google-site-verification=abc', 'berth-verify=someoneelse']);
    v = await verify();
    assertError(v, 400, 'VALIDATION_FAILED', 'domain');
    assert.match(v.body.error.message, /hold "google-site-verification=abc", "berth-verify=someoneelse"/);
    dns.servfail.add(name);
    v = await verify();
    assertError(v, 400, 'VALIDATION_FAILED', 'domain');
    assert.match(v.body.error.message, /DNS lookup of _berth-challenge\.\S+ failed: .*SERVFAIL/);
    dns.servfail.delete(name);
    assert.equal(await edgeStatus(server, domain), 404);
    assert.equal((await auditOf(server, p.id, 'project.domain.verify')).length, 0);

    dns.txt.set(name, ['unrelated', value]);
    v = await verify();
    assert.equal(v.status, 200, v.text);
    assert.equal(v.body.data.verified, true);
    assert.equal(v.body.data.verification, undefined);
    assert.ok(dns.queries.includes(`TXT ${name}`));
    await waitRouted(server, domain, true);
    rec = (await api(team.member).get(`/api/projects/${p.id}`)).body.data;
    assert.equal(rec.routes.primaryDomain, domain);
    info = (await api(team.member).get(`/api/projects/${p.id}/info`)).body.data;
    assert.ok(info.runtime.url.startsWith(`http://${domain}`), info.runtime.url);
    const audit = await auditOf(server, p.id, 'project.domain.verify');
    assert.deepEqual(
      audit.map((e) => [e.actorId, JSON.parse(e.details as string)]),
      [[team.member.userId, { domain, method: 'dns' }]],
    );
    // Verified stays verified: no lookup needed.
    dns.txt.delete(name);
    assert.equal((await verify()).status, 200);
  });

  it('connect adds an unverified primary: the free domain serves until it is verified', async () => {
    const p = await createProject(server, team.owner);
    const domain = uniq('conn');
    const c = await api(team.member).post(`/api/projects/${p.id}/connect`, { domain });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.routes.primaryDomain, `${p.slug}.${APPS}`);
    assert.deepEqual(c.body.data.routes.domains.map((d: any) => [d.domain, d.primary, d.verified]), [[domain, true, false]]);
    const value = (await api(team.member).get(`/api/projects/${p.id}/domains`)).body.data[0].verification.value;
    dns.txt.set(`_berth-challenge.${domain}`, [value]);
    assert.equal((await api(team.member).post(`/api/projects/${p.id}/domains/${domain}/verify`)).status, 200);
    assert.equal((await api(team.member).get(`/api/projects/${p.id}`)).body.data.routes.primaryDomain, domain);
  });

  it('an unverified claim blocks nobody: another org verifies first, after which the first cannot verify (409)', async () => {
    const domain = uniq('race');
    const name = `_berth-challenge.${domain}`;
    const mine = await createProject(server, team.owner);
    const theirs = await createProject(server, stranger);
    const a = await api(team.member).post(`/api/projects/${mine.id}/domains`, { domain });
    assert.equal(a.status, 201, a.text);
    const b = await api(stranger).post(`/api/projects/${theirs.id}/domains`, { domain });
    assert.equal(b.status, 201, b.text);
    assert.notEqual(a.body.data.verification.value, b.body.data.verification.value, 'each claim has its own value');
    // The record holds only the first org's value: the other cannot verify with it.
    dns.txt.set(name, [a.body.data.verification.value]);
    assertError(await api(stranger).post(`/api/projects/${theirs.id}/domains/${domain}/verify`), 400, 'VALIDATION_FAILED', 'domain');
    // The other org proves it first.
    dns.txt.set(name, [b.body.data.verification.value, a.body.data.verification.value]);
    const won = await api(stranger).post(`/api/projects/${theirs.id}/domains/${domain}/verify`);
    assert.equal(won.status, 200, won.text);
    await waitRouted(server, domain, true);
    const lost = await api(team.member).post(`/api/projects/${mine.id}/domains/${domain}/verify`);
    assertError(lost, 409, 'CONFLICT', 'domain');
    // New claims are refused now; the stale claim can still be removed.
    const third = await createProject(server, team.owner);
    assertError(await api(team.member).post(`/api/projects/${third.id}/domains`, { domain }), 409, 'CONFLICT', 'domain');
    assert.equal((await api(team.member).delete(`/api/projects/${mine.id}/domains/${domain}`)).status, 200);
    // The edge serves the project that verified it.
    const rows = await server.ctx.db.selectFrom('domains').select(['projectId', 'verifiedAt']).where('domain', '=', domain).execute();
    assert.deepEqual(rows.map((r) => [r.projectId, r.verifiedAt !== null]), [[theirs.id, true]]);
  });
});

describe('migration 015 (domain verification)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  it('keeps existing domains as verified, each with its own value; a domain is verified by one project, claimed by many', async () => {
    const { db } = server.ctx;
    const team = await createTeam(server);
    const p = await createProject(server, team.owner);
    const q = await createProject(server, team.owner);
    const [a, b] = [uniq('old-a'), uniq('old-b')];
    assert.equal((await server.api(team.owner.token).post(`/api/projects/${p.id}/connect`, { domain: a })).status, 200);
    // Back to the shape before 015, with a row written the old way, then forward again.
    await m015.down(db);
    const createdAt = '2024-01-02T03:04:05.000Z';
    await db.insertInto('domains').values({ id: newId('dom'), orgId: team.orgId, projectId: p.id, domain: b, isPrimary: 0, createdAt } as never).execute();
    await m015.up(db);
    const rows = await db.selectFrom('domains').selectAll().where('projectId', '=', p.id).orderBy('domain').execute();
    // 015's shape has the `tls` column that 021 drops.
    assert.deepEqual(rows.map((r) => [r.domain, r.isPrimary, (r as typeof r & { tls: string }).tls, r.verifiedAt !== null]), [
      [a, 1, 'none', true],
      [b, 0, 'none', true],
    ]);
    assert.equal(rows.find((r) => r.domain === b)!.verifiedAt, createdAt);
    for (const r of rows) assert.match(r.verification, /^berth-verify=[a-z0-9]{32}$/);
    assert.notEqual(rows[0]!.verification, rows[1]!.verification);
    assert.equal((await server.api(team.owner.token).get(`/api/projects/${p.id}`)).body.data.routes.primaryDomain, a);
    await m021.up(db);

    const row = (projectId: string, verifiedAt: string | null) => ({
      id: newId('dom'),
      orgId: team.orgId,
      projectId,
      domain: a,
      isPrimary: 0,
      verification: `berth-verify=${randomString(32)}`,
      verifiedAt,
      createdAt: nowIso(),
    });
    await db.insertInto('domains').values(row(q.id, null)).execute();
    await assert.rejects(db.insertInto('domains').values(row(q.id, null)).execute(), (e) => isUniqueViolation(e), 'a project holds a domain once');
    await db.deleteFrom('domains').where('projectId', '=', q.id).execute();
    await assert.rejects(db.insertInto('domains').values(row(q.id, nowIso())).execute(), (e) => isUniqueViolation(e), 'one verified claim per domain');
  });
});
