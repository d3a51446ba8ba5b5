import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stateKey } from '../../src/modules/gitprovider/github.js';
import { createGrant, type TestOrg } from '../support/factories.js';
import { installApp, startGitWorld, tokenTeam, uniqueLogin, WEBHOOK_SECRET, type GitWorld } from './setup.js';

/** Runs git asynchronously (the fake GitHub answers from this same process). */
function gitClone(args: string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile('git', args, { timeout: 30000, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', HOME: os.tmpdir() } }, (err, _stdout, stderr) => {
      resolve({ ok: !err, out: String(stderr) });
    });
  });
}

describe('git provider through a GitHub App installation', () => {
  // One server and one fake GitHub for the suite; every test makes its own team, its own GitHub
  // organization (a fresh login) with its own repositories, and its own installation.
  let w: GitWorld;

  // Template repositories no installation covers; each test copies them to an account of its own.
  const TEMPLATES = 'berth-templates';

  before(async () => {
    w = await startGitWorld();
    w.fake.createRepo(TEMPLATES, 'web', { files: { 'package.json': '{"name":"web","scripts":{"start":"node server.js"}}', 'README.md': '# web\n', 'src/index.js': 'console.log(1)\n' } });
    w.fake.push(TEMPLATES, 'web', { 'feature.txt': 'x' }, { branch: 'feature' });
    w.fake.createRepo(TEMPLATES, 'api', { files: { 'index.js': '1' } });
    w.fake.createRepo(TEMPLATES, 'docs', { files: { 'index.md': '1' } });
    w.fake.createRepo(TEMPLATES, 'private-thing', { files: { 'a.txt': 'a' } });
  });
  after(() => w.close());

  /**
   * A GitHub organization of its own (`acme-xxxxxx`) with copies of the templates: `web` (package.json,
   * README.md, src/index.js on main; a `feature` branch), `api` and `docs`; and an account of its own
   * (`someone-else-xxxxxx`) the App is not installed on, holding `private-thing`.
   */
  function githubOrg(): { owner: string; stranger: string } {
    const owner = uniqueLogin('acme');
    const stranger = uniqueLogin('someone-else');
    w.fake.account(owner, 'Organization');
    for (const name of ['web', 'api', 'docs']) w.fake.copyRepo(TEMPLATES, name, owner);
    w.fake.copyRepo(TEMPLATES, 'private-thing', stranger);
    return { owner, stranger };
  }

  /** A team of its own (tokenTeam) whose org has the App installed on a GitHub organization of its own (githubOrg). */
  async function connectedTeam(): Promise<{ team: TestOrg; owner: string; stranger: string; installationId: number }> {
    const team = await tokenTeam(w.server);
    const { owner, stranger } = githubOrg();
    const installationId = await installApp(w, w.server.api(team.owner.token), owner);
    return { team, owner, stranger, installationId };
  }

  it('an org with no installation: status is not_connected with an install URL, and listing routes answer 400 GIT_PROVIDER_NOT_CONNECTED', async () => {
    const team = await tokenTeam(w.server);
    const { owner } = githubOrg();
    const api = w.server.api(team.owner.token);
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.status, 200);
    assert.equal(st.body.data.state, 'not_connected');
    assert.deepEqual(st.body.data.accounts, []);
    assert.equal(st.body.data.cloudUnreachable, false);
    assert.ok(st.body.data.installUrl.startsWith(`${w.fake.url}/apps/berth-test/installations/new?state=`));
    for (const url of ['/api/gitprovider/repos', `/api/gitprovider/orgs/${owner}/repos`, `/api/gitprovider/repos/${owner}/web/branches`]) {
      const r = await api.get(url);
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, 'GIT_PROVIDER_NOT_CONNECTED', url);
    }
    const home = await api.get('/api/gitprovider/home');
    assert.equal(home.status, 200);
    assert.deepEqual(home.body.data, { state: 'not_connected', accounts: [], repos: [] });
  });

  it('connect answers the App install redirect; GitHub returning to connect/redirect binds the installation to the org of the signed state, and no other org', async () => {
    const team = await tokenTeam(w.server);
    const { owner } = githubOrg();
    const api = w.server.api(team.owner.token);
    const c = await api.post('/api/gitprovider/connect', {});
    assert.equal(c.status, 200);
    assert.equal(c.body.data.connected, false);
    assert.equal(c.body.data.flow, 'redirect');
    assert.match(c.body.data.url, /\/apps\/berth-test\/installations\/new\?state=/);
    const installationId = await installApp(w, api, owner);
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.body.data.state, 'connected');
    assert.deepEqual(st.body.data.accounts, [{ login: owner, type: 'Organization', source: 'app', installationId: String(installationId) }]);
    assert.deepEqual((await api.post('/api/gitprovider/connect', {})).body.data, { connected: true });
    // The App JWT was verified by the fake with the App's public key.
    assert.ok(w.fake.log.some((l) => l.path === `/app/installations/${installationId}` && l.auth === 'app'));
    // Another org does not see it.
    const other = await tokenTeam(w.server);
    assert.equal((await w.server.api(other.owner.token).get('/api/gitprovider/status')).body.data.state, 'not_connected');
  });

  it('the redirect state is single-use, expiring, signed and bound to org and user: tampered, expired, missing and reused states are 400, another org\'s state is 409', async () => {
    const { team, owner } = await connectedTeam();
    const api = w.server.api(team.owner.token);
    const st = (await api.get('/api/gitprovider/status')).body.data;
    const state = new URL(st.installUrl).searchParams.get('state')!;
    const inst = w.fake.install(`${owner}-two`, { type: 'Organization' });
    const cb = (s: string) => fetch(`${w.server.url}/api/gitprovider/connect/redirect?installation_id=${inst.id}&setup_action=install&state=${encodeURIComponent(s)}`, { redirect: 'manual' });
    // tampered
    const [body, sig] = state.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), o: 'org_other' })).toString('base64url');
    let r = await cb(`${forged}.${sig}`);
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as any).error.field, 'state');
    // expired (signed with the right key, but old)
    const old = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), n: 'n-old', e: Date.now() - 1000 })).toString('base64url');
    r = await cb(`${old}.${createHmac('sha256', stateKey(w.server.ctx)).update(old).digest('base64url')}`);
    assert.equal(r.status, 400);
    // missing
    r = await fetch(`${w.server.url}/api/gitprovider/connect/redirect?installation_id=${inst.id}&setup_action=install`, { redirect: 'manual' });
    assert.equal(r.status, 400);
    // good, once
    r = await cb(state);
    assert.equal(r.status, 302);
    assert.ok(r.headers.get('location')!.startsWith(w.server.url));
    r = await cb(state);
    assert.equal(r.status, 400);
    const accounts = (await api.get('/api/gitprovider/status')).body.data.accounts.map((a: any) => a.login).sort();
    assert.deepEqual(accounts, [owner, `${owner}-two`]);
    // An installation another org holds cannot be claimed with this org's state.
    const other = await tokenTeam(w.server);
    const ost = (await w.server.api(other.owner.token).get('/api/gitprovider/status')).body.data.installUrl;
    r = await fetch(`${w.server.url}/api/gitprovider/connect/redirect?installation_id=${inst.id}&setup_action=install&state=${encodeURIComponent(new URL(ost).searchParams.get('state')!)}`, { redirect: 'manual' });
    assert.equal(r.status, 409);
  });

  it('lists the installation repositories across Link-header pages, per owner, and 404s an owner it cannot see', async () => {
    const { team, owner, stranger } = await connectedTeam();
    w.fake.maxPerPage = 2;
    try {
      const api = w.server.api(team.member.token);
      const r = await api.get(`/api/gitprovider/repos?owner=${owner}`);
      assert.equal(r.status, 200);
      const names = r.body.data.map((x: any) => x.fullName).sort();
      assert.deepEqual(names, [`${owner}/api`, `${owner}/docs`, `${owner}/web`]);
      const web = r.body.data.find((x: any) => x.name === 'web');
      assert.deepEqual(Object.keys(web).sort(), ['cloneUrl', 'defaultBranch', 'fullName', 'id', 'name', 'owner', 'private'].sort());
      assert.equal(web.cloneUrl, `${w.fake.url}/${owner}/web.git`);
      assert.equal(web.defaultBranch, 'main');
      const org = await api.get(`/api/gitprovider/orgs/${owner}/repos`);
      assert.equal(org.body.data.length, 3);
      assert.equal((await api.get(`/api/gitprovider/repos/${stranger}/private-thing`)).status, 404);
      assert.equal((await api.get(`/api/gitprovider/orgs/${stranger}/repos`)).status, 404);
      assert.equal((await api.get(`/api/gitprovider/repos/${owner}/nope`)).status, 404);
    } finally {
      w.fake.maxPerPage = 100;
    }
  });

  it('reads repository metadata with branches, branches, files and a parsed package.json', async () => {
    const { team, owner } = await connectedTeam();
    const api = w.server.api(team.member.token);
    const meta = await api.get(`/api/gitprovider/repos/${owner}/web?branches=true`);
    assert.equal(meta.status, 200);
    assert.equal(meta.body.data.fullName, `${owner}/web`);
    const names = meta.body.data.branches.map((b: any) => b.name).sort();
    assert.deepEqual(names, ['feature', 'main']);
    const br = await api.get(`/api/gitprovider/repos/${owner}/web/branches`);
    const main = br.body.data.find((b: any) => b.name === 'main');
    assert.deepEqual(main, { name: 'main', commit: w.fake.headOf(owner, 'web'), protected: false });
    const files = await api.get(`/api/gitprovider/repos/${owner}/web/files`);
    assert.deepEqual(
      files.body.data.map((f: any) => [f.name, f.type]).sort(),
      [['README.md', 'file'], ['package.json', 'file'], ['src', 'dir']],
    );
    const sub = await api.get(`/api/gitprovider/repos/${owner}/web/files?path=src`);
    assert.deepEqual(sub.body.data, [{ name: 'index.js', path: 'src/index.js', type: 'file', size: 15 }]);
    const onFeature = await api.get(`/api/gitprovider/repos/${owner}/web/files?branch=feature`);
    assert.ok(onFeature.body.data.some((f: any) => f.name === 'feature.txt'));
    const pkg = await api.get(`/api/gitprovider/repos/${owner}/web/file`);
    assert.equal(pkg.status, 200);
    assert.equal(pkg.body.data.path, 'package.json');
    assert.deepEqual(pkg.body.data.content, { name: 'web', scripts: { start: 'node server.js' } });
    assert.match(pkg.body.data.sha, /^[0-9a-f]{40}$/);
    const readme = await api.get(`/api/gitprovider/repos/${owner}/web/file?file=README.md`);
    assert.equal(readme.body.data.content, '# web\n');
    assert.equal((await api.get(`/api/gitprovider/repos/${owner}/web/file?file=missing.txt`)).status, 404);
    const bad = await api.get(`/api/gitprovider/repos/${owner}/web/files?path=../etc`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'path');
    const badOwner = await api.get('/api/gitprovider/repos/ac%20me/web');
    assert.equal(badOwner.status, 400);
    assert.equal(badOwner.body.error.field, 'owner');
  });

  it('mints a clone token scoped to the repository, valid under an hour, that clones over smart HTTP; other tokens are refused', async () => {
    const { team, owner, stranger } = await connectedTeam();
    const api = w.server.api(team.member.token);
    const r = await api.get(`/api/gitprovider/repos/${owner}/web/clone-token`);
    assert.equal(r.status, 200);
    const { token, cloneUrl, command, expiresAt } = r.body.data;
    assert.match(token, /^ghs_/);
    assert.equal(cloneUrl, `${w.fake.url}/${owner}/web.git`);
    assert.ok(command.startsWith('git '));
    assert.ok(command.includes(cloneUrl));
    assert.ok(!cloneUrl.includes(token));
    const ttl = Date.parse(expiresAt) - Date.now();
    assert.ok(ttl > 0 && ttl < 3600_000, `ttl ${ttl}`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'clone-'));
    try {
      const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
      const ok = await gitClone(['-c', `http.extraHeader=Authorization: Basic ${basic}`, 'clone', '--quiet', cloneUrl, path.join(dir, 'a')]);
      assert.ok(ok.ok, ok.out);
      assert.equal(JSON.parse(readFileSync(path.join(dir, 'a', 'package.json'), 'utf8')).name, 'web');
      // The token is scoped to <owner>/web: <owner>/api is refused; so is a made-up token and no token.
      const basicOther = Buffer.from(`x-access-token:${token}`).toString('base64');
      assert.equal((await gitClone(['-c', `http.extraHeader=Authorization: Basic ${basicOther}`, 'clone', '--quiet', `${w.fake.url}/${owner}/api.git`, path.join(dir, 'b')])).ok, false);
      const fakeTok = Buffer.from('x-access-token:ghs_madeup').toString('base64');
      assert.equal((await gitClone(['-c', `http.extraHeader=Authorization: Basic ${fakeTok}`, 'clone', '--quiet', cloneUrl, path.join(dir, 'c')])).ok, false);
      assert.equal((await gitClone(['clone', '--quiet', cloneUrl, path.join(dir, 'd')])).ok, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // A second request mints a fresh token.
    const again = await api.get(`/api/gitprovider/repos/${owner}/web/clone-token`);
    assert.notEqual(again.body.data.token, token);
    // No installation for the owner: 409 NO_INSTALLATION_TOKEN (another source would be needed to see it at all).
    const none = await api.get(`/api/gitprovider/repos/${stranger}/private-thing/clone-token`);
    assert.equal(none.status, 409);
    assert.equal(none.body.error.code, 'NO_INSTALLATION_TOKEN');
  });

  it('caches the installation token for API calls until shortly before it expires', async () => {
    const { team, owner, installationId } = await connectedTeam();
    const api = w.server.api(team.member.token);
    await api.get(`/api/gitprovider/repos/${owner}/web`);
    const before = w.fake.minted.get(installationId) ?? 0;
    for (let i = 0; i < 3; i++) assert.equal((await api.get(`/api/gitprovider/repos/${owner}/web`)).status, 200);
    assert.equal(w.fake.minted.get(installationId) ?? 0, before);
    // Tokens that live less than the refresh margin are replaced on every use.
    const { forgetInstallationToken } = await import('../../src/modules/gitprovider/github.js');
    w.fake.tokenTtlMs = 4 * 60 * 1000;
    forgetInstallationToken(w.server.ctx, String(installationId));
    try {
      await api.get(`/api/gitprovider/repos/${owner}/web`);
      await api.get(`/api/gitprovider/repos/${owner}/web`);
      assert.equal(w.fake.minted.get(installationId) ?? 0, before + 2);
    } finally {
      w.fake.tokenTtlMs = 3600_000;
      forgetInstallationToken(w.server.ctx, String(installationId));
    }
  });

  it('registers the push webhook once and reuses it, lists it, and deletes it by hookId (gitprovider:admin)', async () => {
    const { team, owner } = await connectedTeam();
    const api = w.server.api(team.member.token);
    const first = await api.post(`/api/gitprovider/repos/${owner}/web/webhooks`);
    assert.equal(first.status, 201);
    const hook = first.body.data;
    assert.equal(hook.url, `${w.server.ctx.publicUrl()}/api/gitprovider/webhook`);
    assert.deepEqual(hook.events, ['push']);
    assert.equal(hook.active, true);
    assert.equal(w.fake.hookSecret(owner, 'web', hook.id), WEBHOOK_SECRET);
    assert.equal(w.fake.repo(owner, 'web')!.hooks[0]!.config.content_type, 'json');
    const second = await api.post(`/api/gitprovider/repos/${owner}/web/webhooks`);
    assert.equal(second.status, 200);
    assert.equal(second.body.data.id, hook.id);
    assert.equal(w.fake.repo(owner, 'web')!.hooks.length, 1);
    const list = await api.get(`/api/gitprovider/repos/${owner}/web/webhooks`);
    assert.deepEqual(list.body.data, [{ id: hook.id, url: hook.url, events: ['push'], active: true }]);
    // delete needs gitprovider:admin
    assert.equal((await api.delete(`/api/gitprovider/repos/${owner}/web/webhooks`, { hookId: hook.id })).status, 403);
    const admin = w.server.api(team.admin.token);
    const missing = await admin.delete(`/api/gitprovider/repos/${owner}/web/webhooks`, {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.field, 'hookId');
    const del = await admin.delete(`/api/gitprovider/repos/${owner}/web/webhooks`, { hookId: hook.id });
    assert.equal(del.status, 200);
    assert.equal(w.fake.repo(owner, 'web')!.hooks.length, 0);
    assert.equal((await admin.delete(`/api/gitprovider/repos/${owner}/web/webhooks`, { hookId: hook.id })).status, 404);
  });

  it('creates a repository in the installed organization (201), refuses a duplicate (409) or no name (400), and only gitprovider:admin deletes one', async () => {
    const { team, owner } = await connectedTeam();
    const api = w.server.api(team.member.token);
    const c = await api.post('/api/gitprovider/repos', { name: 'fresh', private: true, owner });
    assert.equal(c.status, 201);
    assert.equal(c.body.data.fullName, `${owner}/fresh`);
    assert.equal(c.body.data.private, true);
    assert.equal((await api.post('/api/gitprovider/repos', { name: 'fresh', private: true, owner })).status, 409);
    const noName = await api.post('/api/gitprovider/repos', { private: true, owner });
    assert.equal(noName.status, 400);
    assert.equal(noName.body.error.field, 'name');
    assert.equal((await api.delete(`/api/gitprovider/repos/${owner}/fresh`)).status, 403);
    const del = await w.server.api(team.owner.token).delete(`/api/gitprovider/repos/${owner}/fresh`);
    assert.equal(del.status, 200);
    assert.equal((await api.get(`/api/gitprovider/repos/${owner}/fresh`)).status, 404);
  });

  it('a restricted member sees only the repositories and installations its grants name', async () => {
    const { team, owner, installationId } = await connectedTeam();
    const r = w.server.api(team.restricted.token);
    assert.equal((await r.get('/api/gitprovider/home')).status, 403);
    await createGrant(w.server, team.restricted, 'gitprovider_repository', `${owner}/api`, ['read']);
    const home = await r.get('/api/gitprovider/home');
    assert.equal(home.status, 200);
    assert.equal(home.body.data.state, 'connected');
    assert.deepEqual(home.body.data.repos.map((x: any) => x.fullName), [`${owner}/api`]);
    assert.deepEqual(home.body.data.accounts.map((a: any) => a.login), [owner]);
    assert.equal(home.body.data.installUrl, undefined);
    assert.deepEqual((await r.get('/api/gitprovider/repos')).body.data.map((x: any) => x.fullName), [`${owner}/api`]);
    assert.equal((await r.get(`/api/gitprovider/repos/${owner}/api`)).status, 200);
    assert.equal((await r.get(`/api/gitprovider/repos/${owner}/api/branches`)).status, 200);
    assert.equal((await r.get(`/api/gitprovider/repos/${owner}/web`)).status, 403);
    assert.equal((await r.get(`/api/gitprovider/repos/${owner}/web/branches`)).status, 403);
    assert.equal((await r.post(`/api/gitprovider/repos/${owner}/api/webhooks`)).status, 403);
    // An installation grant covers every repository of that installation.
    await createGrant(w.server, team.restricted, 'gitprovider_installation', String(installationId), ['read']);
    const all = await r.get(`/api/gitprovider/repos?owner=${owner}`);
    assert.deepEqual(all.body.data.map((x: any) => x.fullName).sort(), [`${owner}/api`, `${owner}/docs`, `${owner}/web`]);
    assert.equal((await r.get(`/api/gitprovider/repos/${owner}/web`)).status, 200);
  });

  it('the permissions catalog lists the installations and repositories as grantable resources, and a grant on a repository outside the org is 400', async () => {
    const { team, owner, installationId } = await connectedTeam();
    const api = w.server.api(team.owner.token);
    const inst = await api.get('/api/permissions/resources?type=gitprovider_installation');
    assert.equal(inst.status, 200);
    assert.ok(inst.body.data.some((e: any) => e.id === String(installationId) && e.label === owner));
    const repos = await api.get(`/api/permissions/resources?type=gitprovider_repository&owner=${owner}`);
    assert.deepEqual(repos.body.data.map((e: any) => e.id).sort(), [`${owner}/api`, `${owner}/docs`, `${owner}/web`]);
    const ok = await api.post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'gitprovider_repository', resourceId: `${owner}/docs`, permissions: ['read'] });
    assert.equal(ok.status, 201, ok.text);
    const bad = await api.post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'gitprovider_repository', resourceId: `${owner}/nope`, permissions: ['read'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'RESOURCE_NOT_IN_ORG');
  });

  it('no response of a connected org carries a stored credential', async () => {
    const { team, owner } = await connectedTeam();
    const api = w.server.api(team.owner.token);
    for (const url of ['/api/gitprovider/status', '/api/gitprovider/home', '/api/gitprovider/repos', `/api/gitprovider/repos/${owner}/web?branches=true`]) {
      const r = await api.get(url);
      assert.equal(r.status, 200, url);
      assert.ok(!/ghs_|gho_/.test(r.text), url);
    }
  });

  it('disconnect needs gitprovider:admin, drops the org\'s bindings, and does not uninstall the App', async () => {
    const { team, installationId } = await connectedTeam();
    assert.equal((await w.server.api(team.member.token).post('/api/gitprovider/disconnect', {})).status, 403);
    const d = await w.server.api(team.owner.token).post('/api/gitprovider/disconnect', { source: 'all' });
    assert.equal(d.status, 200);
    const st = await w.server.api(team.owner.token).get('/api/gitprovider/status');
    assert.equal(st.body.data.state, 'not_connected');
    assert.ok(w.fake.installations.has(installationId));
    assert.equal((await w.server.api(team.owner.token).get('/api/gitprovider/repos')).body.error.code, 'GIT_PROVIDER_NOT_CONNECTED');
    const bad = await w.server.api(team.owner.token).post('/api/gitprovider/disconnect', { source: 'everything' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'source');
  });
});
