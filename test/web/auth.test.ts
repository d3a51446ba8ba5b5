/**
 * The dashboard's way in, in a real browser against a real server: sign-in, sign-out, deep links
 * through sign-in, sign-up (open, and refused by invitation-only and closed instances), the
 * invitation link (accept and materialize in one step, decline, the wrong account), keyboard-only
 * sign-in, and the signed-out pages at 375 px.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { randomString } from '../../src/lib/ids.js';
import { assertFitsWidth, browserSuite, launchBrowser, openPage, pageErrors, screenshot, signIn, startDashboardServer, useDashboard } from '../support/browser.js';
import { testClock } from '../support/clock.js';
import { createProject, createTeam, createUser, type TestOrg } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';

const { skip } = browserSuite('web/auth');
const T = { timeout: 15_000 };

const projectsHeading = (page: Page) => page.getByRole('heading', { name: 'Projects', level: 1 });

function noPageErrors(page: Page): void {
  assert.deepEqual(pageErrors(page), [], 'the page threw no uncaught exception');
}

describe('dashboard: signing in and out', { skip }, () => {
  const dash = useDashboard();

  it('a wrong password shows the API error; the right one reaches Projects', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto('/login');
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor(T);
    await page.getByLabel('Email').fill(user.email);
    await screenshot(page, 'sign-in');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor(T);
    assert.match(await alert.innerText(), /could not sign in/i);
    assert.equal(new URL(page.url()).pathname, '/login', 'still on the sign-in page');

    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await projectsHeading(page).waitFor(T);
    assert.equal(new URL(page.url()).pathname, '/');
    noPageErrors(page);
    await context.close();
  });

  it('signing out returns to the sign-in page and the projects are no longer reachable', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor(T);
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.status));
    assert.equal(me, 401, 'the session is over');
    await page.goto('/');
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it('a signed-out deep link goes to sign-in and comes back to it afterwards', async () => {
    const user = await createUser(dash.server);
    const project = await createProject(dash.server, user, { name: 'Deep link target' });
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor(T);
    const at = new URL(page.url());
    assert.equal(at.pathname, '/login');
    assert.equal(at.searchParams.get('next'), `/projects/${project.id}`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /Deep link target/, level: 1 }).waitFor(T);
    assert.equal(new URL(page.url()).pathname, `/projects/${project.id}`);
    noPageErrors(page);
    await context.close();
  });

  it('a signed-in visitor of /login and /signup goes on to the projects', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    for (const path of ['/login', '/signup']) {
      await page.goto(path);
      await projectsHeading(page).waitFor(T);
      assert.equal(new URL(page.url()).pathname, '/');
    }
    noPageErrors(page);
    await context.close();
  });

  it('signs in with the keyboard alone (type, Tab, type, Enter)', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto('/login');
    await page.getByLabel('Email').waitFor(T);
    // The email field has the focus when the page opens.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'email');
    await page.keyboard.type(user.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(user.password);
    await page.keyboard.press('Enter');
    await projectsHeading(page).waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it('sign-up on an open instance lands signed in, and its errors name the field', async () => {
    const email = `new-${randomString(8)}@example.test`;
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto('/login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create an account', level: 1 }).waitFor(T);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    // The API names the password: the message sits under that field, which is marked invalid.
    const password = page.getByLabel('Password');
    await page.getByText('password must be at least 8 characters').waitFor(T);
    assert.equal(await password.getAttribute('aria-invalid'), 'true');

    await password.fill(`pw-${randomString(12)}`);
    await page.getByRole('button', { name: 'Create account' }).click();
    await projectsHeading(page).waitFor(T);
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.json()));
    assert.equal(me.data.user.email, email);
    noPageErrors(page);
    await context.close();
  });

  it('sign-up with an email that already has an account says so under Email', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto('/signup');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(`pw-${randomString(12)}`);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('an account with this email already exists').waitFor(T);
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    noPageErrors(page);
    await context.close();
  });

  it('the sign-in, sign-up and invitation pages fit 375 px', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    for (const [path, heading] of [
      ['/login', 'Sign in'],
      ['/signup', 'Create an account'],
      [`/invite/inv_${randomString(20)}`, 'You are invited'],
    ] as const) {
      await page.goto(path);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor(T);
      await assertFitsWidth(page);
    }
    noPageErrors(page);
    await context.close();
  });
});

describe('dashboard: sign-up refused by the instance', { skip }, () => {
  let invite: TestServer;
  let closed: TestServer;
  let browser: Browser;
  before(async () => {
    [invite, closed, browser] = await Promise.all([startDashboardServer({ env: { BERTH_SIGNUP: 'invite' } }), startDashboardServer({ env: { BERTH_SIGNUP: 'closed' } }), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await invite?.close();
    await closed?.close();
  });

  async function trySignup(server: TestServer, email: string): Promise<Page> {
    const { page } = await openPage(browser, server);
    await page.goto('/signup');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(`pw-${randomString(12)}`);
    await page.getByRole('button', { name: 'Create account' }).click();
    return page;
  }

  it('an invitation-only instance refuses an uninvited email and says it is by invitation only', async () => {
    const page = await trySignup(invite, `stranger-${randomString(6)}@example.test`);
    const alert = page.getByRole('alert');
    await alert.waitFor(T);
    assert.match(await alert.innerText(), /Sign-up here is by invitation only/);
    assert.equal(new URL(page.url()).pathname, '/signup');
    noPageErrors(page);
    await page.context().close();
  });

  it('an invitation-only instance lets an invited email sign up, into the inviting org', async () => {
    const team = await createTeam(invite);
    await createProject(invite, team.owner, { name: 'Team site' });
    const email = `invited-${randomString(6)}@example.test`;
    const res = await invite.api(team.admin.token).post('/api/permissions/invite-with-grants', { email, role: 'member' });
    assert.equal(res.status, 201, res.text);
    const page = await trySignup(invite, email);
    await projectsHeading(page).waitFor(T);
    await page.getByRole('link', { name: 'Team site' }).waitFor(T);
    noPageErrors(page);
    await page.context().close();
  });

  it('a closed instance refuses every sign-up and says it is closed', async () => {
    const page = await trySignup(closed, `anyone-${randomString(6)}@example.test`);
    const alert = page.getByRole('alert');
    await alert.waitFor(T);
    assert.match(await alert.innerText(), /Sign-up is closed on this instance/);
    noPageErrors(page);
    await page.context().close();
  });
});

describe('dashboard: the invitation link', { skip }, () => {
  const clock = testClock();
  const dash = useDashboard({ clock });
  let team: TestOrg;
  let teamProject: { id: string; name: string };
  before(async () => {
    team = await createTeam(dash.server);
    teamProject = await createProject(dash.server, team.owner, { name: 'Team only project' });
    await createProject(dash.server, team.owner, { name: 'Not granted project' });
  });

  /** An admin's invitation of `email` as restricted, with read access to the team project only. */
  async function inviteWithGrant(email: string): Promise<string> {
    const res = await dash.server.api(team.admin.token).post('/api/permissions/invite-with-grants', {
      email,
      role: 'restricted',
      grants: [{ resourceType: 'project', resourceId: teamProject.id, permissions: ['read'] }],
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data.id;
  }

  it('accepting in one step joins the org, materializes the grants and shows its projects', async () => {
    const invitee = await createUser(dash.server);
    const id = await inviteWithGrant(invitee.email);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, invitee);
    await page.goto(`/invite/${id}`);
    await page.getByText(invitee.email).waitFor(T);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await projectsHeading(page).waitFor(T);
    // Restricted: only the granted project shows, which it can read only because the grant was materialized.
    await page.getByRole('link', { name: 'Team only project' }).waitFor(T);
    assert.equal(await page.getByRole('link', { name: 'Not granted project' }).count(), 0);
    const switcher = page.getByLabel('Organization');
    assert.equal(await switcher.inputValue(), team.orgId, 'the session switched to the inviting org');
    const list = await dash.server.api(team.owner.token).get('/api/permissions/invitations?status=all');
    const inv = list.body.data.find((i: { id: string }) => i.id === id);
    assert.equal(inv.status, 'accepted');
    assert.ok(inv.materializedAt, 'materialized');
    const grants = await dash.server.api(team.owner.token).get(`/api/permissions/grants?userId=${invitee.userId}`);
    assert.deepEqual(
      grants.body.data.map((g: { resourceId: string }) => g.resourceId),
      [teamProject.id],
    );
    noPageErrors(page);
    await context.close();
  });

  it('a signed-out invitee is sent through sign-in and comes back to the invitation', async () => {
    const invitee = await createUser(dash.server);
    const id = await inviteWithGrant(invitee.email);
    const { context, page } = await openPage(dash.browser, dash.server);
    await page.goto(`/invite/${id}`);
    await page.getByRole('heading', { name: 'You are invited', level: 1 }).waitFor(T);
    await page.getByRole('link', { name: 'Sign in to accept' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor(T);
    await page.getByLabel('Email').fill(invitee.email);
    await page.getByLabel('Password').fill(invitee.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Accept invitation' }).waitFor(T);
    assert.equal(new URL(page.url()).pathname, `/invite/${id}`);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByRole('link', { name: 'Team only project' }).waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it('an invitation for another email says so in plain words, and an expired one says it expired', async () => {
    const someoneElse = await createUser(dash.server);
    const id = await inviteWithGrant(`other-${randomString(6)}@example.test`);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, someoneElse);
    await page.goto(`/invite/${id}`);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByText('This invitation is for another email address').waitFor(T);
    await page.getByRole('button', { name: 'Sign out and use another account' }).waitFor(T);

    const late = await createUser(dash.server);
    const lateId = await inviteWithGrant(late.email);
    clock.advance(7 * 24 * 3600 * 1000 + 1000); // past the invitation's week
    await page.getByRole('button', { name: 'Sign out and use another account' }).click();
    await page.getByRole('link', { name: 'Sign in to accept' }).waitFor(T);
    await signIn(page, late);
    await page.goto(`/invite/${lateId}`);
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByText('This invitation has expired').waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it('declining asks first, then closes the invitation', async () => {
    const invitee = await createUser(dash.server);
    const id = await inviteWithGrant(invitee.email);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, invitee);
    await page.goto(`/invite/${id}`);
    await page.getByRole('button', { name: 'Decline', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Decline the invitation?' });
    await dialog.waitFor(T);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden', ...T });
    await page.getByRole('button', { name: 'Decline', exact: true }).click();
    await dialog.getByRole('button', { name: 'Decline invitation' }).click();
    await page.getByText('You declined the invitation.').waitFor(T);
    const list = await dash.server.api(team.owner.token).get('/api/permissions/invitations?status=all');
    assert.equal(list.body.data.find((i: { id: string }) => i.id === id).status, 'declined');
    noPageErrors(page);
    await context.close();
  });
});
