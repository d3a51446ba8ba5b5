import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { assertError } from '../support/http.js';
import { startReceiver } from './receivers.js';

describe('notification channels (contract section 20)', () => {
  let server: TestServer;
  let team: TestOrg;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  before(async () => {
    [server, receiver] = await Promise.all([startTestServer(), startReceiver()]);
    team = await createTeam(server);
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const api = (t = team.owner.token) => server.api(t);
  const webhook = (extra: Record<string, unknown> = {}) => ({ name: 'ops', kind: 'webhook', url: receiver.url('/hook?token=abc'), events: ['deployment.failed'], ...extra });

  it('create shows the webhook secret once; reads mask the URL and never show the secret', async () => {
    const c = await api().post('/api/notification-channels', webhook());
    assert.equal(c.status, 201, c.text);
    const ch = c.body.data;
    assert.match(ch.secret, /^berth_whs_/);
    assert.equal(ch.kind, 'webhook');
    assert.equal(ch.signed, true);
    assert.equal(ch.url, `${new URL(receiver.url()).origin}/…`);
    assert.deepEqual(ch.events, ['deployment.failed']);
    const one = await api().get(`/api/notification-channels/${ch.id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.data.secret, undefined);
    assert.ok(!one.text.includes(ch.secret) && !one.text.includes('token=abc'));
    const list = await api().get('/api/notification-channels');
    assert.ok(list.body.data.some((x: any) => x.id === ch.id));
    assert.ok(!list.text.includes(ch.secret));
  });

  it('update changes name, url and events; kind cannot change; delete removes it; each change is audited', async () => {
    const ch = (await api().post('/api/notification-channels', webhook({ name: 'audited' }))).body.data;
    const u = await api().patch(`/api/notification-channels/${ch.id}`, { name: 'renamed', events: ['backup.failed', 'app.degraded'], url: receiver.url('/other') });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.name, 'renamed');
    assert.deepEqual(u.body.data.events, ['backup.failed', 'app.degraded']);
    assertError(await api().patch(`/api/notification-channels/${ch.id}`, { kind: 'slack' }), 400, 'VALIDATION_FAILED', 'kind');
    assert.equal((await api().delete(`/api/notification-channels/${ch.id}`)).status, 200);
    assert.equal((await api().get(`/api/notification-channels/${ch.id}`)).status, 404);
    const audit = (await api().get('/api/audit?limit=200')).body.data;
    const items = (audit.items ?? audit.events ?? audit) as any[];
    const actions = items.filter((e) => e.resourceId === ch.id).map((e) => e.action).sort();
    assert.deepEqual(actions, ['notification_channel.create', 'notification_channel.delete', 'notification_channel.update']);
    assert.ok(!JSON.stringify(items).includes('berth_whs_'));
  });

  it('a URL to a loopback, private, link-local or metadata address is refused with 400 naming url', async () => {
    const strict = await startTestServer({ env: { BERTH_OUTBOUND_ALLOW: '' } });
    try {
      const owner = await createUser(strict);
      for (const url of ['http://127.0.0.1:9/x', 'http://10.1.2.3/hook', 'http://192.168.0.10/hook', 'http://169.254.169.254/latest', 'http://[::1]/x', 'http://localhost/x']) {
        const r = await strict.api(owner.token).post('/api/notification-channels', { name: 'x', kind: 'slack', url, events: ['deployment.ready'] });
        assertError(r, 400, 'VALIDATION_FAILED', 'url');
      }
    } finally {
      await strict.close();
    }
  });

  it('bad input is a 400 naming the field', async () => {
    assertError(await api().post('/api/notification-channels', webhook({ kind: 'teams' })), 400, 'VALIDATION_FAILED', 'kind');
    const ev = await api().post('/api/notification-channels', webhook({ events: ['deployment.exploded'] }));
    assert.equal(ev.status, 400);
    assert.match(ev.body.error.field, /^events/);
    assertError(await api().post('/api/notification-channels', webhook({ events: [] })), 400, 'VALIDATION_FAILED', 'events');
    assertError(await api().post('/api/notification-channels', webhook({ events: ['backup.failed', 'backup.failed'] })), 400, 'VALIDATION_FAILED', 'events');
    assertError(await api().post('/api/notification-channels', webhook({ url: undefined })), 400, 'VALIDATION_FAILED', 'url');
    assertError(await api().post('/api/notification-channels', webhook({ url: 'ftp://example.com/x' })), 400, 'VALIDATION_FAILED', 'url');
    assertError(await api().post('/api/notification-channels', webhook({ url: 'https://user:pw@example.com/x' })), 400, 'VALIDATION_FAILED', 'url');
    assertError(await api().post('/api/notification-channels', webhook({ to: 'a@example.com' })), 400, 'VALIDATION_FAILED', 'to');
    // This server has no BERTH_SMTP_URL: an email channel cannot send.
    assertError(await api().post('/api/notification-channels', { name: 'm', kind: 'email', to: 'ops@example.com', events: ['backup.failed'] }), 400, 'VALIDATION_FAILED', 'kind');
  });

  it("another org's channel is 404 on every route; members are 403", async () => {
    const ch = (await api().post('/api/notification-channels', webhook({ name: 'private' }))).body.data;
    const other = await createUser(server);
    const o = server.api(other.token);
    assert.equal((await o.get(`/api/notification-channels/${ch.id}`)).status, 404);
    assert.equal((await o.patch(`/api/notification-channels/${ch.id}`, { name: 'x' })).status, 404);
    assert.equal((await o.delete(`/api/notification-channels/${ch.id}`)).status, 404);
    assert.equal((await o.post(`/api/notification-channels/${ch.id}/test`)).status, 404);
    assert.equal((await o.get(`/api/notification-channels/${ch.id}/deliveries`)).status, 404);
    assert.ok(!(await o.get('/api/notification-channels')).body.data.some((x: any) => x.id === ch.id));
    assert.equal((await api(team.member.token).get('/api/notification-channels')).status, 403);
    assert.equal((await api(team.member.token).post('/api/notification-channels', webhook())).status, 403);
    assert.equal((await api(team.admin.token).get(`/api/notification-channels/${ch.id}`)).status, 200);
  });
});
