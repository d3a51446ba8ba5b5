import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTeam, type TestOrg } from '../support/factories.js';
import { startGitWorld, type GitWorld } from './setup.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('git provider on a self-hosted instance: device flow and the gh CLI', () => {
  let w: GitWorld;
  let team: TestOrg;

  before(async () => {
    w = await startGitWorld({ app: false });
    team = await createTeam(w.server);
    w.fake.createRepo('octocat', 'hello', { files: { 'package.json': '{"name":"hello"}' } });
    w.fake.createRepo('hubot', 'bot', { files: { 'a.txt': 'a' } });
  });
  after(() => w.close());

  it('poll without a device login in progress is 404', async () => {
    assert.equal((await w.server.api(team.member.token).get('/api/gitprovider/connect/poll')).status, 404);
  });

  it('connect starts a device login; poll is pending until the user approves, then connected', async () => {
    const api = w.server.api(team.member.token);
    const c = await api.post('/api/gitprovider/connect');
    assert.equal(c.status, 200, c.text);
    const d = c.body.data;
    assert.equal(d.connected, false);
    assert.equal(d.flow, 'device_code');
    assert.match(d.userCode, /^[0-9A-F]{4}-[0-9A-F]{4}$/);
    assert.equal(d.verificationUri, `${w.fake.url}/login/device`);
    assert.equal(d.expiresIn, 900);
    assert.equal(d.interval, 1);
    assert.equal(d.deviceCode, undefined);
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'pending' });
    // Polls sooner than the interval do not reach GitHub.
    const calls = w.fake.log.length;
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'pending' });
    w.fake.answerDevice(d.userCode, 'octocat');
    await sleep(1100);
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'connected' });
    assert.ok(w.fake.log.length >= calls);
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'connected' });
    const st = await api.get('/api/gitprovider/status');
    assert.deepEqual(st.body.data.accounts, [{ login: 'octocat', type: 'User', source: 'oauth' }]);
    assert.deepEqual((await api.get('/api/gitprovider/repos')).body.data.map((r: any) => r.fullName), ['octocat/hello']);
    assert.equal((await w.server.api(team.admin.token).post('/api/gitprovider/disconnect', { source: 'oauth' })).status, 200);
  });

  it('a denied or expired device login reports so', async () => {
    const api = w.server.api(team.member.token);
    const d1 = (await api.post('/api/gitprovider/connect', { source: 'oauth' })).body.data;
    w.fake.answerDevice(d1.userCode, null);
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'denied' });
    const d2 = (await api.post('/api/gitprovider/connect', { source: 'oauth' })).body.data;
    assert.equal(d2.flow, 'device_code');
    w.fake.expireDeviceCodes();
    assert.deepEqual((await api.get('/api/gitprovider/connect/poll')).body.data, { status: 'expired' });
    assert.equal((await api.get('/api/gitprovider/repos')).body.error.code, 'GIT_PROVIDER_NOT_CONNECTED');
  });

  it('source cli: not signed in answers the terminal flow; once gh is signed in it connects and works', async () => {
    const api = w.server.api(team.member.token);
    const ls = await api.get('/api/gitprovider/local-status');
    assert.equal(ls.status, 200);
    assert.equal(ls.body.data.installed, true);
    assert.equal(ls.body.data.authenticated, false);
    const t = await api.post('/api/gitprovider/connect', { source: 'cli' });
    assert.equal(t.status, 200);
    assert.equal(t.body.data.connected, false);
    assert.equal(t.body.data.flow, 'terminal');
    assert.match(t.body.data.command, /auth login/);
    assert.ok(t.body.data.message);
    const token = w.fake.userToken('hubot');
    w.gh.login(token);
    const ls2 = await api.get('/api/gitprovider/local-status');
    assert.equal(ls2.body.data.authenticated, true);
    assert.equal(ls2.body.data.login, 'hubot');
    assert.ok(!ls2.text.includes(token));
    assert.deepEqual((await api.post('/api/gitprovider/connect', { source: 'cli' })).body.data, { connected: true });
    const st = await api.get('/api/gitprovider/status');
    assert.deepEqual(st.body.data.accounts, [{ login: 'hubot', type: 'User', source: 'cli' }]);
    const row = await w.server.ctx.db.selectFrom('gitproviderConnections').selectAll().where('orgId', '=', team.orgId).executeTakeFirstOrThrow();
    assert.equal(row.token, null);
    assert.deepEqual((await api.get('/api/gitprovider/repos')).body.data.map((r: any) => r.fullName), ['hubot/bot']);
    const ct = await api.get('/api/gitprovider/repos/hubot/bot/clone-token');
    assert.equal(ct.status, 409);
    assert.equal(ct.body.error.code, 'NO_INSTALLATION_TOKEN');
    // gh signed out: the source is not usable anymore.
    w.gh.logout();
    assert.equal((await api.get('/api/gitprovider/status')).body.data.state, 'not_connected');
    assert.equal((await api.get('/api/gitprovider/repos')).body.error.code, 'GIT_PROVIDER_NOT_CONNECTED');
    w.gh.login(token);
    assert.equal((await w.server.api(team.owner.token).post('/api/gitprovider/disconnect', { source: 'cli' })).body.data.disconnected, true);
    assert.equal((await api.get('/api/gitprovider/status')).body.data.state, 'not_connected');
  });
});
