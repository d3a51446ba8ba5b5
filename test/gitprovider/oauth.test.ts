import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createTeam, type TestOrg } from '../support/factories.js';
import { startGitWorld, type GitWorld } from './setup.js';

describe('git provider through an OAuth account (cloud mode)', () => {
  let w: GitWorld;
  let team: TestOrg;

  before(async () => {
    w = await startGitWorld({ mode: 'cloud', app: false, webhookSecret: null });
    team = await createTeam(w.server);
    w.fake.account('octocat', 'User');
    w.fake.account('octo-org', 'Organization');
    w.fake.addMember('octo-org', 'octocat');
    w.fake.createRepo('octocat', 'hello', { files: { 'package.json': '{"name":"hello"}' } });
    w.fake.createRepo('octo-org', 'tools', { files: { 'a.txt': 'a' } });
    w.fake.createRepo('stranger', 'secret', { files: { 'a.txt': 'a' } });
  });
  after(() => w.close());

  it('connect answers the OAuth redirect; the callback with code and state stores the account, encrypted, for this org only', async () => {
    const api = w.server.api(team.member.token);
    const c = await api.post('/api/gitprovider/connect', {});
    assert.equal(c.status, 200);
    assert.equal(c.body.data.flow, 'redirect');
    const url = new URL(c.body.data.url);
    assert.equal(url.origin + url.pathname, `${w.fake.url}/login/oauth/authorize`);
    assert.equal(url.searchParams.get('redirect_uri'), `${w.server.ctx.publicUrl()}/api/gitprovider/connect/redirect`);
    assert.ok(url.searchParams.get('state'));
    // The browser signs in at GitHub, which sends it back with a code.
    w.fake.browserUser = 'octocat';
    const gh = await fetch(url, { redirect: 'manual' });
    assert.equal(gh.status, 302);
    const back = new URL(gh.headers.get('location')!);
    const callback = `${w.server.url}${back.pathname}${back.search}`;
    const done = await fetch(callback, { redirect: 'manual' });
    assert.equal(done.status, 302);
    const st = await api.get('/api/gitprovider/status');
    assert.equal(st.body.data.state, 'connected');
    assert.deepEqual(st.body.data.accounts, [{ login: 'octocat', type: 'User', source: 'oauth' }]);
    assert.equal(st.body.data.installUrl, null);
    const row = await w.server.ctx.db.selectFrom('gitproviderConnections').selectAll().where('orgId', '=', team.orgId).executeTakeFirstOrThrow();
    assert.match(row.token!, /^v1\./);
    assert.ok(!row.token!.includes('gho_'));
    // The same callback again: the state was used.
    const replay = await fetch(callback, { redirect: 'manual' });
    assert.equal(replay.status, 400);
    // A bad code with a fresh state
    const c2 = new URL((await api.post('/api/gitprovider/connect', { source: 'oauth' })).body.data.url ?? 'http://x/?state=');
    // already connected: answers connected
    assert.equal(c2.toString(), 'http://x/?state=');
    const other = await createTeam(w.server);
    assert.equal((await w.server.api(other.owner.token).get('/api/gitprovider/status')).body.data.state, 'not_connected');
    const oc = (await w.server.api(other.owner.token).post('/api/gitprovider/connect', {})).body.data.url;
    const bad = await fetch(`${w.server.url}/api/gitprovider/connect/redirect?code=wrong&state=${encodeURIComponent(new URL(oc).searchParams.get('state')!)}`, { redirect: 'manual' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as any).error.field, 'code');
    const noCode = await fetch(`${w.server.url}/api/gitprovider/connect/redirect`, { redirect: 'manual' });
    assert.equal(noCode.status, 400);
  });

  it('lists and reads repositories the OAuth account can see, and 404s the ones it cannot', async () => {
    const api = w.server.api(team.member.token);
    const all = await api.get('/api/gitprovider/repos');
    assert.deepEqual(all.body.data.map((r: any) => r.fullName).sort(), ['octo-org/tools', 'octocat/hello']);
    const mine = await api.get('/api/gitprovider/repos?owner=octocat');
    assert.deepEqual(mine.body.data.map((r: any) => r.fullName), ['octocat/hello']);
    assert.deepEqual((await api.get('/api/gitprovider/orgs/octo-org/repos')).body.data.map((r: any) => r.name), ['tools']);
    assert.deepEqual((await api.get('/api/gitprovider/orgs/octocat/repos')).body.data.map((r: any) => r.name), ['hello']);
    assert.equal((await api.get('/api/gitprovider/repos/stranger/secret')).status, 404);
    assert.deepEqual((await api.get('/api/gitprovider/repos/octocat/hello/file')).body.data.content, { name: 'hello' });
    const home = await api.get('/api/gitprovider/home');
    assert.equal(home.body.data.repos.length, 2);
    assert.ok(!/gho_/.test(home.text));
  });

  it('creates a repository in the user account (201)', async () => {
    const api = w.server.api(team.member.token);
    const r = await api.post('/api/gitprovider/repos', { name: 'made-here', private: false, owner: 'octocat' });
    assert.equal(r.status, 201);
    assert.equal(r.body.data.fullName, 'octocat/made-here');
    assert.equal(r.body.data.private, false);
    const inOrg = await api.post('/api/gitprovider/repos', { name: 'org-made', private: true, owner: 'octo-org' });
    assert.equal(inOrg.status, 201);
    assert.equal(inOrg.body.data.fullName, 'octo-org/org-made');
  });

  it('clone-token is 409 NO_INSTALLATION_TOKEN without an App installation', async () => {
    const r = await w.server.api(team.member.token).get('/api/gitprovider/repos/octocat/hello/clone-token');
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, 'NO_INSTALLATION_TOKEN');
  });

  it('self-hosted-only routes are 404 in cloud mode, and the gh CLI source is refused', async () => {
    const api = w.server.api(team.member.token);
    assert.equal((await api.get('/api/gitprovider/local-status')).status, 404);
    assert.equal((await api.get('/api/gitprovider/connect/poll')).status, 404);
    const cli = await api.post('/api/gitprovider/connect', { source: 'cli' });
    assert.equal(cli.status, 400);
    assert.equal(cli.body.error.field, 'source');
    const bad = await api.post('/api/gitprovider/connect', { source: 'ssh' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'source');
  });

  it('without BERTH_GITHUB_WEBHOOK_SECRET every delivery is refused (401)', async () => {
    const body = '{"zen":"x"}';
    for (const secret of ['', 'guess']) {
      const r = await fetch(`${w.server.url}/api/gitprovider/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-github-delivery': `d-${secret}`, 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
        body,
      });
      assert.equal(r.status, 401);
      assert.equal(((await r.json()) as any).error.code, 'UNAUTHENTICATED');
    }
  });

  it('disconnect of the oauth source drops the stored token; listing is then 400 GIT_PROVIDER_NOT_CONNECTED', async () => {
    const admin = w.server.api(team.admin.token);
    const d = await admin.post('/api/gitprovider/disconnect?source=oauth');
    assert.equal(d.status, 200);
    assert.equal(d.body.data.disconnected, true);
    assert.equal((await w.server.ctx.db.selectFrom('gitproviderConnections').selectAll().where('orgId', '=', team.orgId).execute()).length, 0);
    const r = await admin.get('/api/gitprovider/repos');
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'GIT_PROVIDER_NOT_CONNECTED');
  });
});
