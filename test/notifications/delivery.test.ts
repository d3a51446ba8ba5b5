import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { deploymentSettled } from '../../src/modules/deployments/index.js';
import { notifyEvent } from '../../src/modules/notifications/index.js';
import { testClock } from '../support/clock.js';
import { createDeployment, createProject, createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { startReceiver, startSmtp } from './receivers.js';

const HOUR = 3600_000;

describe('notification deliveries: signed webhooks, Slack, Discord, email, retries for 24 h', () => {
  const clock = testClock();
  let server: TestServer;
  let owner: TestUser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  before(async () => {
    [receiver, smtp] = await Promise.all([startReceiver(), startSmtp()]);
    server = await startTestServer({ clock, env: { BERTH_SMTP_URL: `${smtp.url}?from=alerts@berth.example` } });
    owner = await createUser(server);
  });
  after(async () => {
    await server.close();
    await Promise.all([receiver.close(), smtp.close()]);
  });

  const api = () => server.api(owner.token);
  async function channel(body: Record<string, unknown>) {
    const r = await api().post('/api/notification-channels', { name: 'c', events: ['deployment.failed', 'backup.failed'], ...body });
    assert.equal(r.status, 201, r.text);
    return r.body.data;
  }
  const deliveries = async (id: string) => (await api().get(`/api/notification-channels/${id}/deliveries`)).body.data as any[];

  it('a test send reaches the receiver signed with the secret shown at creation', async () => {
    receiver.setStatuses([200]);
    const ch = await channel({ kind: 'webhook', url: receiver.url('/signed') });
    receiver.setSecret(ch.secret);
    const t = await api().post(`/api/notification-channels/${ch.id}/test`);
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.data.status, 'delivered');
    assert.equal(t.body.data.attempts, 1);
    const got = receiver.got.filter((g) => g.path === '/signed');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.signatureValid, true);
    assert.equal(got[0]!.headers['x-berth-event'], 'test');
    assert.equal(got[0]!.json.id, t.body.data.id);
    assert.equal((await deliveries(ch.id))[0].status, 'delivered');
  });

  it('a deployment that failed is told to the subscribed channel (deploymentSettled), and not to others', async () => {
    receiver.setStatuses([200]);
    const ch = await channel({ kind: 'webhook', url: receiver.url('/deploys') });
    const quiet = await channel({ kind: 'webhook', url: receiver.url('/quiet'), events: ['deployment.ready'] });
    receiver.setSecret(ch.secret);
    const project = await createProject(server, owner, { name: 'shop' });
    const dep = await createDeployment(server, { id: project.id, orgId: owner.orgId }, { status: 'failed', commit: 'a'.repeat(40) });
    deploymentSettled(server.ctx, owner.orgId, dep);
    await waitFor(async () => (await deliveries(ch.id)).length === 1, 'the deployment.failed delivery');
    await server.ctx.jobs.drain();
    const got = receiver.got.filter((g) => g.path === '/deploys');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.json.event, 'deployment.failed');
    assert.equal(got[0]!.json.projectId, project.id);
    assert.match(got[0]!.json.subject, /shop failed/);
    assert.equal(got[0]!.signatureValid, true);
    assert.equal((await deliveries(quiet.id)).length, 0);
  });

  it('Slack and Discord get their incoming-webhook JSON shapes', async () => {
    receiver.setStatuses([200]);
    const slack = await channel({ kind: 'slack', url: receiver.url('/slack') });
    // A host name (not an IP literal): resolved and checked by the outbound policy's lookup at connect time.
    const discord = await channel({ kind: 'discord', url: receiver.url('/discord').replace('127.0.0.1', 'localhost') });
    await notifyEvent(server.ctx, { orgId: owner.orgId, event: 'backup.failed', subject: 'A backup of db <x> failed', detail: 'disk full @everyone', url: 'https://berth.example/p' });
    await server.ctx.jobs.drain();
    const s = receiver.got.find((g) => g.path === '/slack')!;
    assert.deepEqual(Object.keys(s.json), ['text']);
    assert.equal(s.json.text, '*A backup of db &lt;x&gt; failed*\ndisk full @everyone\n<https://berth.example/p>');
    const d = receiver.got.find((g) => g.path === '/discord')!;
    assert.equal(d.json.content, '**A backup of db <x> failed**\ndisk full @everyone\nhttps://berth.example/p');
    assert.deepEqual(d.json.allowed_mentions, { parse: [] });
    assert.equal(s.headers['x-berth-signature'], undefined);
    assert.equal((await deliveries(slack.id))[0].status, 'delivered');
    assert.equal((await deliveries(discord.id))[0].status, 'delivered');
  });

  it('email goes through BERTH_SMTP_URL to a real SMTP server', async () => {
    const ch = await channel({ kind: 'email', to: 'oncall@example.test' });
    assert.equal(ch.to, 'oncall@example.test');
    await notifyEvent(server.ctx, { orgId: owner.orgId, event: 'deployment.failed', subject: 'Deployment of shop failed', detail: 'npm run build exited with 1' });
    await server.ctx.jobs.drain();
    const [d] = await deliveries(ch.id);
    assert.equal(d.status, 'delivered', d.lastError);
    const m = smtp.messages.find((x) => x.to.includes('oncall@example.test'))!;
    assert.equal(m.from, 'alerts@berth.example');
    assert.match(m.raw, /Subject: \[Berth\] Deployment of shop failed/);
    assert.match(m.raw, /npm run build exited with 1/);
  });

  it('a receiver that answers 500 then 200 gets the delivery on the retry, after the backoff', async () => {
    receiver.setStatuses([500, 200]);
    const ch = await channel({ kind: 'webhook', url: receiver.url('/flaky'), events: ['disk.near_limit'] });
    await notifyEvent(server.ctx, { orgId: owner.orgId, event: 'disk.near_limit', subject: 's', detail: 'd' });
    await server.ctx.jobs.drain();
    let [d] = await deliveries(ch.id);
    assert.equal(d.status, 'pending');
    assert.equal(d.attempts, 1);
    assert.equal(d.lastStatusCode, 500);
    assert.equal(d.lastError, 'the receiver answered HTTP 500');
    assert.ok(Date.parse(d.nextAttemptAt) > clock.now());
    await server.ctx.jobs.drain(); // not due yet: nothing is sent
    assert.equal(receiver.got.filter((g) => g.path === '/flaky').length, 1);
    clock.advance(31_000);
    await server.ctx.jobs.drain();
    [d] = await deliveries(ch.id);
    assert.equal(d.status, 'delivered');
    assert.equal(d.attempts, 2);
    assert.equal(d.lastError, null);
    const listed = JSON.stringify(await deliveries(ch.id));
    assert.ok(!listed.includes('UPSTREAM-BODY') && !listed.includes('secret'));
  });

  it('a receiver that keeps failing is retried with growing waits until 24 h have passed, then the delivery is failed', async () => {
    receiver.setStatuses([503]);
    const ch = await channel({ kind: 'webhook', url: receiver.url('/down'), events: ['certificate.expiring'] });
    await notifyEvent(server.ctx, { orgId: owner.orgId, event: 'certificate.expiring', subject: 's', detail: 'd' });
    await server.ctx.jobs.drain();
    const waits: number[] = [];
    for (let i = 0; i < 60; i++) {
      const [d] = await deliveries(ch.id);
      if (d.status !== 'pending') break;
      const wait = Date.parse(d.nextAttemptAt) - clock.now();
      waits.push(wait);
      clock.advance(Math.max(0, wait) + 1000);
      await server.ctx.jobs.drain();
    }
    const [d] = await deliveries(ch.id);
    assert.equal(d.status, 'failed');
    assert.equal(d.nextAttemptAt, null);
    assert.equal(d.lastStatusCode, 503);
    assert.ok(waits.every((w, i) => i === 0 || w >= waits[i - 1]! - 2000), `waits grow: ${waits}`);
    assert.ok(Math.max(...waits) <= HOUR + 1000);
    const span = Date.parse(d.updatedAt) - Date.parse(d.createdAt);
    assert.ok(span >= 23 * HOUR && span <= 25 * HOUR, `retried for ${span / HOUR} h`);
    assert.equal(d.attempts, receiver.got.filter((g) => g.path === '/down').length);
  });

  it('a receiver that calls the request wrong (HTTP 400) is not asked again', async () => {
    receiver.setStatuses([400]);
    const ch = await channel({ kind: 'slack', url: receiver.url('/bad'), events: ['app.recovered'] });
    await notifyEvent(server.ctx, { orgId: owner.orgId, event: 'app.recovered', subject: 's', detail: 'd' });
    await server.ctx.jobs.drain();
    const [d] = await deliveries(ch.id);
    assert.equal(d.status, 'failed');
    assert.equal(d.attempts, 1);
  });
});

describe('notification deliveries survive a restart', () => {
  it('a delivery pending when the server stops is sent by the next server from the database', async () => {
    const receiver = await startReceiver({ statuses: [500, 200] });
    const dataDir = tempDir();
    const db = usingPostgres() ? await freshPostgresDatabase() : null;
    const env = { BERTH_SECRET_KEY: randomBytes(32).toString('base64') };
    const first = await startTestServer({ dataDir, env, ...(db ? { databaseUrl: db.url } : {}) });
    let second: TestServer | undefined;
    try {
      const owner = await createUser(first);
      const ch = (await first.api(owner.token).post('/api/notification-channels', { name: 'r', kind: 'webhook', url: receiver.url('/r'), events: ['backup.failed'] })).body.data;
      receiver.setSecret(ch.secret);
      await notifyEvent(first.ctx, { orgId: owner.orgId, event: 'backup.failed', subject: 's', detail: 'd' });
      await first.ctx.jobs.drain();
      await first.close();
      const clock = testClock();
      clock.advance(60_000);
      second = await startTestServer({ dataDir, env, clock, background: true, ...(db ? { databaseUrl: db.url } : {}) });
      const api = second.api(owner.token);
      const d = await waitFor(async () => {
        const [x] = (await api.get(`/api/notification-channels/${ch.id}/deliveries`)).body.data;
        return x?.status === 'delivered' && x;
      }, 'the retried delivery after the restart', 30000);
      assert.equal(d.attempts, 2);
      assert.equal(receiver.got.length, 2);
      assert.equal(receiver.got[1]!.signatureValid, true);
    } finally {
      await second?.close();
      await db?.drop();
      await receiver.close();
    }
  });
});
