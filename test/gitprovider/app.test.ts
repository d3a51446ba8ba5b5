import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stateKey } from '../../src/modules/gitprovider/github.js';
import { createTeam, createGrant, type TestOrg } from '../support/factories.js';
import { installApp, startGitWorld, WEBHOOK_SECRET, type GitWorld } from './setup.js';

/** Runs git asynchronously (the fake GitHub answers from this same process). */
function gitClone(args: string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile('git', args, { timeout: 30000, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', HOME: os.tmpdir() } }, (err, _stdout, stderr) => {
      resolve({ ok: !err, out: String(stderr) });
    });
  });
}

describe('git provider through a GitHub App installation', () => {
  let w: GitWorld;
  let team: TestOrg;
  let installationId: number;

  before(async () => {
    w = await startGitWorld();
    team = await createTeam(w.server);
    w.fake.createRepo('acme', 'web', { type: 'Organization', files: { 'package.json': '{"name":"web","scripts":{"start":"node server.js"}}', 'README.md': '# web\n', 'src/index.js': 'console.log(1)\n' } });
    w.fake.push('acme', 'web', { 'feature.txt': 'x' }, { branch: 'feature' });
    w.fake.createRepo('acme', 'api', { files: { 'index.js': '1' } });
    w.fake.createRepo('acme', 'docs', { files: { 'index.md': '1' } });
    w.fake.createRepo('someone-else', 'private-thing', { files: { 'a.txt': 'a' } });
  });
  after(() => w.close());

  it('before anything is connected: status is not_connected with an install URL, and listing routes answer 400 GIT_PROVIDER_NOT_CONNECTED', async () => {
    const api = w.server.api(team.owner.token);
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.status, 200);
    assert.equal(st.body.data.state, 'not_connected');
    assert.deepEqual(st.body.data.accounts, []);
    assert.equal(st.body.data.cloudUnreachable, false);
    assert.ok(st.body.data.installUrl.startsWith(`${w.fake.url}/apps/berth-test/installations/new?state=`));
    for (const url of ['/api/gitprovider/repos', '/api/gitprovider/orgs/acme/repos', '/api/gitprovider/repos/acme/web/branches']) {
      const r = await api.get(url);
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, 'GIT_PROVIDER_NOT_CONNECTED', url);
    }
    const home = await api.get('/api/gitprovider/home');
    assert.equal(home.status, 200);
    assert.deepEqual(home.body.data, { state: 'not_connected', accounts: [], repos: [] });
  });

  it('connect answers the App install redirect; GitHub returning to connect/redirect binds the installation to the org of the signed state', async () => {
    const api = w.server.api(team.owner.token);
    const c = await api.post('/api/gitprovider/connect', {});
    assert.equal(c.status, 200);
    assert.equal(c.body.data.connected, false);
    assert.equal(c.body.data.flow, 'redirect');
    assert.match(c.body.data.url, /\/apps\/berth-test\/installations\/new\?state=/);
    installationId = await installApp(w, api, 'acme');
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.body.data.state, 'connected');
    assert.deepEqual(st.body.data.accounts, [{ login: 'acme', type: 'Organization', source: 'app', installationId: String(installationId) }]);
    assert.deepEqual((await api.post('/api/gitprovider/connect', {})).body.data, { connected: true });
    // The App JWT was verified by the fake with the App's public key.
    assert.ok(w.fake.log.some((l) => l.path === `/app/installations/${installationId}` && l.auth === 'app'));
    // Another org does not see it.
    const other = await createTeam(w.server);
    assert.equal((await w.server.api(other.owner.token).get('/api/gitprovider/status')).body.data.state, 'not_connected');
  });

  it('the redirect state is single-use, expiring, signed and bound to org and user', async () => {
    const api = w.server.api(team.owner.token);
    const st = (await api.get('/api/gitprovider/status')).body.data;
    const state = new URL(st.installUrl).searchParams.get('state')!;
    const inst = w.fake.install('acme-two', { type: 'Organization' });
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
    assert.deepEqual(accounts, ['acme', 'acme-two']);
    // An installation another org holds cannot be claimed with this org's state.
    const other = await createTeam(w.server);
    const ost = (await w.server.api(other.owner.token).get('/api/gitprovider/status')).body.data.installUrl;
    r = await fetch(`${w.server.url}/api/gitprovider/connect/redirect?installation_id=${inst.id}&setup_action=install&state=${encodeURIComponent(new URL(ost).searchParams.get('state')!)}`, { redirect: 'manual' });
    assert.equal(r.status, 409);
  });

  it('lists the installation repositories across Link-header pages, per owner, and 404s an owner it cannot see', async () => {
    w.fake.maxPerPage = 2;
    try {
      const api = w.server.api(team.member.token);
      const r = await api.get('/api/gitprovider/repos?owner=acme');
      assert.equal(r.status, 200);
      const names = r.body.data.map((x: any) => x.fullName).sort();
      assert.deepEqual(names, ['acme/api', 'acme/docs', 'acme/web']);
      const web = r.body.data.find((x: any) => x.name === 'web');
      assert.deepEqual(Object.keys(web).sort(), ['cloneUrl', 'defaultBranch', 'fullName', 'id', 'name', 'owner', 'private'].sort());
      assert.equal(web.cloneUrl, `${w.fake.url}/acme/web.git`);
      assert.equal(web.defaultBranch, 'main');
      const org = await api.get('/api/gitprovider/orgs/acme/repos');
      assert.equal(org.body.data.length, 3);
      assert.equal((await api.get('/api/gitprovider/repos/someone-else/private-thing')).status, 404);
      assert.equal((await api.get('/api/gitprovider/orgs/someone-else/repos')).status, 404);
      assert.equal((await api.get('/api/gitprovider/repos/acme/nope')).status, 404);
    } finally {
      w.fake.maxPerPage = 100;
    }
  });

  it('reads repository metadata with branches, branches, files and a parsed package.json', async () => {
    const api = w.server.api(team.member.token);
    const meta = await api.get('/api/gitprovider/repos/acme/web?branches=true');
    assert.equal(meta.status, 200);
    assert.equal(meta.body.data.fullName, 'acme/web');
    const names = meta.body.data.branches.map((b: any) => b.name).sort();
    assert.deepEqual(names, ['feature', 'main']);
    const br = await api.get('/api/gitprovider/repos/acme/web/branches');
    const main = br.body.data.find((b: any) => b.name === 'main');
    assert.deepEqual(main, { name: 'main', commit: w.fake.headOf('acme', 'web'), protected: false });
    const files = await api.get('/api/gitprovider/repos/acme/web/files');
    assert.deepEqual(
      files.body.data.map((f: any) => [f.name, f.type]).sort(),
      [['README.md', 'file'], ['package.json', 'file'], ['src', 'dir']],
    );
    const sub = await api.get('/api/gitprovider/repos/acme/web/files?path=src');
    assert.deepEqual(sub.body.data, [{ name: 'index.js', path: 'src/index.js', type: 'file', size: 15 }]);
    const onFeature = await api.get('/api/gitprovider/repos/acme/web/files?branch=feature');
    assert.ok(onFeature.body.data.some((f: any) => f.name === 'feature.txt'));
    const pkg = await api.get('/api/gitprovider/repos/acme/web/file');
    assert.equal(pkg.status, 200);
    assert.equal(pkg.body.data.path, 'package.json');
    assert.deepEqual(pkg.body.data.content, { name: 'web', scripts: { start: 'node server.js' } });
    assert.match(pkg.body.data.sha, /^[0-9a-f]{40}$/);
    const readme = await api.get('/api/gitprovider/repos/acme/web/file?file=README.md');
    assert.equal(readme.body.data.content, '# web\n');
    assert.equal((await api.get('/api/gitprovider/repos/acme/web/file?file=missing.txt')).status, 404);
    const bad = await api.get('/api/gitprovider/repos/acme/web/files?path=../etc');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'path');
    const badOwner = await api.get('/api/gitprovider/repos/ac%20me/web');
    assert.equal(badOwner.status, 400);
    assert.equal(badOwner.body.error.field, 'owner');
  });

  it('mints a clone token scoped to the repository, valid under an hour, that clones over smart HTTP; other tokens are refused', async () => {
    const api = w.server.api(team.member.token);
    const r = await api.get('/api/gitprovider/repos/acme/web/clone-token');
    assert.equal(r.status, 200);
    const { token, cloneUrl, command, expiresAt } = r.body.data;
    assert.match(token, /^ghs_/);
    assert.equal(cloneUrl, `${w.fake.url}/acme/web.git`);
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
      // The token is scoped to acme/web: acme/api is refused; so is a made-up token and no token.
      const basicOther = Buffer.from(`x-access-token:${token}`).toString('base64');
      assert.equal((await gitClone(['-c', `http.extraHeader=Authorization: Basic ${basicOther}`, 'clone', '--quiet', `${w.fake.url}/acme/api.git`, path.join(dir, 'b')])).ok, false);
      const fakeTok = Buffer.from('x-access-token:ghs_madeup').toString('base64');
      assert.equal((await gitClone(['-c', `http.extraHeader=Authorization: Basic ${fakeTok}`, 'clone', '--quiet', cloneUrl, path.join(dir, 'c')])).ok, false);
      assert.equal((await gitClone(['clone', '--quiet', cloneUrl, path.join(dir, 'd')])).ok, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // A second request mints a fresh token.
    const again = await api.get('/api/gitprovider/repos/acme/web/clone-token');
    assert.notEqual(again.body.data.token, token);
    // No installation for the owner: 409 NO_INSTALLATION_TOKEN (another source would be needed to see it at all).
    const none = await api.get('/api/gitprovider/repos/someone-else/private-thing/clone-token');
    assert.equal(none.status, 409);
    assert.equal(none.body.error.code, 'NO_INSTALLATION_TOKEN');
  });

  it('caches the installation token for API calls until shortly before it expires', async () => {
    const api = w.server.api(team.member.token);
    await api.get('/api/gitprovider/repos/acme/web');
    const before = w.fake.minted.get(installationId) ?? 0;
    for (let i = 0; i < 3; i++) assert.equal((await api.get('/api/gitprovider/repos/acme/web')).status, 200);
    assert.equal(w.fake.minted.get(installationId) ?? 0, before);
    // Tokens that live less than the refresh margin are replaced on every use.
    const { forgetInstallationToken } = await import('../../src/modules/gitprovider/github.js');
    w.fake.tokenTtlMs = 4 * 60 * 1000;
    forgetInstallationToken(w.server.ctx, String(installationId));
    try {
      await api.get('/api/gitprovider/repos/acme/web');
      await api.get('/api/gitprovider/repos/acme/web');
      assert.equal(w.fake.minted.get(installationId) ?? 0, before + 2);
    } finally {
      w.fake.tokenTtlMs = 3600_000;
      forgetInstallationToken(w.server.ctx, String(installationId));
    }
  });

  it('registers the push webhook once and reuses it, lists it, and deletes it by hookId', async () => {
    const api = w.server.api(team.member.token);
    const first = await api.post('/api/gitprovider/repos/acme/web/webhooks');
    assert.equal(first.status, 201);
    const hook = first.body.data;
    assert.equal(hook.url, `${w.server.ctx.publicUrl()}/api/gitprovider/webhook`);
    assert.deepEqual(hook.events, ['push']);
    assert.equal(hook.active, true);
    assert.equal(w.fake.hookSecret('acme', 'web', hook.id), WEBHOOK_SECRET);
    assert.equal(w.fake.repo('acme', 'web')!.hooks[0]!.config.content_type, 'json');
    const second = await api.post('/api/gitprovider/repos/acme/web/webhooks');
    assert.equal(second.status, 200);
    assert.equal(second.body.data.id, hook.id);
    assert.equal(w.fake.repo('acme', 'web')!.hooks.length, 1);
    const list = await api.get('/api/gitprovider/repos/acme/web/webhooks');
    assert.deepEqual(list.body.data, [{ id: hook.id, url: hook.url, events: ['push'], active: true }]);
    // delete needs gitprovider:admin
    assert.equal((await api.delete('/api/gitprovider/repos/acme/web/webhooks', { hookId: hook.id })).status, 403);
    const admin = w.server.api(team.admin.token);
    const missing = await admin.delete('/api/gitprovider/repos/acme/web/webhooks', {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.field, 'hookId');
    const del = await admin.delete('/api/gitprovider/repos/acme/web/webhooks', { hookId: hook.id });
    assert.equal(del.status, 200);
    assert.equal(w.fake.repo('acme', 'web')!.hooks.length, 0);
    assert.equal((await admin.delete('/api/gitprovider/repos/acme/web/webhooks', { hookId: hook.id })).status, 404);
  });

  it('creates a repository in the installed organization (201), refuses a duplicate (409), and deletes one', async () => {
    const api = w.server.api(team.member.token);
    const c = await api.post('/api/gitprovider/repos', { name: 'fresh', private: true, owner: 'acme' });
    assert.equal(c.status, 201);
    assert.equal(c.body.data.fullName, 'acme/fresh');
    assert.equal(c.body.data.private, true);
    assert.equal((await api.post('/api/gitprovider/repos', { name: 'fresh', private: true, owner: 'acme' })).status, 409);
    const noName = await api.post('/api/gitprovider/repos', { private: true, owner: 'acme' });
    assert.equal(noName.status, 400);
    assert.equal(noName.body.error.field, 'name');
    assert.equal((await api.delete('/api/gitprovider/repos/acme/fresh')).status, 403);
    const del = await w.server.api(team.owner.token).delete('/api/gitprovider/repos/acme/fresh');
    assert.equal(del.status, 200);
    assert.equal((await api.get('/api/gitprovider/repos/acme/fresh')).status, 404);
  });

  it('a restricted member sees only the repositories and installations its grants name', async () => {
    const r = w.server.api(team.restricted.token);
    assert.equal((await r.get('/api/gitprovider/home')).status, 403);
    await createGrant(w.server, team.restricted, 'gitprovider_repository', 'acme/api', ['read']);
    const home = await r.get('/api/gitprovider/home');
    assert.equal(home.status, 200);
    assert.equal(home.body.data.state, 'connected');
    assert.deepEqual(home.body.data.repos.map((x: any) => x.fullName), ['acme/api']);
    assert.deepEqual(home.body.data.accounts.map((a: any) => a.login), ['acme']);
    assert.equal(home.body.data.installUrl, undefined);
    assert.deepEqual((await r.get('/api/gitprovider/repos')).body.data.map((x: any) => x.fullName), ['acme/api']);
    assert.equal((await r.get('/api/gitprovider/repos/acme/api')).status, 200);
    assert.equal((await r.get('/api/gitprovider/repos/acme/api/branches')).status, 200);
    assert.equal((await r.get('/api/gitprovider/repos/acme/web')).status, 403);
    assert.equal((await r.get('/api/gitprovider/repos/acme/web/branches')).status, 403);
    assert.equal((await r.post('/api/gitprovider/repos/acme/api/webhooks')).status, 403);
    // An installation grant covers every repository of that installation.
    await createGrant(w.server, team.restricted, 'gitprovider_installation', String(installationId), ['read']);
    const all = await r.get('/api/gitprovider/repos?owner=acme');
    assert.deepEqual(all.body.data.map((x: any) => x.fullName).sort(), ['acme/api', 'acme/docs', 'acme/web']);
    assert.equal((await r.get('/api/gitprovider/repos/acme/web')).status, 200);
  });

  it('the permissions catalog lists the installations and repositories as grantable resources', async () => {
    const api = w.server.api(team.owner.token);
    const inst = await api.get('/api/permissions/resources?type=gitprovider_installation');
    assert.equal(inst.status, 200);
    assert.ok(inst.body.data.some((e: any) => e.id === String(installationId) && e.label === 'acme'));
    const repos = await api.get('/api/permissions/resources?type=gitprovider_repository&owner=acme');
    assert.deepEqual(repos.body.data.map((e: any) => e.id).sort(), ['acme/api', 'acme/docs', 'acme/web']);
    const ok = await api.post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'gitprovider_repository', resourceId: 'acme/docs', permissions: ['read'] });
    assert.equal(ok.status, 201, ok.text);
    const bad = await api.post('/api/permissions/grants', { userId: team.restricted.userId, resourceType: 'gitprovider_repository', resourceId: 'acme/nope', permissions: ['read'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'RESOURCE_NOT_IN_ORG');
  });

  it('no response carries a stored credential', async () => {
    const api = w.server.api(team.owner.token);
    for (const url of ['/api/gitprovider/status', '/api/gitprovider/home', '/api/gitprovider/repos', '/api/gitprovider/repos/acme/web?branches=true']) {
      const r = await api.get(url);
      assert.equal(r.status, 200, url);
      assert.ok(!/ghs_|gho_/.test(r.text), url);
    }
  });

  it('disconnect needs gitprovider:admin, drops the org\'s bindings, and does not uninstall the App', async () => {
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
