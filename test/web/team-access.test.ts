/**
 * A team as its members see it in a real browser: the invitation link names the organization and
 * who invited, signed out and signed in; a member is shown only the actions its role and grants
 * allow (New project, the org's admin pages, a project's Settings tab, deleting a project).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { randomString } from '../../src/lib/ids.js';
import { browserSuite, openPage, pageErrors, signIn, useDashboard } from '../support/browser.js';
import { createDestination, createGrant, createProject, createTeam, createUser, type TestOrg, type TestProject, type TestUser } from '../support/factories.js';

const { skip } = browserSuite('web/team-access');
const T = { timeout: 15_000 };

const ADMIN_PAGES = ['Members', 'Invitations', 'Grants', 'Notifications', 'Audit log'];

/** Signs in and makes `orgId` the active org through the org switcher. */
async function signInTo(page: Page, user: Pick<TestUser, 'email' | 'password'>, orgId: string): Promise<void> {
  await signIn(page, user);
  const switcher = page.getByLabel('Organization');
  if ((await switcher.inputValue()) !== orgId) {
    await switcher.selectOption(orgId);
    await page.waitForFunction((id) => (document.querySelector('select[aria-label="Organization"]') as HTMLSelectElement | null)?.value === id, orgId, T);
  }
  await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor(T);
}

const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });
const tabs = (page: Page) => page.getByRole('navigation', { name: 'Project' });

async function navLinks(page: Page): Promise<string[]> {
  return (await nav(page).getByRole('link').allInnerTexts()).map((s) => s.trim());
}

describe('dashboard: invitations and what each member is shown', { skip }, () => {
  const dash = useDashboard();
  let team: TestOrg;
  let orgName: string;
  let readOnly: TestProject;
  let writable: TestProject;

  before(async () => {
    team = await createTeam(dash.server);
    orgName = (await dash.server.api(team.owner.token).get('/api/permissions/org-meta')).body.data.name;
    readOnly = await createProject(dash.server, team.owner, { name: 'read-only-site' });
    writable = await createProject(dash.server, team.owner, { name: 'writable-site' });
    await createGrant(dash.server, team.restricted, 'project', readOnly.id, ['read']);
    await createGrant(dash.server, team.restricted, 'project', writable.id, ['read', 'write']);
  });

  it('the invitation page names the organization and who invited, before and after signing in', async () => {
    const email = `invitee-${randomString(6)}@example.test`;
    const sent = await dash.server.api(team.admin.token).post('/api/permissions/invite-with-grants', { email, role: 'member' });
    assert.equal(sent.status, 201, sent.text);
    const admin = (await dash.server.api(team.admin.token).get('/api/auth/me')).body.data.user;
    const who = admin.name ? `${admin.name} (${team.admin.email})` : team.admin.email;
    const line = `${who} invited you to join ${orgName} on Berth as a member.`;

    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto(`/invite/${sent.body.data.id}`);
    const summary = page.locator('.invite-summary');
    await summary.waitFor(T);
    assert.equal((await summary.innerText()).trim(), line, 'signed out');
    await page.getByRole('link', { name: 'Sign in to accept' }).waitFor(T);

    const invitee = await createUser(dash.server, { email });
    await signIn(page, invitee);
    await page.goto(`/invite/${sent.body.data.id}`);
    await page.getByRole('button', { name: 'Accept invitation' }).waitFor(T);
    assert.equal((await summary.innerText()).trim(), line, 'signed in');

    // A link to an invitation that does not exist says so at once.
    await page.goto(`/invite/inv_${randomString(20)}`);
    await page.getByText('This invitation does not exist').waitFor(T);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a restricted member sees no New project, no org admin pages, no Settings on a project it only reads, and no Delete where it writes', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.restricted, team.orgId);
    await page.getByRole('link', { name: readOnly.name }).first().waitFor(T);
    assert.equal(await page.getByRole('link', { name: 'New project' }).count(), 0, 'no New project without a * project grant');
    const links = await navLinks(page);
    for (const label of [...ADMIN_PAGES, 'Backup destinations']) assert.ok(!links.includes(label), `no ${label} in the navigation: ${links.join(', ')}`);
    assert.ok(links.includes('Projects') && links.includes('Access tokens'), 'its own pages stay');

    await page.goto(`/projects/${readOnly.id}`);
    await tabs(page).getByRole('link', { name: 'Overview' }).waitFor(T);
    assert.equal(await tabs(page).getByRole('link', { name: 'Settings' }).count(), 0, 'no Settings tab with read only');
    // Reached by its address, the settings page says why instead of offering forms the API refuses.
    await page.goto(`/projects/${readOnly.id}/settings`);
    await page.getByText('does not include changing its settings').waitFor(T);
    assert.equal(await page.getByRole('button', { name: 'Delete project' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Disable project' }).count(), 0);

    await page.goto(`/projects/${writable.id}`);
    await tabs(page).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Status' }).waitFor(T);
    assert.equal(await page.getByRole('button', { name: 'Delete project' }).count(), 0, 'deleting needs admin on the project');

    // A * project grant with write is what lets a restricted member create projects.
    await createGrant(dash.server, team.restricted, 'project', '*', ['read', 'write']);
    await page.goto('/');
    await page.getByRole('link', { name: 'New project' }).waitFor(T);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a member who only reads a project is shown its deployments, variables, domains and rules, but no Redeploy and no control to change them', async () => {
    const owner = dash.server.api(team.owner.token);
    for (const p of [readOnly, writable]) {
      assert.equal((await owner.patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts: [{ key: 'GREETING', value: 'hello', isSecret: false }, { key: 'TOKEN', value: 's3cret-value', isSecret: true }] })).status, 200);
      assert.equal((await owner.post(`/api/projects/${p.id}/route-rules`, { kind: 'rate-limit', limit: 10, windowSeconds: 1 })).status, 201);
      assert.equal((await owner.post(`/api/projects/${p.id}/domains`, { domain: `${p.name}-${randomString(6)}.example.test` })).status, 201);
    }
    // A restricted member of its own (another test gives team.restricted a * grant).
    const reader = await createUser(dash.server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(dash.server, reader, 'project', readOnly.id, ['read']);
    await createGrant(dash.server, reader, 'project', writable.id, ['read', 'write']);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, reader, team.orgId);
    const count = (name: string) => page.getByRole('button', { name, exact: true }).count();

    await page.goto(`/projects/${readOnly.id}`);
    await tabs(page).getByRole('link', { name: 'Overview' }).waitFor(T);
    await page.getByRole('link', { name: 'All deployments' }).waitFor(T);
    assert.equal(await count('Redeploy'), 0, 'no Redeploy on the overview');
    await page.goto(`/projects/${readOnly.id}/deployments`);
    await page.getByRole('heading', { name: 'Deployments' }).waitFor(T);
    assert.equal(await count('Redeploy'), 0, 'no Redeploy on the deployments page');

    await page.goto(`/projects/${readOnly.id}/env`);
    await page.getByText('GREETING').waitFor(T);
    assert.equal(await page.getByText('s3cret-value').count(), 0, 'a secret stays masked');
    for (const name of ['Add variable', 'Save changes', 'Redeploy now', 'Remove GREETING']) assert.equal(await count(name), 0, `no ${name}`);

    await page.goto(`/projects/${readOnly.id}/domains`);
    await page.getByRole('heading', { name: 'Custom domains' }).waitFor(T);
    await page.locator('.domain-name').first().waitFor(T);
    assert.equal(await count('Add domain'), 0, 'no Add domain');
    assert.equal(await page.getByRole('button', { name: /^(Verify|Remove) / }).count(), 0, 'no Verify or Remove');
    assert.equal(await page.getByLabel('Redirect plain HTTP to HTTPS').isDisabled(), true, 'the HTTPS switches are shown, not changeable');

    await page.goto(`/projects/${readOnly.id}/rules`);
    await page.getByText('10 requests per 1 s').waitFor(T);
    assert.equal(await count('Add rule'), 0, 'no Add rule');
    assert.equal(await page.getByRole('button', { name: /^(Edit|Delete) / }).count(), 0, 'no Edit or Delete');
    assert.equal(await page.getByRole('checkbox').count(), 0, 'no rule switch');

    await page.goto(`/projects/${readOnly.id}/previews`);
    await page.getByRole('heading', { name: 'Previews' }).waitFor(T);
    assert.equal(await count('Create preview'), 0, 'no Create preview');
    // Backup policies and runs are read and changed with write on the project: no Backups tab.
    assert.equal(await tabs(page).getByRole('link', { name: 'Backups' }).count(), 0, 'no Backups tab');

    // The same pages offer every control on the project it writes.
    await page.goto(`/projects/${writable.id}/env`);
    await page.getByRole('button', { name: 'Add variable' }).waitFor(T);
    await page.goto(`/projects/${writable.id}/rules`);
    await page.getByRole('button', { name: 'Add rule' }).waitFor(T);
    await page.goto(`/projects/${writable.id}/deployments`);
    await page.getByRole('button', { name: 'Redeploy', exact: true }).waitFor(T);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a member creates projects and changes settings but is not offered the org admin pages or deleting a project; an admin is', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.member, team.orgId);
    await page.getByRole('link', { name: 'New project' }).waitFor(T);
    const links = await navLinks(page);
    for (const label of ADMIN_PAGES) assert.ok(!links.includes(label), `no ${label} for a member: ${links.join(', ')}`);
    assert.ok(links.includes('Backup destinations'), 'a member reads the destinations');
    await createDestination(dash.server, team.owner, { name: 'nightly' });
    await page.goto('/backups/destinations');
    await page.getByRole('rowheader', { name: 'nightly' }).waitFor(T);
    for (const name of ['New destination', 'Test nightly', 'Edit nightly', 'Delete nightly']) assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, `a member is not offered ${name}`);
    await page.goto(`/projects/${readOnly.id}/settings`);
    await page.getByRole('heading', { name: 'Status' }).waitFor(T);
    assert.equal(await tabs(page).getByRole('link', { name: 'Settings' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Delete project' }).count(), 0);
    await context.close();

    const other = await openPage(dash.browser, dash.server);
    await signInTo(other.page, team.admin, team.orgId);
    const adminLinks = await navLinks(other.page);
    for (const label of ADMIN_PAGES) assert.ok(adminLinks.includes(label), `${label} for an admin`);
    await other.page.goto(`/projects/${readOnly.id}/settings`);
    await other.page.getByRole('button', { name: 'Delete project' }).waitFor(T);
    assert.deepEqual(pageErrors(other.page), []);
    await other.context.close();
  });
});
