import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSuite, pageErrors, screenshot } from '../support/browser.js';
import { createProject } from '../support/factories.js';
import { useProjectSettings } from '../support/project-settings.js';
import { waitFor } from '../support/wait.js';

/**
 * The project's domains and route rules pages against a real server: a domain verified by its TXT
 * record through a stub resolver, its TLS status and removal, the HTTPS switches, and rate-limit,
 * ban and allow-list rules. Every case makes its own project.
 */
describe('the domains and route rules pages', browserSuite('the domains and route rules pages'), () => {
  const s = useProjectSettings();
  const { dash, api, open, visit, toast, tabTo } = s;

  it('a domain is added, verified by its TXT record and removed after confirmation; a bad name shows at the domain field', async () => {
    const project = await createProject(dash.server, s.user);
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

    s.dns.txt.set('_berth-challenge.www.shop.example.com', [claim.verification.value]);
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

  it('the HTTPS redirect and HSTS switches save as they are toggled; one answered before the other does not undo it', async () => {
    const project = await createProject(dash.server, s.user);
    const { context, page } = await open();
    await visit(page, project, '/domains', 'Domains');
    const redirect = page.getByLabel('Redirect plain HTTP to HTTPS');
    const hsts = page.getByLabel('Send Strict-Transport-Security (HSTS)');
    assert.equal(await redirect.isChecked(), true, 'null: the default (on once certified)');
    assert.equal(await hsts.isChecked(), false);
    // The first save is held back in the browser, so the second is answered while the first is still out:
    // that answer (the server's project, without the first change yet) must not show the first switch undone.
    let held = true;
    await page.route(`**/api/projects/${project.id}`, async (route) => {
      if (route.request().method() === 'PATCH' && held) {
        held = false;
        await new Promise((r) => setTimeout(r, 1500));
      }
      await route.continue();
    });
    await redirect.uncheck();
    const second = page.waitForResponse((r) => r.request().method() === 'PATCH' && (r.request().postData() ?? '').includes('hsts'));
    await hsts.check();
    await second;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
    assert.equal(await redirect.isChecked(), false, 'the first switch stays as chosen while its save is out');
    assert.equal(await hsts.isChecked(), true);
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
    const project = await createProject(dash.server, s.user);
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
    const project = await createProject(dash.server, s.user);
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
});
