/**
 * The org pages in a real browser against a real server: inviting with a grant (and what the
 * invitee then sees), members and their roles, grants, personal access tokens shown once, the audit
 * log with its paging, each page at 375 px, and a form driven by the keyboard alone.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { randomString } from '../../src/lib/ids.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createProject, createTeam, createToken, createUser, type TestOrg, type TestProject, type TestUser } from '../support/factories.js';

const { skip } = browserSuite('web/org');
const T = { timeout: 15_000 };

const heading = (page: Page, name: string) => page.getByRole('heading', { name, level: 1 });

function noPageErrors(page: Page): void {
  assert.deepEqual(pageErrors(page), [], 'the page threw no uncaught exception');
}

/** Signs in through the dashboard and makes `orgId` the active org (through the org switcher) if it is not. */
async function signInTo(page: Page, user: Pick<TestUser, 'email' | 'password'>, orgId: string): Promise<void> {
  await signIn(page, user);
  const switcher = page.getByLabel('Organization');
  if ((await switcher.inputValue()) !== orgId) {
    await switcher.selectOption(orgId);
    await page.waitForFunction((id) => (document.querySelector('select[aria-label="Organization"]') as HTMLSelectElement | null)?.value === id, orgId, T);
    await heading(page, 'Projects').waitFor(T);
  }
}

describe('dashboard: the org pages', { skip }, () => {
  const dash = useDashboard();
  let team: TestOrg;
  let alpha: TestProject;
  let beta: TestProject;
  const inviteeEmail = `new-${randomString(6)}@example.test`;

  before(async () => {
    team = await createTeam(dash.server);
    alpha = await createProject(dash.server, team.owner, { name: 'alpha-site' });
    beta = await createProject(dash.server, team.owner, { name: 'beta-api' });
  });

  it('an admin invites an email with read on one of two projects; once accepted the invitee sees only that project, and the admin sees the new member', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dash.server.url });
    await signInTo(page, team.admin, team.orgId);
    await page.goto('/org/invitations');
    await heading(page, 'Invitations').waitFor(T);

    // A wrong address: the API's error shows under the field it names.
    const email = page.getByLabel('Email');
    await email.fill('not-an-address');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('email is not a valid address').waitFor(T);
    assert.equal(await email.getAttribute('aria-invalid'), 'true', 'the Email field is marked invalid');

    await email.fill(inviteeEmail);
    await page.getByRole('button', { name: 'Add a grant' }).click();
    // A grant row without its resource: the error shows under that row's Resource.
    const resource = page.getByLabel('Resource', { exact: true });
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('grants.0.resourceId must not be empty').waitFor(T);
    assert.equal(await resource.getAttribute('aria-invalid'), 'true', 'the Resource field is marked invalid');
    await resource.selectOption(alpha.id);
    assert.equal(await page.getByRole('checkbox', { name: 'read' }).isChecked(), true, 'read is the default permission');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const sent = page.locator('.notice-ok');
    await sent.waitFor(T);
    assert.match(await sent.innerText(), new RegExp(`Invited ${inviteeEmail.replace(/[.]/g, '\\.')} as restricted with 1 grant`));
    const link = await sent.locator('code').innerText();
    const id = link.split('/invite/')[1]!;
    assert.equal(link, `${dash.server.url}/invite/${id}`);

    // The pending invitation is listed with its link, which copies.
    const row = page.getByRole('row').filter({ hasText: inviteeEmail });
    await row.waitFor(T);
    assert.match(await row.innerText(), /restricted[\s\S]*pending[\s\S]*alpha-site: read/);
    await row.getByRole('button', { name: 'Copy link' }).click();
    await row.getByRole('button', { name: 'Copied' }).waitFor(T);
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link);
    await screenshot(page, 'invitations');

    // The invitee (an account with that email) accepts and materializes through the API.
    const invitee = await createUser(dash.server, { email: inviteeEmail });
    const api = dash.server.api(invitee.token);
    const accepted = await api.post(`/api/permissions/invitations/${id}/accept`);
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.data.status, 'accepted');
    const materialized = await api.post(`/api/permissions/invitations/${id}/materialize`);
    assert.equal(materialized.status, 200, materialized.text);
    assert.equal(materialized.body.data.materialized, 1);

    // They sign in through the dashboard and, in the team org, see alpha-site and not beta-api.
    const other = await openPage(dash.browser, dash.server);
    await signInTo(other.page, invitee, team.orgId);
    await other.page.getByText(alpha.name, { exact: true }).first().waitFor(T);
    assert.equal(await other.page.getByText(beta.name).count(), 0, 'the project without a grant is not listed');
    assert.equal(await other.page.getByRole('link', { name: 'New project' }).count(), 0, 'a restricted member is not offered what it cannot do');
    noPageErrors(other.page);
    await other.context.close();

    // The admin sees the new member, restricted, with the way to their grants.
    await page.goto('/org/members');
    await heading(page, 'Members').waitFor(T);
    const member = page.getByRole('row').filter({ hasText: inviteeEmail });
    await member.waitFor(T);
    assert.equal(await member.getByLabel(`Role of ${inviteeEmail}`).inputValue(), 'restricted');
    await screenshot(page, 'members');
    await member.getByRole('link', { name: /^Grants of / }).click();
    await heading(page, 'Grants').waitFor(T);
    const grants = page.getByRole('region', { name: `Grants of ${inviteeEmail}` });
    await grants.getByRole('cell', { name: 'alpha-site', exact: true }).waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it("changing a member's role saves it; a change the API refuses goes back and shows its reason", async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.admin, team.orgId);
    await page.goto('/org/members');
    await heading(page, 'Members').waitFor(T);

    const role = page.getByLabel(`Role of ${team.member.email}`);
    const patched = page.waitForResponse((r) => r.url().includes(`/api/permissions/members/${team.member.userId}`) && r.request().method() === 'PATCH');
    await role.selectOption('restricted');
    assert.equal((await patched).status(), 200);
    const members = await dash.server.api(team.owner.token).get('/api/permissions/members');
    assert.equal(members.body.data.find((m: { userId: string }) => m.userId === team.member.userId).role, 'restricted');

    // An admin cannot change an owner: the select returns to owner and says why.
    const ownerRole = page.getByLabel(`Role of ${team.owner.email}`);
    await ownerRole.selectOption('member');
    await page.getByText('only an owner can change the role of an owner').waitFor(T);
    assert.equal(await ownerRole.inputValue(), 'owner', 'rolled back');
    assert.equal(await ownerRole.getAttribute('aria-invalid'), 'true');

    // Removing asks first; Cancel keeps the member, Remove removes them.
    const leaver = await createUser(dash.server, { orgId: team.orgId, role: 'member' });
    await page.reload();
    const row = page.getByRole('row').filter({ hasText: leaver.email });
    await row.getByRole('button', { name: `Remove ${leaver.email}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Their grants in it are deleted').waitFor(T);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden', ...T });
    await row.getByRole('button', { name: `Remove ${leaver.email}` }).click();
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await row.waitFor({ state: 'detached', ...T });
    const after = await dash.server.api(team.owner.token).get('/api/permissions/members');
    assert.ok(!after.body.data.some((m: { userId: string }) => m.userId === leaver.userId), 'removed on the server');
    noPageErrors(page);
    await context.close();
  });

  it('grants: add one with POST, replace the set with PUT, delete one after confirming', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.admin, team.orgId);
    await page.goto(`/org/grants?user=${team.restricted.userId}`);
    await heading(page, 'Grants').waitFor(T);

    const add = page.getByRole('form', { name: 'Add a grant' });
    assert.equal(await add.getByLabel('Member').inputValue(), team.restricted.userId, 'the member of the link is picked');
    await add.getByLabel('Resource', { exact: true }).selectOption(beta.id);
    await add.getByRole('checkbox', { name: 'write' }).check();
    await add.getByRole('button', { name: 'Add grant' }).click();
    const section = page.getByRole('region', { name: `Grants of ${team.restricted.email}` });
    await section.getByRole('row').filter({ hasText: 'beta-api' }).filter({ hasText: 'read, write' }).waitFor(T);

    // Replace the whole set: beta-api read only, plus the audit log.
    await section.getByRole('button', { name: `Edit every grant of ${team.restricted.email}` }).click();
    await section.getByRole('checkbox', { name: 'write' }).uncheck();
    await section.getByRole('button', { name: 'Add a grant' }).click();
    await section.getByLabel('Resource type').nth(1).selectOption('audit');
    await section.getByRole('button', { name: 'Save grants' }).click();
    await section.getByRole('row').filter({ hasText: 'Audit log' }).waitFor(T);
    const set = await dash.server.api(team.owner.token).get(`/api/permissions/grants?userId=${team.restricted.userId}`);
    assert.deepEqual(
      set.body.data.map((g: { resourceType: string; resourceId: string; permissions: string[] }) => `${g.resourceType}:${g.resourceId}:${g.permissions.join('+')}`).sort(),
      ['audit:*:read', `project:${beta.id}:read`],
    );

    // Delete one, confirmed.
    const betaRow = section.getByRole('row').filter({ hasText: 'beta-api' });
    await betaRow.getByRole('button', { name: /^Delete the grant/ }).click();
    await page.getByRole('dialog').getByText('loses read on project').waitFor(T);
    await page.getByRole('dialog').getByRole('button', { name: 'Delete grant' }).click();
    await betaRow.waitFor({ state: 'detached', ...T });
    noPageErrors(page);
    await context.close();
  });

  it('a new token is shown once with a warning; after a reload it is gone from the page; revoking asks first and ends it', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.admin, team.orgId);
    await page.goto('/account/tokens');
    await heading(page, 'Access tokens').waitFor(T);
    await page.getByLabel('Name', { exact: true }).fill('CI deploys');
    await page.getByLabel('Expires after').selectOption({ label: '30 days' });
    await page.getByLabel('Only the scopes chosen below').check();
    await page.getByLabel('Projects', { exact: true }).selectOption('read');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = page.getByTestId('new-token');
    await shown.waitFor(T);
    const token = await shown.innerText();
    assert.match(await page.getByText('it will not be shown again').innerText(), /Copy it now/);
    assert.equal((await dash.server.api(token).get('/api/projects')).status, 200, 'the token works');
    assert.equal((await dash.server.api(token).post('/api/projects', { name: 'nope' })).status, 403, 'within its scopes only');
    const row = page.getByRole('row').filter({ hasText: 'CI deploys' });
    assert.match(await row.innerText(), /project:read[\s\S]*in 30 days[\s\S]*active/);
    await screenshot(page, 'tokens');

    await page.reload();
    await row.waitFor(T);
    assert.equal(await page.getByTestId('new-token').count(), 0);
    assert.ok(!(await page.content()).includes(token), 'the token is nowhere on the reloaded page');

    await row.getByRole('button', { name: 'Revoke the token CI deploys' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('refused from its next request').waitFor(T);
    const revoked = page.waitForResponse((r) => r.url().includes('/api/auth/tokens/') && r.request().method() === 'DELETE', T);
    await dialog.getByRole('button', { name: 'Revoke token' }).click();
    await row.getByText('revoked').waitFor(T); // at once (optimistic), kept once the server answers
    assert.equal((await revoked).status(), 200);
    await page.getByText('Token “CI deploys” revoked').waitFor(T);
    assert.equal(await row.getByRole('button', { name: /^Revoke/ }).count(), 0);
    assert.equal((await dash.server.api(token).get('/api/projects')).status, 401, 'revoked at once');
    noPageErrors(page);
    await context.close();
  });

  it('the audit log shows the invitation newest first and pages back with "Load more"', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signInTo(page, team.admin, team.orgId);
    await page.goto('/org/audit');
    await heading(page, 'Audit log').waitFor(T);
    // What the earlier tests did, newest first: the revoked token on top.
    const first = page.locator('tbody tr').first();
    await first.waitFor(T);
    assert.match(await first.innerText(), /token\.revoke[\s\S]*CI deploys/);
    await screenshot(page, 'audit-log');

    // Enough events for more than one page of 25.
    for (let i = 0; i < 26; i++) await createToken(dash.server, team.owner, { name: `bulk ${i}` });
    await page.reload();
    await heading(page, 'Audit log').waitFor(T);
    await page.getByLabel('Events per page').selectOption('25');
    const rows = page.locator('tbody tr');
    await page.locator('tbody code', { hasText: 'token.create' }).first().waitFor(T);
    assert.equal(await rows.count(), 25);
    const times = await page.locator('tbody time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')!));
    assert.deepEqual([...times].sort().reverse(), times, 'newest first');

    await page.getByRole('button', { name: 'Load more' }).click();
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length > 25, undefined, T);
    const invitation = page.getByRole('row').filter({ hasText: 'invitation.create' }).filter({ hasText: inviteeEmail });
    while (!(await invitation.count()) && (await page.getByRole('button', { name: 'Load more' }).count())) {
      const n = await rows.count();
      await page.getByRole('button', { name: 'Load more' }).click();
      await page.waitForFunction((k) => document.querySelectorAll('tbody tr').length > k, n, T);
    }
    assert.match(await invitation.innerText(), /role: restricted/);
    // Narrow to one action among the loaded events.
    await page.getByLabel('Action', { exact: true }).selectOption('invitation.create');
    await invitation.waitFor(T);
    assert.equal(await page.getByRole('row').filter({ hasText: 'token.create' }).count(), 0);
    noPageErrors(page);
    await context.close();
  });

  it('every org page is readable at 375 px, and a personal org is told that members live in team orgs', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signInTo(page, team.admin, team.orgId);
    for (const [path, title] of [
      ['/org/members', 'Members'],
      ['/org/invitations', 'Invitations'],
      ['/org/grants', 'Grants'],
      ['/org/audit', 'Audit log'],
      ['/account/tokens', 'Access tokens'],
    ] as const) {
      await page.goto(path);
      await heading(page, title).waitFor(T);
      await page.locator('main table, main .empty').first().waitFor(T);
      await assertFitsWidth(page);
    }
    // The invite form with a grant row open, at 375 px.
    await page.goto('/org/invitations');
    await page.getByRole('button', { name: 'Add a grant' }).click();
    await assertFitsWidth(page);
    noPageErrors(page);
    await context.close();

    const solo = await createUser(dash.server);
    const phone = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(phone.page, solo);
    await phone.page.goto('/org/members');
    await heading(phone.page, 'Members').waitFor(T);
    await phone.page.getByText('Members, invitations and grants live in team organizations').waitFor(T);
    assert.equal(await phone.page.getByRole('link', { name: 'Create a team organization' }).getAttribute('href'), '/org/new');
    await assertFitsWidth(phone.page);
    noPageErrors(phone.page);
    await phone.context.close();
  });

  it('the token form works with the keyboard alone', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto('/account/tokens');
    await heading(page, 'Access tokens').waitFor(T);
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') || document.activeElement?.textContent?.trim() || document.activeElement?.id || '');
    // Skip link, then into the page: the first control is the token's name.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    await page.keyboard.type('laptop CLI');
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'laptop CLI');
    await page.keyboard.press('Tab'); // organization
    await page.keyboard.press('Tab'); // expiry: 90 days -> 7 days
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.getByLabel('Expires after').inputValue(), '7');
    await page.keyboard.press('Tab'); // access: everything -> only the scopes
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.getByLabel('Only the scopes chosen below').isChecked(), true);
    await page.keyboard.press('Tab'); // Projects scope: -> list -> read
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.getByLabel('Projects', { exact: true }).inputValue(), 'read');
    for (let i = 0; i < 12 && (await focused()) !== 'Create token'; i++) await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Create token');
    await page.keyboard.press('Enter');
    await page.getByTestId('new-token').waitFor(T);
    const row = page.getByRole('row').filter({ hasText: 'laptop CLI' });
    assert.match(await row.innerText(), /project:read[\s\S]*in 7 days/);
    noPageErrors(page);
    await context.close();
  });
});
