import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertFitsWidth, browserSuite, pageErrors, screenshot } from '../support/browser.js';
import { createDeployment, createProject } from '../support/factories.js';
import { useProjectSettings } from '../support/project-settings.js';

/**
 * The project's settings page against a real server (build settings, resources, sleep mode, status
 * and deletion), every settings page at 375 px, and the screenshots of a realistic project. Every
 * case makes its own project.
 */
describe('the project settings page', browserSuite('the project settings page'), () => {
  const s = useProjectSettings();
  const { dash, api, open, visit, toast } = s;

  it('build settings, resources and sleep mode are saved; a value out of range shows at its field', async () => {
    const project = await createProject(dash.server, s.user);
    const { context, page } = await open();
    await visit(page, project, '/settings', 'Build and run');

    await page.getByLabel('Build command').fill('npm run build');
    await page.getByLabel('Start command').fill('node dist/server.js');
    await page.getByLabel('Port', { exact: true }).fill('8080');
    await page.getByRole('button', { name: 'Save build settings' }).click();
    await toast(page, 'Build settings saved');
    const config = (await api().get(`/api/projects/${project.id}`)).body.data.config;
    assert.deepEqual([config.buildCommand, config.startCommand, config.port], ['npm run build', 'node dist/server.js', 8080]);

    const app = page.getByRole('group', { name: 'The running app' });
    await app.getByLabel('CPU cores').fill('9');
    await page.getByRole('button', { name: 'Save resources' }).click();
    const cpuAlert = app.locator('.field-invalid').getByRole('alert');
    await cpuAlert.waitFor();
    assert.match(await cpuAlert.innerText(), /production\.cpuCores must be at most 4/);
    assert.equal(await app.getByLabel('CPU cores').getAttribute('aria-invalid'), 'true');
    await app.getByLabel('CPU cores').fill('0.5');
    await app.getByLabel('Memory (MB)').fill('1024');
    await page.getByRole('group', { name: 'Builds' }).getByLabel('Memory (MB)').fill('4096');
    await page.getByRole('button', { name: 'Save resources' }).click();
    await toast(page, 'Resources saved');
    let res = (await api().get(`/api/projects/${project.id}/resources`)).body.data;
    assert.deepEqual([res.production.cpuCores, res.production.memoryMb, res.build.memoryMb, res.port], [0.5, 1024, 4096, 8080]);

    await page.getByLabel('Sleep when idle').check();
    await toast(page, 'Sleep mode: sleep when idle');
    res = (await api().get(`/api/projects/${project.id}/resources`)).body.data;
    assert.equal(res.sleepMode, 'auto_sleep');
    await page.reload();
    await page.getByLabel('Sleep when idle').waitFor();
    assert.equal(await page.getByLabel('Sleep when idle').isChecked(), true);
    assert.equal(await page.getByRole('group', { name: 'The running app' }).getByLabel('Memory (MB)').inputValue(), '1024');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('disabling the project asks first; enabling brings it back', async () => {
    const project = await createProject(dash.server, s.user);
    const { context, page } = await open();
    await visit(page, project, '/settings', 'Status');
    await page.getByRole('button', { name: 'Disable project' }).click();
    const dialog = page.getByRole('dialog', { name: `Disable ${project.name}?` });
    await dialog.getByRole('button', { name: 'Disable project' }).click();
    await toast(page, 'Project disabled');
    assert.equal((await api().get(`/api/projects/${project.id}`)).body.data.status, 'disabled');
    await page.getByRole('button', { name: 'Enable project' }).click();
    await toast(page, 'Project enabled');
    assert.equal((await api().get(`/api/projects/${project.id}`)).body.data.status, 'enabled');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('deleting a project lists what goes, needs its name typed, and lands on the projects page', async () => {
    const project = await createProject(dash.server, s.user, { name: 'doomed-shop' });
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'DOOMED_VAR', value: 'x' }] });
    await createDeployment(dash.server, project);
    const { context, page } = await open();
    await visit(page, project, '/settings', 'Danger zone');
    await page.getByRole('button', { name: 'Delete project' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete doomed-shop?' });
    await dialog.getByText('environment variable').waitFor();
    const listed = await dialog.innerText();
    assert.match(listed, /1 environment variable: production:DOOMED_VAR/);
    assert.match(listed, /1 deployment\b/);
    const confirm = dialog.getByRole('button', { name: 'Delete project forever' });
    assert.equal(await confirm.isDisabled(), true, 'not before the name is typed');
    await dialog.getByLabel(/Type doomed-shop to confirm/).fill('doomed-sho');
    assert.equal(await confirm.isDisabled(), true);
    await dialog.getByLabel(/Type doomed-shop to confirm/).fill('doomed-shop');
    await confirm.click();
    await page.waitForURL((u) => u.pathname === '/', { timeout: 10_000 });
    assert.equal((await api().get(`/api/projects/${project.id}`)).status, 404);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('every page fits 375 px', async () => {
    const project = await createProject(dash.server, s.user, { name: 'phone-check' });
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'A_RATHER_LONG_VARIABLE_NAME_FOR_A_PHONE', value: 'x'.repeat(120) }, { key: 'TOKEN', value: 't', isSecret: true }] });
    await api().post(`/api/projects/${project.id}/domains`, { domain: 'a-long-subdomain.of-a-long-domain.example.com' });
    await api().post(`/api/projects/${project.id}/route-rules`, { kind: 'ban', ips: ['2001:db8:1234:5678::/64', '198.51.100.0/24'], path: '/a/very/long/path/*' });
    const { context, page } = await open({ width: 375 });
    for (const [path, heading] of [
      ['/env', 'Environment variables'],
      ['/domains', 'Domains'],
      ['/rules', 'Route rules'],
      ['/settings', 'Build and run'],
    ] as const) {
      await visit(page, project, path, heading);
      await page.waitForLoadState('networkidle');
      await assertFitsWidth(page);
    }
    await page.getByRole('button', { name: 'Delete project' }).click();
    await page.getByRole('dialog').getByText(/environment variables/).waitFor();
    await assertFitsWidth(page);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the environment, domains and settings pages show a realistic project (screenshots)', async () => {
    const project = await createProject(dash.server, s.user, { name: 'storefront', buildCommand: 'npm run build', startCommand: 'node dash.server.js', installCommand: 'npm ci' });
    await api().post(`/api/projects/${project.id}/environments`, { name: 'staging', branch: 'staging' });
    await api().patch(`/api/projects/${project.id}/env`, {
      upserts: [
        { key: 'DATABASE_URL', value: 'postgres://app:secret@db.internal:5432/shop', isSecret: true },
        { key: 'LOG_LEVEL', value: 'info' },
        { key: 'NODE_ENV', value: 'production' },
        { key: 'PUBLIC_SITE_URL', value: 'https://shop.example.com' },
        { key: 'STRIPE_SECRET_KEY', value: 'sk_live_example', isSecret: true },
      ],
    });
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByRole('button', { name: 'Replace the value of STRIPE_SECRET_KEY' }).waitFor();
    await page.waitForLoadState('networkidle');
    await screenshot(page, 'env');

    // A verified primary domain and one waiting for its TXT record.
    await api().post(`/api/projects/${project.id}/domains`, { domain: 'shop.example.com', primary: true });
    const pending = (await api().post(`/api/projects/${project.id}/domains`, { domain: 'api.shop.example.com' })).body.data;
    const first = (await api().get(`/api/projects/${project.id}/domains`)).body.data[0];
    s.dns.txt.set(first.verification.name, [first.verification.value]);
    assert.equal((await api().post(`/api/projects/${project.id}/domains/shop.example.com/verify`)).status, 200);
    await visit(page, project, '/domains', 'Domains');
    await page.getByText(pending.verification.value).waitFor();
    await page.waitForLoadState('networkidle');
    await screenshot(page, 'domains');

    await visit(page, project, '/settings', 'Build and run');
    await page.getByRole('heading', { name: 'Resources' }).waitFor();
    await page.waitForLoadState('networkidle');
    await screenshot(page, 'settings');
    await context.close();
  });
});
