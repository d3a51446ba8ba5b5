/**
 * The Services tab against a real server on the `sandbox` runtime (issue 37 point 5): a Redis created
 * through the form runs (the host's Debian server in the project's box), its log is live, a project
 * admin reveals its credentials on request (audited, absent from the page until then), and it deletes
 * after typing its name; a member without admin on the project, and a reader, are offered no reveal.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createGrant, createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { serviceRunning } from '../services/helpers.js';

const root = process.getuid?.() === 0;
const { skip } = root ? browserSuite('web/services') : { skip: 'the sandbox runs services under project uids only as root' };
const START = { timeout: 120_000 };

/** Signs in and makes `orgId` the active org through the org switcher. */
async function signInTo(page: Page, user: Pick<TestUser, 'email' | 'password'>, orgId: string): Promise<void> {
  await signIn(page, user);
  const switcher = page.getByLabel('Organization');
  if ((await switcher.inputValue()) !== orgId) {
    await switcher.selectOption(orgId);
    await page.waitForFunction((id) => (document.querySelector('select[aria-label="Organization"]') as HTMLSelectElement | null)?.value === id, orgId);
  }
  await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
}

describe('dashboard: a project\'s services', { skip }, () => {
  const dir = tempDir('berth-web-services-');
  const dash = useDashboard({ background: true, dataDir: path.join(dir, 'data'), flags: { runtime: 'sandbox' } });
  let team: TestOrg;
  after(() => rmSync(dir, { recursive: true, force: true }));
  before(async () => {
    team = await createTeam(dash.server);
  });

  it('an admin creates a Redis through the form, sees it running with its live log, reveals its credentials on request, and deletes it', async () => {
    const owner = await createUser(dash.server);
    const project = await createProject(dash.server, owner, { name: 'shop' });
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Services' }).click();
    await page.getByText('No services yet').waitFor();
    await page.getByRole('button', { name: 'New service' }).click();
    const form = page.getByRole('form', { name: 'New service' });
    await form.getByLabel('Kind').locator('option', { hasText: 'Redis' }).waitFor({ state: 'attached' });
    const kinds = (await form.getByLabel('Kind').locator('option').allInnerTexts()).map((s) => s.trim());
    assert.deepEqual(kinds.sort(), ['MariaDB', 'PostgreSQL', 'Redis'], 'what the sandbox runtime offers here');
    await form.getByLabel('Kind').selectOption({ label: 'Redis' });
    await form.getByLabel('Name').fill('Bad Name');
    await form.getByRole('button', { name: 'Create service' }).click();
    await form.locator('.field-invalid').getByText(/name/).waitFor();
    await form.getByLabel('Name').fill('cache');
    await form.getByLabel('Memory (MB)').fill('96');
    await form.getByRole('button', { name: 'Create service' }).click();

    await page.getByRole('heading', { name: /cache/, level: 2 }).waitFor();
    const sid = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: /cache/, level: 2 }).getByText('running').waitFor(START);
    const record = (await dash.server.api(owner.token).get(`/api/projects/${project.id}/services/${sid}`)).body.data;
    assert.deepEqual([record.kind, record.status, record.resources.memoryMb], ['redis', 'running', 96]);
    await page.getByText(`${record.internalHost}:6379`).first().waitFor();
    await page.getByRole('region', { name: 'Logs' }).getByText('[berth] ready').waitFor(START);

    const secret = (await dash.server.api(owner.token).get(`/api/projects/${project.id}/services/${sid}/credentials`)).body.data.password as string;
    assert.ok(!(await page.content()).includes(secret), 'the password is not in the page before it is asked for');
    await page.getByRole('button', { name: 'Reveal credentials' }).click();
    const creds = page.getByRole('region', { name: 'Credentials' });
    await creds.getByText(secret, { exact: true }).waitFor();
    await creds.getByText(`redis://default:${secret}@${record.internalHost}:6379/0`, { exact: false }).waitFor();
    await screenshot(page, 'service');
    await creds.getByRole('button', { name: 'Hide' }).click();
    await creds.getByRole('button', { name: 'Reveal credentials' }).waitFor();
    assert.ok(!(await page.content()).includes(secret), 'hidden again');
    const audit = await dash.server.ctx.db.selectFrom('auditEvents').select('action').where('orgId', '=', owner.orgId).execute();
    assert.equal(audit.filter((a) => a.action === 'project.service.credentials_reveal').length, 2, "the test's reveal and the page's");

    await page.getByRole('button', { name: 'Delete…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete cache?' });
    await dialog.getByLabel(/Type/).fill('cache');
    await dialog.getByRole('button', { name: 'Delete service' }).click();
    await page.getByText('No services yet').waitFor(START);
    const left = (await dash.server.api(owner.token).get(`/api/projects/${project.id}/services`)).body.data as Array<{ managed: boolean }>;
    assert.deepEqual(left.filter((s) => s.managed), [], 'gone from the API too');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a member who writes the project, and a member who reads it, are offered no reveal (nor delete); the reader no change at all (at 375 px)', async () => {
    const project = await createProject(dash.server, team.owner, { name: 'team-shop' });
    const created = await dash.server.api(team.owner.token).post(`/api/projects/${project.id}/services`, { kind: 'redis', name: 'sessions' });
    assert.equal(created.status, 201, created.text);
    const sid = created.body.data.id as string;
    await serviceRunning(dash.server, team.owner.token, project.id, sid, START.timeout);
    const reader = await createUser(dash.server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(dash.server, reader, 'project', project.id, ['read']);

    for (const [who, user, writes] of [['member', team.member, true], ['reader', reader, false]] as const) {
      const { context, page } = await openPage(dash.browser, dash.server);
      await signInTo(page, user, team.orgId);
      await page.setViewportSize({ width: 375, height: 780 });
      await page.goto(`/projects/${project.id}/services`);
      await page.getByRole('link', { name: 'sessions' }).click();
      await page.getByRole('heading', { name: /sessions/, level: 2 }).getByText('running').waitFor();
      await page.getByRole('region', { name: 'Logs' }).getByText('[berth] ready').waitFor();
      await assertFitsWidth(page);
      assert.equal(await page.getByRole('button', { name: 'Reveal credentials' }).count(), 0, `${who}: no reveal`);
      assert.equal(await page.getByRole('region', { name: 'Credentials' }).count(), 0, `${who}: no credentials section`);
      assert.equal(await page.getByRole('button', { name: 'Delete…' }).count(), 0, `${who}: no delete`);
      assert.equal(await page.getByRole('button', { name: 'Stop' }).count(), writes ? 1 : 0, `${who}: stop only with write`);
      // The API agrees: the reveal is refused to both.
      assert.equal((await dash.server.api(user.token).get(`/api/projects/${project.id}/services/${sid}/credentials`)).status, 403);
      assert.deepEqual(pageErrors(page), []);
      await context.close();
    }
  });
});
