import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { GitPort } from '../../src/modules/projects/index.js';
import { createDeployment, createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';

let server: TestServer;
let team: TestOrg;
let stranger: TestUser;

before(async () => {
  server = await startTestServer({ env: { BERTH_APPS_DOMAIN: 'apps.test', BERTH_PUBLIC_URL: 'https://berth.example.org' } });
  team = await createTeam(server);
  stranger = await createUser(server);
});
after(async () => {
  await server?.close();
});

const api = (u: TestUser) => server.api(u.token);

/** A server of its own whose git port is `git` (null: no git provider area at all), with a team. */
async function serverWithGit(t: { after(fn: () => Promise<void>): void }, git: GitPort | null): Promise<{ srv: TestServer; org: TestOrg }> {
  const srv = await startTestServer({ env: { BERTH_APPS_DOMAIN: 'apps.test', BERTH_PUBLIC_URL: 'https://berth.example.org' }, ports: { git } });
  t.after(() => srv.close());
  return { srv, org: await createTeam(srv) };
}

describe('resources', () => {
  it('GET answers the defaults of contract section 5', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).get(`/api/projects/${p.id}/resources`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, {
      production: { cpuCores: 1, memoryMb: 512, diskMb: 1024, replicas: 1 },
      build: { cpuCores: 2, memoryMb: 2048, diskMb: 4096 },
      sleepMode: 'always_on',
      port: 3000,
    });
  });

  it('PATCH updates only the given fields; POST is an alias', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).patch(`/api/projects/${p.id}/resources`, { production: { cpuCores: 2.5 }, sleepMode: 'auto_sleep', port: 8080 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.production, { cpuCores: 2.5, memoryMb: 512, diskMb: 1024, replicas: 1 });
    assert.equal(r.body.data.sleepMode, 'auto_sleep');
    assert.equal(r.body.data.port, 8080);
    const a = await api(team.member).post(`/api/projects/${p.id}/resources`, { build: { memoryMb: 4096 } });
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body.data.build, { cpuCores: 2, memoryMb: 4096, diskMb: 4096 });
    assert.equal(a.body.data.production.cpuCores, 2.5);
    const g = await api(team.member).get(`/api/projects/${p.id}`);
    assert.equal(g.body.data.sleepMode, 'auto_sleep');
    assert.equal(g.body.data.config.port, 8080);
  });

  it('answers 400 naming the field: cpuCores above 4 or not above 0, memory and disk out of range, port, sleepMode', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/resources`;
    for (const method of ['patch', 'post'] as const) {
      assertError(await api(team.member)[method](u, { production: { cpuCores: 5 } }), 400, 'VALIDATION_FAILED', 'production.cpuCores');
      assertError(await api(team.member)[method](u, { build: { cpuCores: 4.5 } }), 400, 'VALIDATION_FAILED', 'build.cpuCores');
    }
    assertError(await api(team.member).patch(u, { production: { cpuCores: 0 } }), 400, 'VALIDATION_FAILED', 'production.cpuCores');
    assertError(await api(team.member).patch(u, { production: { cpuCores: '2' } }), 400, 'VALIDATION_FAILED', 'production.cpuCores');
    assertError(await api(team.member).patch(u, { production: { memoryMb: 32 } }), 400, 'VALIDATION_FAILED', 'production.memoryMb');
    assertError(await api(team.member).patch(u, { build: { memoryMb: 70000 } }), 400, 'VALIDATION_FAILED', 'build.memoryMb');
    assertError(await api(team.member).patch(u, { production: { diskMb: 100 } }), 400, 'VALIDATION_FAILED', 'production.diskMb');
    assertError(await api(team.member).patch(u, { production: { replicas: 0 } }), 400, 'VALIDATION_FAILED', 'production.replicas');
    assertError(await api(team.member).patch(u, { port: 0 }), 400, 'VALIDATION_FAILED', 'port');
    assertError(await api(team.member).patch(u, { sleepMode: 'sometimes' }), 400, 'VALIDATION_FAILED', 'sleepMode');
    assert.equal((await api(team.member).patch(u, { production: { cpuCores: 4 } })).body.data.production.cpuCores, 4);
    assert.equal((await api(team.member).patch(u, { production: { replicas: 3 } })).body.data.production.replicas, 3);
  });

  it('sleep-mode sets the mode by its own route', async () => {
    const p = await createProject(server, team.owner);
    const r = await api(team.member).post(`/api/projects/${p.id}/sleep-mode`, { sleepMode: 'auto_sleep' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.sleepMode, 'auto_sleep');
    assert.equal((await api(team.member).get(`/api/projects/${p.id}/resources`)).body.data.sleepMode, 'auto_sleep');
    assertError(await api(team.member).post(`/api/projects/${p.id}/sleep-mode`, {}), 400, 'VALIDATION_FAILED', 'sleepMode');
    assertError(await api(team.member).post(`/api/projects/${p.id}/sleep-mode`, { sleepMode: 'never' }), 400, 'VALIDATION_FAILED', 'sleepMode');
  });
});

describe('clone credential', () => {
  it('PATCH (project:admin) stores it encrypted; GET masks it; a member can read but not set it', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/clone-token`;
    let g = await api(team.member).get(u);
    assert.equal(g.status, 200);
    assert.deepEqual(g.body.data, { configured: false, username: null, token: null, updatedAt: null });
    const TOKEN = 'ghp_cloneTokenValue1234567890';
    assertError(await api(team.member).patch(u, { token: TOKEN }), 403, 'FORBIDDEN');
    const s = await api(team.admin).patch(u, { token: TOKEN, username: 'x-access-token' });
    assert.equal(s.status, 200, s.text);
    assert.ok(!s.text.includes(TOKEN));
    assert.equal(s.body.data.token, '********');
    g = await api(team.member).get(u);
    assert.equal(g.body.data.configured, true);
    assert.equal(g.body.data.username, 'x-access-token');
    assert.equal(g.body.data.token, '********');
    assert.ok(g.body.data.updatedAt);
    const row = await server.ctx.db.selectFrom('cloneCredentials').selectAll().where('projectId', '=', p.id).executeTakeFirstOrThrow();
    assert.ok(!row.token.includes(TOKEN));
    assertError(await api(team.admin).patch(u, {}), 400, 'VALIDATION_FAILED', 'token');
    assertError(await api(team.admin).patch(u, { token: '' }), 400, 'VALIDATION_FAILED', 'token');
    assertError(await api(stranger).get(u), 404, 'NOT_FOUND');
  });
});

describe('custom domains: POST connect', () => {
  it('adds the domain and makes it primary in one call; IDNA; unique across the instance (409)', async () => {
    const p = await createProject(server, team.owner);
    let r = await api(team.member).post(`/api/projects/${p.id}/connect`, { domain: 'Shop.Example.com' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.routes.primaryDomain, 'shop.example.com');
    assert.deepEqual(r.body.data.routes.domains.map((d: any) => [d.domain, d.primary]), [['shop.example.com', true]]);
    r = await api(team.member).post(`/api/projects/${p.id}/connect`, { domain: 'bücher.example' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.routes.primaryDomain, 'xn--bcher-kva.example');
    assert.deepEqual(
      r.body.data.routes.domains.map((d: any) => [d.domain, d.primary]),
      [
        ['shop.example.com', false],
        ['xn--bcher-kva.example', true],
      ],
    );
    // connecting an own domain again makes it primary again
    r = await api(team.member).post(`/api/projects/${p.id}/connect`, { domain: 'shop.example.com' });
    assert.equal(r.body.data.routes.primaryDomain, 'shop.example.com');
    assert.equal(r.body.data.routes.domains.filter((d: any) => d.primary).length, 1);
    // another project (any org) cannot take it
    const q = await createProject(server, stranger);
    assertError(await api(stranger).post(`/api/projects/${q.id}/connect`, { domain: 'SHOP.example.com.' }), 409, 'CONFLICT', 'domain');
  });

  it('answers 400 for ports, wildcards, schemes, IPs, single labels, the apps domain; 404 for another org', async () => {
    const p = await createProject(server, team.owner);
    const u = `/api/projects/${p.id}/connect`;
    for (const domain of ['example.com:8080', '*.example.com', 'https://example.com', 'example.com/path', '10.0.0.1', 'localhost', 'bad_label.example.com', `x.apps.test`, '']) {
      assertError(await api(team.member).post(u, { domain }), 400, 'VALIDATION_FAILED', 'domain');
    }
    assertError(await api(team.member).post(u, {}), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await api(stranger).post(u, { domain: 'a.example.net' }), 404, 'NOT_FOUND');
    assertError(await api(team.restricted).post(u, { domain: 'a.example.net' }), 403, 'FORBIDDEN');
  });
});

describe('git routes', () => {
  const fake: GitPort & { hooks: string[] } = {
    hooks: [],
    async repository(_c, _o, owner, repo) {
      if (repo === 'missing') throw Object.assign(new Error('nf'), {});
      return { owner, name: repo, fullName: `${owner}/${repo}`, private: false, defaultBranch: 'trunk', cloneUrl: `https://github.example/${owner}/${repo}.git` };
    },
    async defaultBranch() {
      return 'trunk';
    },
    async branches() {
      return [
        { name: 'trunk', commit: 'aaa111', protected: true },
        { name: 'dev', commit: 'bbb222', protected: false },
      ];
    },
    async headCommit(_c, _o, _ow, _r, branch) {
      return branch === 'trunk' ? 'aaa111' : null;
    },
    async ensureWebhook(_c, _o, owner, repo, url) {
      fake.hooks.push(`${owner}/${repo} ${url}`);
      return { id: '77', url };
    },
  };

  it('without a connected provider: git/link without branch, branches, commit-status and enabling auto-deploy are 400 GIT_PROVIDER_NOT_CONNECTED', async (t) => {
    // The git provider area's own port while nothing is connected, and no port at all.
    const none = await serverWithGit(t, null);
    for (const [srv, org] of [[server, team], [none.srv, none.org]] as const) {
      const p = await createProject(srv, org.owner, { gitOwner: 'acme', gitRepo: 'web', gitBranch: 'main' });
      const c = srv.api(org.member.token);
      assertError(await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme', repo: 'web' }), 400, 'GIT_PROVIDER_NOT_CONNECTED');
      assertError(await c.get(`/api/projects/${p.id}/branches`), 400, 'GIT_PROVIDER_NOT_CONNECTED');
      assertError(await c.get(`/api/projects/${p.id}/commit-status`), 400, 'GIT_PROVIDER_NOT_CONNECTED');
      assertError(await c.get(`/api/projects/${p.id}/git`), 400, 'GIT_PROVIDER_NOT_CONNECTED');
      assertError(await c.post(`/api/projects/${p.id}/auto-deploy`, { enabled: true }), 400, 'GIT_PROVIDER_NOT_CONNECTED');
    }
    // what needs no provider still works: an explicit branch is recorded, disabling auto-deploy, branch, webhook-domain
    const p = await createProject(none.srv, none.org.owner);
    const c = none.srv.api(none.org.member.token);
    const l = await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme', repo: 'api', branch: 'release' });
    assert.equal(l.status, 200, l.text);
    assert.deepEqual(l.body.data.source, { type: 'git', gitProvider: 'github', gitOwner: 'acme', gitRepo: 'api', gitBranch: 'release', localPath: null });
    assert.equal((await c.post(`/api/projects/${p.id}/auto-deploy`, { enabled: false })).body.data.autoDeploy, false);
    const unlinked = await createProject(none.srv, none.org.owner);
    const g = await c.get(`/api/projects/${unlinked.id}/git`);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.body.data.linked, false);
  });

  it('with a provider: link takes the default branch, git answers the repository, branches, commit-status, auto-deploy registers the webhook', async (t) => {
    const { srv, org } = await serverWithGit(t, fake);
    const p = await createProject(srv, org.owner);
    const c = srv.api(org.member.token);
    const l = await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme', repo: 'site' });
    assert.equal(l.status, 200, l.text);
    assert.equal(l.body.data.source.gitBranch, 'trunk');
    const envs = await c.get(`/api/projects/${p.id}/environments`);
    assert.equal(envs.body.data[0].branch, 'trunk');

    const g = await c.get(`/api/projects/${p.id}/git`);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.body.data.linked, true);
    assert.equal(g.body.data.owner, 'acme');
    assert.equal(g.body.data.repo, 'site');
    assert.equal(g.body.data.branch, 'trunk');
    assert.equal(g.body.data.repository.fullName, 'acme/site');

    const b = await c.get(`/api/projects/${p.id}/branches`);
    assert.deepEqual(b.body.data.map((x: any) => x.name), ['trunk', 'dev']);

    let cs = await c.get(`/api/projects/${p.id}/commit-status`);
    assert.deepEqual(cs.body.data, { branch: 'trunk', deployedCommit: null, remoteCommit: 'aaa111', upToDate: false });
    await createDeployment(srv, p, { status: 'ready', trigger: 'push', commit: 'aaa111', ref: 'trunk' });
    cs = await c.get(`/api/projects/${p.id}/commit-status`);
    assert.deepEqual(cs.body.data, { branch: 'trunk', deployedCommit: 'aaa111', remoteCommit: 'aaa111', upToDate: true });
    // What serves counts, not the newest: a newer ready deployment that is not current (rolled back from) is not the deployed commit.
    await createDeployment(srv, p, { status: 'ready', trigger: 'push', commit: 'bbb222', ref: 'trunk', current: false });
    cs = await c.get(`/api/projects/${p.id}/commit-status`);
    assert.equal(cs.body.data.deployedCommit, 'aaa111');

    const wd = await c.post(`/api/projects/${p.id}/webhook-domain`, { domain: 'hooks.example.com' });
    assert.equal(wd.status, 200, wd.text);
    assert.deepEqual(wd.body.data, { webhookDomain: 'hooks.example.com', webhookUrl: 'https://hooks.example.com/api/gitprovider/webhook' });
    const ad = await c.post(`/api/projects/${p.id}/auto-deploy`, { enabled: true });
    assert.equal(ad.status, 200, ad.text);
    assert.deepEqual(ad.body.data, { autoDeploy: true, webhookUrl: 'https://hooks.example.com/api/gitprovider/webhook', webhookId: '77' });
    assert.deepEqual(fake.hooks, ['acme/site https://hooks.example.com/api/gitprovider/webhook']);
    assert.equal((await c.get(`/api/projects/${p.id}`)).body.data.autoDeploy, true);

    const br = await c.post(`/api/projects/${p.id}/branch`, { branch: 'dev' });
    assert.equal(br.status, 200, br.text);
    assert.equal(br.body.data.source.gitBranch, 'dev');

    // no linked repository: branches and commit-status are 400
    const q = await createProject(srv, org.owner);
    assertError(await c.get(`/api/projects/${q.id}/branches`), 400, 'VALIDATION_FAILED');
    assertError(await c.post(`/api/projects/${q.id}/auto-deploy`, { enabled: true }), 400, 'VALIDATION_FAILED');
  });

  it('answers 400 naming owner or repo on git/link, and validates branch, webhook-domain, auto-deploy bodies', async () => {
    const p = await createProject(server, team.owner);
    const c = api(team.member);
    assertError(await c.post(`/api/projects/${p.id}/git/link`, { repo: 'web' }), 400, 'VALIDATION_FAILED', 'owner');
    assertError(await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme' }), 400, 'VALIDATION_FAILED', 'repo');
    assertError(await c.post(`/api/projects/${p.id}/git/link`, { owner: '', repo: 'web' }), 400, 'VALIDATION_FAILED', 'owner');
    assertError(await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme', repo: 'we b', branch: 'main' }), 400, 'VALIDATION_FAILED', 'repo');
    assertError(await c.post(`/api/projects/${p.id}/git/link`, { owner: 'acme', repo: 'web', branch: 'a b' }), 400, 'VALIDATION_FAILED', 'branch');
    assertError(await c.post(`/api/projects/${p.id}/branch`, {}), 400, 'VALIDATION_FAILED', 'branch');
    assertError(await c.post(`/api/projects/${p.id}/branch`, { branch: 'x..y' }), 400, 'VALIDATION_FAILED', 'branch');
    assertError(await c.post(`/api/projects/${p.id}/webhook-domain`, { domain: 'https://x.example.com/hook' }), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await c.post(`/api/projects/${p.id}/webhook-domain`, {}), 400, 'VALIDATION_FAILED', 'domain');
    assertError(await c.post(`/api/projects/${p.id}/auto-deploy`, { enabled: 'yes' }), 400, 'VALIDATION_FAILED', 'enabled');
    assertError(await c.post(`/api/projects/${p.id}/auto-deploy`, {}), 400, 'VALIDATION_FAILED', 'enabled');
  });
});

describe('authorization of the configuration routes', () => {
  it('every route: 404 for another org; 403 for a restricted member without a grant; write routes 403 with a read grant', async () => {
    const org = await createTeam(server);
    const p = await createProject(server, org.owner);
    const routes: [string, string, unknown, 'read' | 'write' | 'admin'][] = [
      ['GET', 'resources', undefined, 'read'],
      ['PATCH', 'resources', { port: 3001 }, 'write'],
      ['POST', 'resources', { port: 3001 }, 'write'],
      ['POST', 'sleep-mode', { sleepMode: 'always_on' }, 'write'],
      ['GET', 'clone-token', undefined, 'read'],
      ['PATCH', 'clone-token', { token: 't' }, 'admin'],
      ['GET', 'git', undefined, 'read'],
      ['POST', 'git/link', { owner: 'a', repo: 'b', branch: 'main' }, 'write'],
      ['GET', 'branches', undefined, 'read'],
      ['GET', 'commit-status', undefined, 'read'],
      ['POST', 'auto-deploy', { enabled: false }, 'write'],
      ['POST', 'webhook-domain', { domain: 'h.example.com' }, 'write'],
      ['POST', 'branch', { branch: 'main' }, 'write'],
      ['POST', 'connect', { domain: 'authz-test.example.com' }, 'write'],
      ['GET', 'env', undefined, 'read'],
      ['PATCH', 'env', { upserts: [] }, 'write'],
    ];
    for (const [method, sub, body] of routes) {
      const url = `/api/projects/${p.id}/${sub}`;
      assertError(await api(stranger).request(method, url, body), 404, 'NOT_FOUND');
      assertError(await api(org.restricted).request(method, url, body), 403, 'FORBIDDEN');
    }
    await createGrant(server, org.restricted, 'project', p.id, ['read']);
    for (const [method, sub, body, level] of routes) {
      const r = await api(org.restricted).request(method, `/api/projects/${p.id}/${sub}`, body);
      if (level === 'read') assert.notEqual(r.status, 403, `${method} ${sub}: ${r.text}`);
      else assertError(r, 403, 'FORBIDDEN');
    }
  });
});
