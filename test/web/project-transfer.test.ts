import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ModuleDef } from '../../src/http/route.js';
import { probeModule, probeState } from '../cloud/probe.js';
import { serviceRunning } from '../services/helpers.js';
import type { Browser } from 'playwright-core';
import { browserSuite, openPage, pageErrors, useDashboard } from '../support/browser.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/** A signed-in page (signed in through the API, the sign-in form is auth.test's) on the project's settings, its Cloud card and the data checkbox. */
async function openCloudCard(browser: Browser, server: TestServer, user: TestUser, projectId: string) {
  const { context, page } = await openPage(browser, server);
  const login = await page.request.post('/api/auth/login', { data: { email: user.email, password: user.password }, headers: { origin: server.url } });
  assert.equal(login.status(), 200, await login.text());
  await page.goto(`/projects/${projectId}/settings`);
  const card = page.getByRole('region', { name: 'Cloud' });
  return { context, page, card, include: card.getByLabel("Include the services' data") };
}

/**
 * The settings page's Cloud card (docs/cloud.md "Transfers", "Transfers in the background") on a real
 * self-hosted dashboard server linked to a real cloud server: "Include the services' data" shows only
 * for a project with managed services, is sent as includeData (a stopped service's 409 shows at the
 * checkbox), and the move there and back runs in the background, its progress followed in the card.
 * (The data moving: test/cloud/services-transfer and transfers-background.)
 */
describe('moving a project to the cloud from the dashboard', browserSuite('the project transfer card'), () => {
  let cloud: TestServer;
  let cloudOwner: TestUser;
  let user: TestUser;
  const probe = probeState();
  const dash = useDashboard(async () => {
    cloud = await startTestServer({ flags: { mode: 'cloud' }, build: { modules: [probeModule(probe)] } });
    cloudOwner = await createUser(cloud);
    return { env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token } };
  });
  after(async () => {
    await cloud?.close();
  });

  it("a stopped service's refusal shows at \"Include the services' data\"; a transfer that fails once running says why in the card; without services the project moves there and back", async () => {
    user = await createUser(dash.server);
    const project = await createProject(dash.server, user, { name: 'Mover' });
    // A stopped Redis as the services area keeps it (this server runs no database servers: it needs none to refuse).
    const now = new Date().toISOString();
    await dash.server.ctx.db
      .insertInto('managedServices')
      .values({ id: `svc_${'w'.repeat(20)}`, orgId: user.orgId, projectId: project.id, kind: 'redis', name: 'idle', version: '7', runtime: 'sandbox', desired: 'stopped', status: 'stopped', cpuCores: 0.5, memoryMb: 256, diskMb: 1024, port: 6379, credentials: 'x', lastError: null, environment: 'production', sourceId: null, seedFrom: null, address: null, createdAt: now, updatedAt: now })
      .execute();
    const { context, page, card, include } = await openCloudCard(dash.browser, dash.server, user, project.id);
    await include.check();
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    // A confirmation says what moves and what does not; Cancel leaves everything as it was.
    const confirm = page.getByRole('dialog', { name: 'Move Mover to the cloud?' });
    await confirm.getByText(/The data of idle moves too/).waitFor();
    await confirm.getByText(/Deployments, logs, backups and the volume's files do not move/).waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    await confirm.getByRole('button', { name: 'Move it' }).click();
    const alert = card.locator('.field-invalid').getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /the service idle is stopped/);
    // In the checkbox's words, not the API's field name.
    assert.match(await alert.innerText(), /transfer without "Include the services' data"/);
    assert.doesNotMatch(await alert.innerText(), /includeData/);
    assert.equal(await include.getAttribute('aria-invalid'), 'true');
    assert.equal(await cloud.ctx.db.selectFrom('projects').select('id').executeTakeFirst(), undefined, 'nothing was made on the cloud');

    // Without managed services the checkbox is not offered, and the project moves.
    const location = async () => (await dash.server.ctx.db.selectFrom('projects').select('location').where('id', '=', project.id).executeTakeFirstOrThrow()).location;
    await dash.server.ctx.db.deleteFrom('managedServices').where('projectId', '=', project.id).execute();
    await page.reload();
    await card.getByRole('button', { name: 'Move to the cloud' }).waitFor();
    assert.equal(await include.count(), 0);
    // A transfer that fails once running (the cloud's read-back refused) says why in the card; the project stays.
    probe.failNextExport = true;
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    await page.getByRole('dialog', { name: 'Move Mover to the cloud?' }).getByRole('button', { name: 'Move it' }).click();
    const failed = card.getByRole('alert').filter({ hasText: 'The transfer failed' });
    await failed.waitFor({ timeout: 60_000 });
    assert.match(await failed.innerText(), /probe: export made to fail/);
    assert.equal(await location(), 'local');
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    await page.getByRole('dialog', { name: 'Move Mover to the cloud?' }).getByRole('button', { name: 'Move it' }).click();
    await failed.waitFor({ state: 'hidden' });
    await page.locator('.toast').filter({ hasText: 'Mover moved to the cloud' }).waitFor({ timeout: 60_000 });
    await card.getByRole('button', { name: 'Bring back to this server' }).waitFor();
    assert.equal(await location(), 'cloud');
    await card.getByRole('button', { name: 'Bring back to this server' }).click();
    await page.getByRole('dialog', { name: 'Bring Mover back to this server?' }).getByRole('button', { name: 'Bring it back' }).click();
    await page.locator('.toast').filter({ hasText: 'Mover is back on this server' }).waitFor({ timeout: 60_000 });
    await card.getByRole('button', { name: 'Move to the cloud' }).waitFor();
    assert.equal(await location(), 'local');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});

/**
 * A module for the cloud server that holds each service's data sent to it (`POST .../transfer-data/:name`)
 * until the test lets it through: the transfer stays running, in its send or load phase, while the
 * page is looked at. Held before the route reads anything; then the route runs as ever.
 */
function holdServiceData() {
  let reached!: () => void;
  let release!: () => void;
  const state = {
    reached: new Promise<void>((r) => (reached = r)),
    released: new Promise<void>((r) => (release = r)),
    release: () => release(),
  };
  const module: ModuleDef = {
    name: 'hold-service-data',
    routes: [],
    async forward(def) {
      if (def.method !== 'POST' || def.url !== '/api/projects/:id/transfer-data/:name') return false;
      reached();
      await state.released;
      return false;
    },
  };
  return { state, module };
}

const root = process.getuid?.() === 0;

describe('moving a project with its data from the dashboard', { ...browserSuite('the project transfer card with data'), ...(root ? {} : { skip: 'the sandbox runs services under project uids only as root' }) }, () => {
  let cloud: TestServer;
  let cloudOwner: TestUser;
  const hold = holdServiceData();
  const dash = useDashboard(async () => {
    cloud = await startTestServer({ background: true, flags: { mode: 'cloud', runtime: 'sandbox' }, build: { modules: [hold.module] } });
    cloudOwner = await createUser(cloud);
    return { background: true, flags: { runtime: 'sandbox' }, env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token } };
  });
  after(async () => {
    hold.state.release();
    await cloud?.close();
  });

  it("the card shows the step, the service and its bytes with a bar while the data moves, then the result; a failure on the cloud's side shows at the checkbox", async () => {
    const user = await createUser(dash.server);
    const project = await createProject(dash.server, user, { name: 'Mover' });
    const api = dash.server.api(user.token);
    const made = await api.post(`/api/projects/${project.id}/services`, { kind: 'redis', name: 'cache' });
    assert.equal(made.status, 201, made.text);
    await serviceRunning(dash.server, user.token, project.id, made.body.data.id, 120_000);

    const { context, page, card, include } = await openCloudCard(dash.browser, dash.server, user, project.id);
    await include.check();
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    await page.getByRole('dialog', { name: 'Move Mover to the cloud?' }).getByRole('button', { name: 'Move it' }).click();

    // The cloud holds the dump it is sent: the transfer runs, and the card says where it is.
    await hold.state.reached;
    const step = card.getByRole('status');
    await step.filter({ hasText: /(Sending|Loading) the data of cache/ }).waitFor();
    const bar = card.getByRole('progressbar', { name: /the data of cache/ });
    await bar.waitFor();
    assert.notEqual(await bar.getAttribute('aria-valuenow'), null, 'a bar with its value: the total is known once the dump is written');
    assert.match(await card.locator('.live-progress-text').innerText(), /^\d+(\.\d)? [KM]?B of \d+(\.\d)? [KM]?B$/);
    assert.equal(await card.getByRole('button', { name: 'Move to the cloud' }).isDisabled(), true, 'one transfer at a time');
    assert.equal(await include.isDisabled(), true);
    const running = await dash.server.ctx.db.selectFrom('projects').select('location').where('id', '=', project.id).executeTakeFirstOrThrow();
    assert.equal(running.location, 'local', 'nothing flips before the data is loaded');

    hold.state.release();
    await page.locator('.toast').filter({ hasText: 'Mover moved to the cloud with the data of cache' }).waitFor({ timeout: 120_000 });
    await card.getByRole('button', { name: 'Bring back to this server' }).waitFor();
    assert.equal(await card.getByRole('progressbar').count(), 0, 'the progress is gone once the transfer is over');

    // Stopped on the cloud: the refusal comes from the cloud once the transfer runs, and still shows at the checkbox.
    const there = (await api.get(`/api/projects/${project.id}/services`)).body.data.find((x: any) => x.name === 'cache');
    assert.equal((await api.patch(`/api/projects/${project.id}/services/${there.id}`, { stopped: true })).status, 200);
    await page.reload();
    await include.check();
    await card.getByRole('button', { name: 'Bring back to this server' }).click();
    await page.getByRole('dialog', { name: 'Bring Mover back to this server?' }).getByRole('button', { name: 'Bring it back' }).click();
    const alert = card.locator('.field-invalid').getByRole('alert');
    await alert.waitFor({ timeout: 60_000 });
    assert.match(await alert.innerText(), /the service cache is stopped on the cloud/);
    assert.equal(await include.getAttribute('aria-invalid'), 'true');
    const stayed = await dash.server.ctx.db.selectFrom('projects').select('location').where('id', '=', project.id).executeTakeFirstOrThrow();
    assert.equal(stayed.location, 'cloud', 'the project stays on the cloud');

    // Without the data it comes back.
    await include.uncheck();
    await card.getByRole('button', { name: 'Bring back to this server' }).click();
    await page.getByRole('dialog', { name: 'Bring Mover back to this server?' }).getByRole('button', { name: 'Bring it back' }).click();
    await page.locator('.toast').filter({ hasText: 'Mover is back on this server' }).waitFor({ timeout: 120_000 });
    await card.getByRole('button', { name: 'Move to the cloud' }).waitFor();
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});
