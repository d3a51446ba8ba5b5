import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { browserSuite, openPage, pageErrors, useDashboard } from '../support/browser.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/**
 * The settings page's Cloud card (docs/cloud.md "Transfers") on a real self-hosted dashboard server
 * linked to a real cloud server: "Include the services' data" shows only for a project with managed
 * services, is sent as includeData (a stopped service's 409 shows at the checkbox), and the move there and back.
 * (The data moving: test/cloud/services-transfer.)
 */
describe('moving a project to the cloud from the dashboard', browserSuite('the project transfer card'), () => {
  let cloud: TestServer;
  let cloudOwner: TestUser;
  let user: TestUser;
  const dash = useDashboard(async () => {
    cloud = await startTestServer({ flags: { mode: 'cloud' } });
    cloudOwner = await createUser(cloud);
    return { env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token } };
  });
  after(async () => {
    await cloud?.close();
  });

  it("a stopped service's refusal shows at \"Include the services' data\"; without services the project moves there and back", async () => {
    user = await createUser(dash.server);
    const project = await createProject(dash.server, user, { name: 'Mover' });
    // A stopped Redis as the services area keeps it (this server runs no database servers: it needs none to refuse).
    const now = new Date().toISOString();
    await dash.server.ctx.db
      .insertInto('managedServices')
      .values({ id: `svc_${'w'.repeat(20)}`, orgId: user.orgId, projectId: project.id, kind: 'redis', name: 'idle', version: '7', runtime: 'sandbox', desired: 'stopped', status: 'stopped', cpuCores: 0.5, memoryMb: 256, diskMb: 1024, port: 6379, credentials: 'x', lastError: null, environment: 'production', sourceId: null, seedFrom: null, address: null, createdAt: now, updatedAt: now })
      .execute();
    const { context, page } = await openPage(dash.browser, dash.server);
    const login = await page.request.post('/api/auth/login', { data: { email: user.email, password: user.password }, headers: { origin: dash.server.url } });
    assert.equal(login.status(), 200, await login.text());
    await page.goto(`/projects/${project.id}/settings`);
    const card = page.getByRole('region', { name: 'Cloud' });
    const include = card.getByLabel("Include the services' data");
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
    assert.equal(await include.getAttribute('aria-invalid'), 'true');
    assert.equal(await cloud.ctx.db.selectFrom('projects').select('id').executeTakeFirst(), undefined, 'nothing was made on the cloud');

    // Without managed services the checkbox is not offered, and the project moves.
    await dash.server.ctx.db.deleteFrom('managedServices').where('projectId', '=', project.id).execute();
    await page.reload();
    await card.getByRole('button', { name: 'Move to the cloud' }).waitFor();
    assert.equal(await include.count(), 0);
    await card.getByRole('button', { name: 'Move to the cloud' }).click();
    await page.getByRole('dialog', { name: 'Move Mover to the cloud?' }).getByRole('button', { name: 'Move it' }).click();
    await page.locator('.toast').filter({ hasText: 'Mover moved to the cloud' }).waitFor({ timeout: 60_000 });
    await card.getByRole('button', { name: 'Bring back to this server' }).waitFor();
    const location = async () => (await dash.server.ctx.db.selectFrom('projects').select('location').where('id', '=', project.id).executeTakeFirstOrThrow()).location;
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
