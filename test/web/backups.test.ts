import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createDestination, createPolicy, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

/**
 * The backups pages against a real server with its job worker: destinations through their form,
 * a project's policy, a real backup followed live, protect, and a staged restore applied with its
 * confirmation token that brings the volume's old content back.
 */
describe('the backups pages', browserSuite('the backups pages'), () => {
  const dash = useDashboard({ background: true });
  let user: TestUser;

  before(async () => {
    user = await createUser(dash.server);
  });

  const api = () => dash.server.api(user.token);
  const signedIn = async (width?: number) => {
    const { context, page } = await openPage(dash.browser, dash.server, { width });
    await signIn(page, user);
    return { context, page };
  };
  const noErrors = (page: Page) => assert.deepEqual(pageErrors(page), []);

  /** A case's own project whose volume holds a note and `size` bytes of incompressible uploads. */
  async function projectWithData(name: string, size: number) {
    const project = await createProjectWithVolume(dash.server, user, { name });
    mkdirSync(project.volume, { recursive: true });
    writeFileSync(path.join(project.volume, 'note.txt'), 'before the backup\n');
    mkdirSync(path.join(project.volume, 'uploads'), { recursive: true });
    writeFileSync(path.join(project.volume, 'uploads', 'photos.bin'), randomBytes(size));
    return project;
  }

  /** A case's own project (as projectWithData) with one succeeded backup run of its volume, made through the API. */
  async function backedUpProject(name: string, size = 1024 * 1024) {
    const project = await projectWithData(name, size);
    const dest = await createDestination(dash.server, user, { name: `${name} folder` });
    const policy = await createPolicy(dash.server, user, project, { destinationId: dest.id, cronExpression: '0 3 * * *', retainCount: 5 });
    const run = await api().post(`/api/backup-policies/${policy.id}/run`);
    assert.ok(run.status === 201 || run.status === 200, run.text);
    const runId: string = run.body.data.runId;
    const status = await waitFor(async () => {
      const s = (await api().get(`/api/backup-runs/${runId}`)).body.data.status as string;
      return s === 'succeeded' || s === 'failed' ? s : null;
    }, 'the backup run to end', 60_000);
    assert.equal(status, 'succeeded');
    return { project, runId };
  }

  it('a local destination is created through the form; a relative folder is refused under the Folder field', async () => {
    const { context, page } = await signedIn();
    await page.goto('/backups/destinations');
    await page.getByRole('heading', { name: 'Backup destinations', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByLabel('Name', { exact: true }).fill('nightly');
    await page.getByLabel('Folder').fill('backups/relative');
    await page.getByRole('button', { name: 'Create destination' }).click();
    const folder = page.getByLabel('Folder');
    await page.locator('.field-invalid').getByText('path must be an absolute folder path').waitFor();
    assert.equal(await folder.getAttribute('aria-invalid'), 'true');

    const dir = tempDir('berth-web-dest-');
    await folder.fill(dir);
    await page.getByRole('button', { name: 'Create destination' }).click();
    const row = page.getByRole('row', { name: /nightly/ });
    await row.waitFor();
    const list = (await api().get('/api/backup-destinations')).body.data as Array<{ name: string; kind: string; path: string }>;
    assert.deepEqual(
      list.filter((d) => d.name === 'nightly').map((d) => [d.kind, d.path]),
      [['local', dir]],
    );

    await row.getByRole('button', { name: 'Test nightly' }).click();
    await row.getByText(/Works \(\d+ ms\)/).waitFor();
    // Realistic company for the screenshot: an S3 bucket beside the folder.
    await api().post('/api/backup-destinations', { name: 'offsite', kind: 's3', bucket: 'acme-backups', region: 'eu-west-1', prefix: 'berth', accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'never-shown-1' });
    await page.reload();
    await page.getByRole('row', { name: /offsite/ }).waitFor();
    await screenshot(page, 'backup-destinations');
    noErrors(page);
    await context.close();
  });

  it("an S3 destination's secret key is write-only: never shown, kept when left empty, and the destination deletes after confirming", async () => {
    const { context, page } = await signedIn();
    await page.goto('/backups/destinations');
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByLabel('Name', { exact: true }).fill('bucket');
    await page.getByLabel('Kind').selectOption('s3');
    assert.equal(await page.getByLabel('Folder').count(), 0, 'the local fields are gone');
    await page.getByLabel('Bucket').fill('Bad_Bucket');
    await page.getByLabel('Access key ID').fill('AKIAWEB');
    await page.getByLabel('Secret access key').fill('s3cr3t-key-web');
    await page.getByRole('button', { name: 'Create destination' }).click();
    await page.locator('.field-invalid').getByText(/bucket must be a valid bucket name/).waitFor();
    await page.getByLabel('Bucket').fill('web-bucket');
    await page.getByRole('button', { name: 'Create destination' }).click();
    const row = page.getByRole('row', { name: /bucket/ }).filter({ hasText: 's3://web-bucket' });
    await row.waitFor();

    await row.getByRole('button', { name: 'Edit bucket' }).click();
    const secret = page.getByLabel('Secret access key');
    assert.equal(await secret.inputValue(), '', 'the secret is not filled in');
    assert.equal(await secret.getAttribute('type'), 'password');
    assert.ok(!(await page.content()).includes('s3cr3t-key-web'), 'the secret is nowhere in the page');
    await page.getByLabel('Prefix (optional)').fill('nightly');
    await page.getByRole('button', { name: 'Save destination' }).click();
    await page.getByRole('row', { name: /bucket/ }).filter({ hasText: 's3://web-bucket/nightly' }).waitFor();
    const saved = ((await api().get('/api/backup-destinations')).body.data as Array<{ id: string; name: string; prefix?: string; secretAccessKey?: string }>).find((d) => d.name === 'bucket')!;
    assert.equal(saved.prefix, 'nightly');
    assert.equal(saved.secretAccessKey, '********', 'the secret is kept (still set)');

    await page.getByRole('button', { name: 'Delete bucket' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this destination?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await api().get(`/api/backup-destinations/${saved.id}`)).status, 200, 'cancel keeps it');
    await page.getByRole('button', { name: 'Delete bucket' }).click();
    await dialog.getByRole('button', { name: 'Delete destination' }).click();
    await page.getByRole('row', { name: /s3:\/\/web-bucket/ }).waitFor({ state: 'detached' });
    assert.equal((await api().get(`/api/backup-destinations/${saved.id}`)).status, 404);
    noErrors(page);
    await context.close();
  });

  it('the destination form works with the keyboard alone', async () => {
    const { context, page } = await signedIn();
    await page.goto('/backups/destinations');
    await page.getByRole('button', { name: 'New destination' }).focus();
    await page.keyboard.press('Enter');
    // The form opens with the focus in its first field.
    await page.keyboard.type('keyboard');
    await page.keyboard.press('Tab'); // Kind (local folder)
    await page.keyboard.press('Tab'); // Folder
    const dir = tempDir('berth-web-kbd-');
    await page.keyboard.type(dir);
    await page.keyboard.press('Enter');
    await page.getByRole('row', { name: /keyboard/ }).waitFor();
    const list = (await api().get('/api/backup-destinations')).body.data as Array<{ name: string; path?: string }>;
    assert.equal(list.find((d) => d.name === 'keyboard')?.path, dir);
    noErrors(page);
    await context.close();
  });

  it('a policy is created on the project, and "Run now" shows the backup progress live until it succeeds; Protect sticks', async () => {
    // Enough incompressible data for the run to report progress a few times.
    const project = await projectWithData('shop', 64 * 1024 * 1024);
    const dest = await createDestination(dash.server, user, { name: 'server folder' });

    const { context, page } = await signedIn();
    await page.goto(`/projects/${project.id}/backups`);
    await page.getByRole('heading', { name: 'Backup policies', level: 2 }).waitFor();
    await page.getByText('No backup policy yet').waitFor();
    await page.getByRole('button', { name: 'New policy' }).click();
    const form = page.getByRole('form', { name: 'New backup policy' });
    await form.getByLabel('Destination').selectOption({ label: `server folder — ${dest.dir}` });
    assert.equal(await form.getByLabel('What to back up').inputValue(), project.dataServiceId, 'the data volume by default');
    await form.getByLabel('Schedule (cron)').fill('every night');
    await form.getByRole('button', { name: 'Create policy' }).click();
    await form.locator('.field-invalid').getByText(/cronExpression is not a valid schedule/).waitFor();
    await form.getByLabel('Schedule (cron)').fill('0 3 * * *');
    await form.getByLabel('Keep the last (runs)').fill('5');
    await form.getByRole('button', { name: 'Create policy' }).click();
    const card = page.getByRole('article', { name: /data \(volume\) to server folder/ });
    await card.waitFor();
    await card.getByText('Keep the last 5 runs').waitFor();
    const policies = (await api().get(`/api/projects/${project.id}/backup-policies`)).body.data;
    assert.equal(policies.length, 1);
    assert.equal(policies[0].destinationId, dest.id);
    assert.equal(policies[0].cronExpression, '0 3 * * *');
    assert.equal(policies[0].retainCount, 5);

    await card.getByRole('button', { name: 'Run now' }).click();
    const runs = page.getByRole('table', { name: /Backup runs/ });
    // The live view: a progress bar fed by the run's `progress` events, then the final status.
    await runs.getByRole('progressbar').first().waitFor({ timeout: 20_000 });
    await runs.getByText(/(Uploading|Verifying): [\d.]+ (B|KB|MB)/).first().waitFor({ timeout: 20_000 });
    const done = runs.locator('.badge', { hasText: 'succeeded' });
    await done.waitFor({ timeout: 60_000 });
    assert.equal(await runs.getByRole('progressbar').count(), 0, 'the bar goes once the run ends');
    const list = (await api().get(`/api/projects/${project.id}/backup-runs`)).body.data;
    assert.equal(list.length, 1);
    assert.equal(list[0].status, 'succeeded');
    const runId = list[0].id;
    await runs.getByText(/\d+(\.\d)? MB/).waitFor();

    await runs.getByRole('button', { name: /^Protect the backup/ }).click();
    // Optimistic: the button flips at once; the server agrees.
    await runs.getByRole('button', { name: /^Unprotect the backup/ }).waitFor({ timeout: 1000 });
    await runs.locator('.badge', { hasText: 'protected' }).waitFor();
    await waitFor(async () => (await api().get(`/api/backup-runs/${runId}`)).body.data.protected === true, 'the run to be protected', 5000);

    // A second run, shown in flight (when caught) beside the protected one.
    await card.getByRole('button', { name: 'Run now' }).click();
    await runs.getByRole('progressbar').or(runs.locator('.badge', { hasText: 'succeeded' }).nth(1)).first().waitFor({ timeout: 20_000 });
    await screenshot(page, 'project-backups');
    await runs.locator('.badge', { hasText: 'succeeded' }).nth(1).waitFor({ timeout: 60_000 });
    noErrors(page);
    await context.close();
  });

  it('a restore is prepared, shows what it will replace, and applied with its confirmation brings the old content back', async () => {
    // Compressed size shown in MB: a few MB of incompressible data.
    const { project, runId } = await backedUpProject('restored', 4 * 1024 * 1024);
    const note = path.join(project.volume, 'note.txt');
    writeFileSync(note, 'changed after the backup\n');
    writeFileSync(path.join(project.volume, 'added.txt'), 'added after the backup\n');

    const { context, page } = await signedIn();
    await page.goto(`/projects/${project.id}/backups`);
    await page.getByRole('button', { name: /^Restore the backup/ }).last().click();
    await page.waitForURL(/\/backups\/restores\/[^/]+$/);
    const restoreId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: /Restore/, level: 2 }).waitFor();
    const replaced = page.getByRole('region', { name: 'What will be replaced' });
    await replaced.getByText('data (volume)').waitFor();
    await replaced.getByText(/files added since are removed/).waitFor();
    await replaced.getByText(/MB compressed/).waitFor();
    assert.match(await page.getByLabel('Confirmation token').inputValue(), /^berth_rst/, 'the token prepare answered is filled in');
    assert.ok(!page.url().includes('berth_rst'), 'the token is not in the URL');
    assert.equal((await api().get(`/api/backup-restores/${restoreId}`)).body.data.status, 'staged');
    await screenshot(page, 'restore');

    await page.getByRole('button', { name: 'Apply restore…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replace the data with this backup?' });
    await dialog.getByText(/The current data cannot be brought back/).waitFor();
    await dialog.getByText('data (volume)').waitFor();
    await dialog.getByRole('button', { name: 'Replace the data' }).click();
    await page.getByText('Restored.', { exact: true }).waitFor({ timeout: 60_000 });
    await page.locator('.badge', { hasText: 'succeeded' }).waitFor();

    assert.equal((await api().get(`/api/backup-restores/${restoreId}`)).body.data.status, 'succeeded');
    assert.equal(readFileSync(note, 'utf8'), 'before the backup\n');
    assert.equal(existsSync(path.join(project.volume, 'added.txt')), false, 'a file added after the backup is gone');
    assert.equal(existsSync(path.join(project.volume, 'uploads', 'photos.bin')), true);
    noErrors(page);
    await context.close();
  });

  it('a wrong confirmation token is refused under its field and leaves the restore staged; Cancel ends it', async () => {
    const { project, runId } = await backedUpProject('staged');
    const prep = await api().post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const { restoreId } = prep.body.data;
    const { context, page } = await signedIn();
    // Opened by its link (not from the page that prepared it): no token to fill in.
    await page.goto(`/projects/${project.id}/backups/restores/${restoreId}`);
    const token = page.getByLabel('Confirmation token');
    assert.equal(await token.inputValue(), '');
    await token.fill('berth_rst_wrong');
    await page.getByRole('button', { name: 'Apply restore…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replace the data with this backup?' });
    await dialog.getByRole('button', { name: 'Replace the data' }).click();
    await dialog.getByText(/confirmationToken does not match/).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('.field-invalid').getByText(/confirmationToken does not match/).waitFor();
    assert.equal((await api().get(`/api/backup-restores/${restoreId}`)).body.data.status, 'staged');

    await page.getByRole('button', { name: 'Cancel restore' }).click();
    await page.getByText(/This restore was cancelled; nothing was replaced/).waitFor();
    assert.equal((await api().get(`/api/backup-restores/${restoreId}`)).body.data.status, 'cancelled');
    noErrors(page);
    await context.close();
  });

  it('the destinations, backups and restore pages fit 375 px', async () => {
    const { project, runId } = await backedUpProject('shop-phone');
    const other = await createProjectWithVolume(dash.server, user, { name: 'blog' });
    const dest = await createDestination(dash.server, user, { name: 'phone-check' });
    await createPolicy(dash.server, user, other, { destinationId: dest.id, cronExpression: '0 * * * *', retainDays: 30 });
    const { restoreId } = (await api().post(`/api/backup-runs/${runId}/restore/prepare`, {})).body.data;
    const { context, page } = await signedIn(375);
    await page.goto('/backups/destinations');
    await page.getByRole('heading', { name: 'Backup destinations', level: 1 }).waitFor();
    await page.getByRole('row', { name: /phone-check/ }).waitFor();
    await assertFitsWidth(page);
    await page.getByRole('button', { name: 'New destination' }).click();
    await page.getByLabel('Kind').selectOption('s3');
    await assertFitsWidth(page);
    await page.goto(`/projects/${project.id}/backups`);
    await page.getByRole('table', { name: /Backup runs/ }).waitFor();
    await assertFitsWidth(page);
    await page.goto(`/projects/${other.id}/backups`);
    await page.getByRole('article', { name: /phone-check/ }).waitFor();
    await page.getByRole('button', { name: 'New policy' }).click();
    await page.getByRole('form', { name: 'New backup policy' }).waitFor();
    await assertFitsWidth(page);
    await page.goto(`/projects/${project.id}/backups/restores/${restoreId}`);
    await page.getByRole('region', { name: 'What will be replaced' }).waitFor();
    await assertFitsWidth(page);
    await page.getByRole('button', { name: 'Cancel restore' }).click();
    await page.getByText(/This restore was cancelled/).waitFor();
    noErrors(page);
    await context.close();
  });
});
