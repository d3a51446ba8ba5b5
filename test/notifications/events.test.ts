import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { findPolicy, findRun } from '../../src/modules/backups/backups.store.js';
import { executeRun } from '../../src/modules/backups/run-executor.js';
import { triggerRun } from '../../src/modules/backups/runs.service.js';
import { issueCertificate, renewDueCertificates } from '../../src/modules/certificates/index.js';
import { createDestination, createPolicy, createProject, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { startReceiver } from './receivers.js';

/** The events other areas report today, as a subscribed channel receives them. */
describe('notification events from the areas', () => {
  let server: TestServer;
  let owner: TestUser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  before(async () => {
    receiver = await startReceiver();
    // HTTPS on, with an ACME directory where nothing listens: every order fails at once.
    server = await startTestServer({ env: { BERTH_HTTPS_PORT: '0', BERTH_ACME_DIRECTORY_URL: 'http://127.0.0.1:9/directory' } });
    owner = await createUser(server);
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('a backup run that fails is backup.failed to a subscribed channel, with the project and the reason', async () => {
    const ch = (await server.api(owner.token).post('/api/notification-channels', { name: 'b', kind: 'webhook', url: receiver.url('/backups'), events: ['backup.failed', 'backup.verify_failed'] })).body.data;
    receiver.setSecret(ch.secret);
    const p = await createProjectWithVolume(server, owner, { name: 'ledger' });
    const dest = await createDestination(server, owner);
    const pol = await createPolicy(server, owner, p, { destinationId: dest.id });
    // The destination folder becomes a plain file: the run cannot write there.
    rmSync(dest.dir, { recursive: true, force: true });
    writeFileSync(dest.dir, 'not a folder');
    const policy = (await findPolicy(server.ctx.db, owner.orgId, pol.id))!;
    const { runId } = await triggerRun(server.ctx, policy, 'manual');
    await executeRun(server.ctx, runId, owner.orgId);
    assert.equal((await findRun(server.ctx.db, owner.orgId, runId))!.status, 'failed');
    await server.ctx.jobs.drain();
    const got = receiver.got.filter((g) => g.path === '/backups');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.json.event, 'backup.failed');
    assert.equal(got[0]!.json.projectId, p.id);
    assert.match(got[0]!.json.subject, /backup of ledger failed/);
    assert.match(got[0]!.json.detail, new RegExp(runId));
    assert.equal(got[0]!.signatureValid, true);
    rmSync(dest.dir, { force: true });
  });

  it('a certificate that cannot be issued is certificate.failed on its first failed attempt, not on each retry', async () => {
    const ch = (await server.api(owner.token).post('/api/notification-channels', { name: 'c', kind: 'discord', url: receiver.url('/certs'), events: ['certificate.failed'] })).body.data;
    assert.ok(ch.id);
    const p = await createProject(server, owner, { name: 'storefront' });
    const domain = 'shop.notify-test.example';
    const r = await server.api(owner.token).post(`/api/projects/${p.id}/domains`, { domain });
    assert.equal(r.status, 201, r.text);
    assert.equal((await issueCertificate(server.ctx, domain)).status, 'failed');
    assert.equal((await issueCertificate(server.ctx, domain)).status, 'failed');
    await server.ctx.jobs.drain();
    const got = receiver.got.filter((g) => g.path === '/certs');
    assert.equal(got.length, 1);
    assert.match(got[0]!.json.content, /HTTPS certificate for shop\.notify-test\.example could not be issued/);
  });

  it('a certificate within 14 days of its end is certificate.expiring once (not on every pass of the scheduler)', async () => {
    const ch = (await server.api(owner.token).post('/api/notification-channels', { name: 'e', kind: 'webhook', url: receiver.url('/expiring'), events: ['certificate.expiring'] })).body.data;
    receiver.setSecret(ch.secret);
    const p = await createProject(server, owner, { name: 'archive' });
    const domain = 'old.notify-test.example';
    assert.equal((await server.api(owner.token).post(`/api/projects/${p.id}/domains`, { domain })).status, 201);
    // Its renewals fail (no ACME server answers) while the certificate it holds runs out in 5 and a half days.
    assert.equal((await issueCertificate(server.ctx, domain)).status, 'failed');
    const expiresAt = new Date(Date.now() + 5.5 * 86_400_000).toISOString();
    await server.ctx.db.updateTable('certificates').set({ expiresAt }).where('domain', '=', domain).execute();
    await renewDueCertificates(server.ctx);
    await renewDueCertificates(server.ctx);
    await server.ctx.jobs.drain();
    const got = receiver.got.filter((g) => g.path === '/expiring');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.json.event, 'certificate.expiring');
    assert.equal(got[0]!.json.projectId, p.id);
    assert.equal(got[0]!.json.subject, 'The HTTPS certificate for old.notify-test.example expires in 5 days');
    assert.match(got[0]!.json.detail, /last renewal attempt failed/);
    assert.equal(got[0]!.signatureValid, true);
  });

  it("an app's health change reaches subscribed channels as app.degraded (with the rollback) and app.recovered, through the hosting area's port", async () => {
    const ch = (await server.api(owner.token).post('/api/notification-channels', { name: 'h', kind: 'webhook', url: receiver.url('/health'), events: ['app.degraded', 'app.recovered'] })).body.data;
    receiver.setSecret(ch.secret);
    const p = await createProject(server, owner, { name: 'checkout' });
    // As the health watch tells it (src/modules/hosting/app-health-watch.ts): every listener of the port.
    const tell = (change: Parameters<(typeof server.ctx.ports.appHealthChanged)[number]>[1]) => Promise.all(server.ctx.ports.appHealthChanged.map((l) => l(server.ctx, change)));
    await tell({ orgId: owner.orgId, projectId: p.id, environment: 'production', state: 'degraded', reason: 'its health check failed for 2 minutes: GET /health answered 500', deploymentId: 'dpl_v2', rolledBackTo: 'dpl_v1' });
    await tell({ orgId: owner.orgId, projectId: p.id, environment: 'production', state: 'recovered', reason: 'its health check passes again', deploymentId: 'dpl_v1' });
    await server.ctx.jobs.drain();
    // Each change is a delivery of its own; the jobs that send them run in no promised order.
    const got = receiver.got.filter((g) => g.path === '/health');
    assert.deepEqual(got.map((g) => g.json.event).sort(), ['app.degraded', 'app.recovered']);
    const degraded = got.find((g) => g.json.event === 'app.degraded')!;
    assert.equal(degraded.json.projectId, p.id);
    assert.match(degraded.json.subject, /checkout is degraded/);
    assert.match(degraded.json.detail, /answered 500 \(deployment dpl_v2\)\. Its previous release dpl_v1 serves again \(autoRollback\)\./);
    assert.match(got.find((g) => g.json.event === 'app.recovered')!.json.subject, /checkout recovered/);
    assert.ok(got.every((g) => g.signatureValid));
  });
});
