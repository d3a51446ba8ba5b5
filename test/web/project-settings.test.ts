import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { projectEnv } from '../../src/modules/projects/index.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, useDashboard, type ViewOptions } from '../support/browser.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { createDeployment, createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

/**
 * The project's settings pages against a real server: environment variables (secrets masked, the
 * merge PATCH, errors at the row), domains (DNS verification through a stub resolver, TLS status,
 * removal), route rules, build settings, resources, sleep mode, status and deletion.
 */
describe('project settings pages (env, domains, route rules, settings)', browserSuite('project settings pages'), () => {
  let dns: DnsStub;
  // Domains verified by their TXT record (the cloud default; self-hosted verifies at once unless told).
  const dash = useDashboard(async () => {
    dns = await startDnsStub();
    return { env: { BERTH_DOMAIN_VERIFICATION: 'dns', BERTH_DNS_SERVERS: dns.server } };
  });
  let user: TestUser;

  before(async () => {
    user = await createUser(dash.server);
  });
  after(async () => {
    await dns?.close();
  });

  /** A signed-in page (the session cookie from the sign-in route: the sign-in form has its own suite). */
  async function open(view: ViewOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
    const opened = await openPage(dash.browser, dash.server, view);
    const r = await opened.page.request.post('/api/auth/login', { data: { email: user.email, password: user.password }, headers: { origin: dash.server.url } });
    assert.equal(r.status(), 200, await r.text());
    return opened;
  }

  /** The project page at `path`, once its own heading shows. */
  async function visit(page: Page, project: TestProject, path: string, heading: string): Promise<void> {
    await page.goto(`/projects/${project.id}${path}`);
    await page.getByRole('heading', { name: heading, level: 2 }).first().waitFor({ timeout: 15_000 });
  }

  /** Presses Tab until `target` has the focus (the keyboard's own way there), at most `max` times. */
  async function tabTo(page: Page, target: Locator, max = 80): Promise<void> {
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab');
      if (await target.evaluate((el) => el === document.activeElement)) return;
    }
    assert.fail(`Tab never reached ${target}`);
  }

  const api = () => dash.server.api(user.token);
  const toast = (page: Page, text: string | RegExp) => page.locator('.toast').filter({ hasText: text }).first().waitFor({ timeout: 10_000 });

  it('a secret variable stays masked after saving and reloading, and the plain one shows', async () => {
    const project = await createProject(dash.server, user);
    const secret = `s3cr3t-${Math.random().toString(36).slice(2)}-value`;
    const { context, page } = await open();
    // Every API answer the page receives, to search for the secret afterwards.
    const bodies: Array<Promise<string>> = [];
    page.on('response', (res) => {
      if (new URL(res.url()).pathname.startsWith('/api/')) bodies.push(res.text().catch(() => ''));
    });
    await visit(page, project, '/env', 'Environment variables');
    await page.getByText('No variables in production yet').waitFor();
    await page.getByText('Changes apply on the next deploy of production.').waitFor();

    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('PLAIN_KEY');
    await page.getByLabel('Value of PLAIN_KEY', { exact: true }).fill('plain-value-123');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('SECRET_KEY');
    await page.getByLabel('SECRET_KEY is secret', { exact: true }).check();
    const secretInput = page.getByLabel('Value of SECRET_KEY', { exact: true });
    assert.equal(await secretInput.getAttribute('type'), 'password', 'a secret is typed unseen');
    await secretInput.fill(secret);
    await page.getByText('2 unsaved changes').waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 2 changes to production');
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).waitFor();

    const listed = await api().get(`/api/projects/${project.id}/env`);
    assert.deepEqual(
      listed.body.data.map((v: { key: string; value: string; isSecret: boolean }) => [v.key, v.value, v.isSecret]),
      [
        ['PLAIN_KEY', 'plain-value-123', false],
        ['SECRET_KEY', '********', true],
      ],
    );
    assert.equal((await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.SECRET_KEY, secret, 'stored as typed');

    await page.reload();
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).waitFor();
    assert.equal(await page.getByLabel('Value of PLAIN_KEY', { exact: true }).inputValue(), 'plain-value-123');
    const secretRow = page.getByRole('row').filter({ has: page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }) });
    assert.match(await secretRow.innerText(), /••••••••/);
    assert.equal(await page.getByLabel('SECRET_KEY is secret', { exact: true }).isChecked(), true);
    await page.waitForLoadState('networkidle');
    assert.ok(!(await page.content()).includes(secret), "the secret is not in the page's HTML");
    const seen = await Promise.all(bodies);
    assert.ok(seen.length >= 3, `${seen.length} API answers seen`);
    assert.ok(!seen.some((b) => b.includes(secret)), 'no API answer the page received holds the secret');

    // Replace: a new value for the secret, typed unseen; the old one was never shown.
    await page.getByRole('button', { name: 'Replace the value of SECRET_KEY' }).click();
    const fresh = page.getByLabel('New value of SECRET_KEY', { exact: true });
    assert.equal(await fresh.inputValue(), '');
    await fresh.fill(`${secret}-2`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 1 change to production');
    await waitFor(async () => (await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.SECRET_KEY === `${secret}-2`, 'the replaced secret');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a key the API refuses shows its error at that variable, and the draft is kept to fix it', async () => {
    const project = await createProject(dash.server, user);
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('GOOD_KEY');
    await page.getByLabel('Value of GOOD_KEY', { exact: true }).fill('1');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('9-BAD');
    await page.getByLabel('Value of 9-BAD', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Save changes' }).click();

    const bad = page.getByLabel('Key of 9-BAD', { exact: true });
    const alert = page.getByRole('row').filter({ has: bad }).getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /upserts\.1\.key must match/);
    assert.equal(await bad.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('Key of GOOD_KEY', { exact: true }).getAttribute('aria-invalid'), null, 'only the refused row is marked');
    await page.getByText('Nothing was saved').waitFor();
    assert.deepEqual((await api().get(`/api/projects/${project.id}/env`)).body.data, [], 'nothing written');

    // The draft came back (optimistic rows rolled back): fix the key and save.
    await bad.fill('NINE_OK');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 2 changes');
    const keys = (await api().get(`/api/projects/${project.id}/env`)).body.data.map((v: { key: string }) => v.key);
    assert.deepEqual(keys, ['GOOD_KEY', 'NINE_OK']);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a save over variables changed elsewhere meanwhile is refused, and the page offers to reload them', async () => {
    const project = await createProject(dash.server, user);
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'SHARED', value: 'v1' }] });
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByLabel('Value of SHARED', { exact: true }).waitFor();
    // Someone else writes while this page holds its copy.
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'SHARED', value: 'theirs' }] });
    await page.getByLabel('Value of SHARED', { exact: true }).fill('mine');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('changed since this page read them').waitFor();
    assert.equal((await api().get(`/api/projects/${project.id}/env`)).body.data[0].value, 'theirs', 'their change survives');
    assert.equal(await page.getByLabel('Value of SHARED', { exact: true }).inputValue(), 'mine', 'the draft is kept');
    await page.getByRole('button', { name: 'Reload them' }).click();
    await waitFor(async () => (await page.getByLabel('Value of SHARED', { exact: true }).inputValue()) === 'theirs', 'the reloaded value');
    assert.equal(await page.getByText('changed since this page read them').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('pasted .env lines become rows, a removal is saved with them, and Redeploy queues a deployment', async () => {
    const project = await createProject(dash.server, user, { localPath: tempDir('berth-app-') });
    await api().patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'OLD_KEY', value: 'old' }, { key: 'API_TOKEN', value: 'tok-1', isSecret: true }] });
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByRole('button', { name: 'Remove OLD_KEY' }).click();
    await page.getByText('Removed when you save').waitFor();
    await page.getByRole('button', { name: 'Paste .env' }).click();
    await page.getByLabel('.env lines').fill('# from my laptop\nexport DATABASE_URL="postgres://db:5432/app"\nLOG_LEVEL=debug # noisy\n\nAPI_TOKEN=tok-2');
    await page.getByRole('button', { name: 'Add to the table' }).click();
    await page.getByLabel('Value of DATABASE_URL', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('Value of LOG_LEVEL', { exact: true }).inputValue(), 'debug');
    assert.equal(await page.getByLabel('New value of API_TOKEN', { exact: true }).inputValue(), 'tok-2', 'a pasted secret replaces its value');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 4 changes');
    const vars = (await api().get(`/api/projects/${project.id}/env`)).body.data as Array<{ key: string; value: string; isSecret: boolean }>;
    assert.deepEqual(
      vars.map((v) => [v.key, v.value, v.isSecret]),
      [
        ['API_TOKEN', '********', true],
        ['DATABASE_URL', 'postgres://db:5432/app', false],
        ['LOG_LEVEL', 'debug', false],
      ],
    );
    assert.equal((await projectEnv.resolveEnvForRuntime(dash.server.ctx, project.id)).env.API_TOKEN, 'tok-2');

    await page.getByRole('button', { name: 'Redeploy now' }).click();
    const follow = page.getByRole('link', { name: /^Follow deployment / });
    await follow.waitFor();
    const depId = (await follow.getAttribute('href'))!.split('/').pop()!;
    const dep = await api().get(`/api/deployments/${depId}`);
    assert.equal(dep.status, 200, dep.text);
    assert.equal(dep.body.data.projectId, project.id);
    assert.equal(dep.body.data.environment, 'production');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the environment selector edits a preview environment apart from production', async () => {
    const project = await createProject(dash.server, user);
    assert.equal((await api().post(`/api/projects/${project.id}/environments`, { name: 'staging', branch: 'staging' })).status, 201);
    const { context, page } = await open();
    await visit(page, project, '/env', 'Environment variables');
    await page.getByLabel('Environment', { exact: true }).selectOption('staging');
    await page.getByText('No variables in staging yet').waitFor();
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Key of new variable', { exact: true }).fill('ONLY_STAGING');
    await page.getByLabel('Value of ONLY_STAGING', { exact: true }).fill('yes');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await toast(page, 'Saved 1 change to staging');
    assert.equal((await api().get(`/api/projects/${project.id}/env?environment=staging`)).body.data.length, 1);
    assert.equal((await api().get(`/api/projects/${project.id}/env`)).body.data.length, 0);
    await context.close();
  });

  it('a domain is added, verified by its TXT record and removed after confirmation; a bad name shows at the domain field', async () => {
    const project = await createProject(dash.server, user);
    const { context, page } = await open();
    await visit(page, project, '/domains', 'Domains');
    await page.getByText(project.routes.freeDomain).first().waitFor();

    const field = page.getByLabel('Domain', { exact: true });
    await field.fill('not a domain!');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const alert = page.locator('.field-invalid').getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /domain/);
    assert.equal(await field.getAttribute('aria-invalid'), 'true');

    await field.fill('www.shop.example.com');
    await page.getByLabel('Make it the primary domain').check();
    await page.getByRole('button', { name: 'Add domain' }).click();
    await toast(page, 'www.shop.example.com added: verify it with its TXT record');
    const row = page.getByRole('rowgroup').filter({ hasText: 'www.shop.example.com' });
    await row.getByText('not verified').waitFor();
    assert.equal(await field.getAttribute('aria-invalid'), null, 'the error went with the success');
    const claim = (await api().get(`/api/projects/${project.id}/domains`)).body.data[0];
    assert.equal(claim.verification.name, '_berth-challenge.www.shop.example.com');
    const text = await row.innerText();
    assert.ok(text.includes(claim.verification.name) && text.includes(claim.verification.value), 'the TXT record to create is shown');

    // Verify before the record exists: the API's reason shows at the row.
    await row.getByRole('button', { name: 'Verify www.shop.example.com' }).click();
    const why = row.getByRole('alert');
    await why.waitFor();
    assert.match(await why.innerText(), /no TXT record at _berth-challenge\.www\.shop\.example\.com/);

    dns.txt.set('_berth-challenge.www.shop.example.com', [claim.verification.value]);
    await row.getByRole('button', { name: 'Verify www.shop.example.com' }).click();
    await toast(page, 'www.shop.example.com verified');
    await row.getByText('verified', { exact: true }).waitFor();
    assert.equal(await row.getByRole('alert').count(), 0);
    // Now primary and verified: the project is served at it.
    await page.locator('dl.facts').getByRole('link', { name: 'www.shop.example.com' }).waitFor();
    assert.match(await row.innerText(), /none/, 'TLS status shown (no HTTPS port on this dash.server)');

    await row.getByRole('button', { name: 'Remove www.shop.example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove www.shop.example.com?' });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /primary domain: the free domain becomes/);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await api().get(`/api/projects/${project.id}/domains`)).body.data.length, 1, 'cancel removes nothing');
    await row.getByRole('button', { name: 'Remove www.shop.example.com' }).click();
    await dialog.getByRole('button', { name: 'Remove domain' }).click();
    await toast(page, 'www.shop.example.com removed');
    await page.getByText('No custom domains').waitFor();
    assert.deepEqual((await api().get(`/api/projects/${project.id}/domains`)).body.data, []);
    await page.locator('dl.facts').getByRole('link', { name: project.routes.freeDomain }).first().waitFor();
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the HTTPS redirect and HSTS switches save as they are toggled', async () => {
    const project = await createProject(dash.server, user);
    const { context, page } = await open();
    await visit(page, project, '/domains', 'Domains');
    const redirect = page.getByLabel('Redirect plain HTTP to HTTPS');
    const hsts = page.getByLabel('Send Strict-Transport-Security (HSTS)');
    assert.equal(await redirect.isChecked(), true, 'null: the default (on once certified)');
    assert.equal(await hsts.isChecked(), false);
    await redirect.uncheck();
    await hsts.check();
    await waitFor(async () => {
      const c = (await api().get(`/api/projects/${project.id}`)).body.data.config;
      return c.httpsRedirect === false && c.hsts === true;
    }, 'the HTTPS config saved');
    await page.reload();
    await page.getByLabel('Send Strict-Transport-Security (HSTS)').waitFor();
    assert.equal(await redirect.isChecked(), false);
    assert.equal(await hsts.isChecked(), true);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a rate-limit rule is added, toggled, edited and deleted; a bad path shows at the path field', async () => {
    const project = await createProject(dash.server, user);
    const { context, page } = await open();
    await visit(page, project, '/rules', 'Route rules');
    await page.getByText('No route rules').waitFor();
    await page.getByRole('button', { name: 'Add rule' }).click();
    const form = page.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Path').fill('api');
    await form.getByLabel('Requests allowed').fill('30');
    await form.getByLabel('Window (seconds)').fill('10');
    await form.getByRole('button', { name: 'Add rule' }).click();
    const pathAlert = form.locator('.field-invalid').getByRole('alert');
    await pathAlert.waitFor();
    assert.match(await pathAlert.innerText(), /path must start with "\/"/);
    assert.equal(await form.getByLabel('Path').getAttribute('aria-invalid'), 'true');

    await form.getByLabel('Path').fill('/api');
    await form.getByRole('button', { name: 'Add rule' }).click();
    await toast(page, 'Rate limit rule added');
    await form.waitFor({ state: 'hidden' });
    const rule = (await api().get(`/api/projects/${project.id}/route-rules`)).body.data[0];
    assert.deepEqual([rule.kind, rule.path, rule.limit, rule.windowSeconds, rule.enabled], ['rate-limit', '/api', 30, 10, true]);
    await page.getByText('30 requests per 10 s per client address').waitFor();

    const toggle = page.getByRole('checkbox', { name: 'Rate limit rule on /api enabled' });
    await toggle.uncheck();
    assert.equal(await toggle.isChecked(), false, 'shown at once');
    await waitFor(async () => (await api().get(`/api/projects/${project.id}/route-rules`)).body.data[0].enabled === false, 'the rule disabled');
    await toggle.check();
    await waitFor(async () => (await api().get(`/api/projects/${project.id}/route-rules`)).body.data[0].enabled === true, 'the rule enabled again');

    await page.getByRole('button', { name: 'Edit rate limit rule on /api' }).click();
    const edit = page.getByRole('form', { name: 'Edit rate limit rule' });
    await edit.getByLabel('Requests allowed').fill('50');
    await edit.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('50 requests per 10 s per client address').waitFor();
    assert.equal((await api().get(`/api/projects/${project.id}/route-rules`)).body.data[0].limit, 50);

    // Some company for the screenshot: a ban and an allow list.
    await api().post(`/api/projects/${project.id}/route-rules`, { kind: 'ban', ips: ['203.0.113.7', '198.51.100.0/24'], path: null });
    await api().post(`/api/projects/${project.id}/route-rules`, { kind: 'allow-deny', action: 'allow', cidrs: ['10.0.0.0/8'], path: '/admin/*' });
    await page.reload();
    await page.getByText('Only 10.0.0.0/8 pass').waitFor();
    await screenshot(page, 'route-rules');

    await page.getByRole('button', { name: 'Delete rate limit rule on /api' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this rule?' });
    await dialog.getByRole('button', { name: 'Delete rule' }).click();
    await toast(page, 'Rule deleted');
    const kinds = (await api().get(`/api/projects/${project.id}/route-rules`)).body.data.map((r: { kind: string }) => r.kind);
    assert.deepEqual(kinds.sort(), ['allow-deny', 'ban']);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a ban rule is added with the keyboard alone', async () => {
    const project = await createProject(dash.server, user);
    const { context, page } = await open();
    await visit(page, project, '/rules', 'Route rules');
    await tabTo(page, page.getByRole('button', { name: 'Add rule' }));
    await page.keyboard.press('Enter');
    const kind = page.getByLabel('Kind');
    await kind.waitFor();
    assert.equal(await kind.evaluate((el) => el === document.activeElement), true, 'the form opens on its first field');
    await page.keyboard.press('ArrowDown'); // rate limit -> ban
    assert.equal(await kind.inputValue(), 'ban');
    await page.keyboard.press('Tab');
    await page.keyboard.type('/login');
    await page.keyboard.press('Tab');
    await page.keyboard.type('203.0.113.9');
    await tabTo(page, page.getByRole('button', { name: 'Add rule' }).last(), 20);
    await page.keyboard.press('Enter');
    await toast(page, 'Ban rule added');
    const rules = (await api().get(`/api/projects/${project.id}/route-rules`)).body.data;
    assert.deepEqual([rules[0].kind, rules[0].path, rules[0].ips], ['ban', '/login', ['203.0.113.9']]);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('build settings, resources and sleep mode are saved; a value out of range shows at its field', async () => {
    const project = await createProject(dash.server, user);
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
    const project = await createProject(dash.server, user);
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
    const project = await createProject(dash.server, user, { name: 'doomed-shop' });
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
    const project = await createProject(dash.server, user, { name: 'phone-check' });
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
    const project = await createProject(dash.server, user, { name: 'storefront', buildCommand: 'npm run build', startCommand: 'node dash.server.js', installCommand: 'npm ci' });
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
    dns.txt.set(first.verification.name, [first.verification.value]);
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
