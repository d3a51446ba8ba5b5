/**
 * The projects list, a project's overview, the org switcher and a new team org, in a real browser
 * against a real server (with its jobs worker: the overview's project is really built and run from
 * an uploaded folder).
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import * as tar from 'tar';
import { randomString } from '../../src/lib/ids.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createDeployment, createProject, createTeam, createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { waitFor, waitForDeployment } from '../support/wait.js';
import { edgeRequest } from '../support/http.js';

const { skip } = browserSuite('web/projects');
const T = { timeout: 15_000 };

function noPageErrors(page: Page): void {
  assert.deepEqual(pageErrors(page), [], 'the page threw no uncaught exception');
}

describe('dashboard: projects and their overview', { skip }, () => {
  const dash = useDashboard({ background: true });
  let root: string;
  let owner: TestUser;
  /** A project built and running from an uploaded folder. */
  let live: { id: string; name: string; deploymentId: string };

  /** Uploads a tiny Node app as a new upload session of `user`; answers the session's id. */
  async function upload(user: TestUser, version: string): Promise<string> {
    const dir = writeTinyApp(path.join(root, version), { version });
    const file = path.join(root, `${version}.tgz`);
    tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['server.js', 'package.json']);
    const s = await dash.server.api(user.token).post('/api/projects/folder/session', { name: 'uploaded' });
    assert.equal(s.status, 201, s.text);
    const { url, method, headers, sessionId } = s.body.data;
    const res = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
    assert.ok(res.status < 300, await res.text());
    return sessionId;
  }

  before(async () => {
    root = tempDir('berth-web-projects-');
    owner = await createUser(dash.server);
    const api = dash.server.api(owner.token);
    const p = await api.post('/api/projects', { name: 'Storefront' });
    assert.equal(p.status, 201, p.text);
    const d = await api.post('/api/deployments', { projectId: p.body.data.id, sessionId: await upload(owner, 'v1') });
    assert.equal(d.status, 202, d.text);
    const done = await waitForDeployment(api, d.body.data.id, 30_000);
    assert.equal(done.status, 'ready', done.error);
    live = { id: p.body.data.id, name: 'Storefront', deploymentId: d.body.data.id };
    // Neighbours with recorded deployments (no build), so the list reads like a real one.
    const api2 = await createProject(dash.server, owner, { name: 'Billing API' });
    await createDeployment(dash.server, api2, { commit: 'a1b2c3d4e5f6a7b8', ref: 'main', trigger: 'push' });
    const docs = await createProject(dash.server, owner, { name: 'Docs site' });
    await createDeployment(dash.server, docs, { status: 'failed' });
    await createProject(dash.server, owner, { name: 'Marketing preview' });
  });
  after(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('the projects list shows each project with its status, URL and last deployment', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    const card = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Storefront', exact: true }) });
    await card.waitFor(T);
    await card.getByText('enabled').waitFor(T);
    await card.getByText('ready', { exact: true }).waitFor(T);
    assert.match(await card.innerText(), /storefront/i);
    const failed = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Docs site' }) });
    await failed.getByText('failed').waitFor(T);
    const never = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Marketing preview' }) });
    await never.getByText('never deployed').waitFor(T);
    assert.equal(await page.getByRole('listitem').count(), 4);
    await screenshot(page, 'projects');
    noPageErrors(page);
    await context.close();
  });

  it('the filter narrows the list and says when nothing matches', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.getByRole('link', { name: 'Billing API' }).waitFor(T);
    const filter = page.getByLabel('Filter projects');
    await filter.fill('bill');
    await page.getByRole('link', { name: 'Storefront', exact: true }).waitFor({ state: 'detached', ...T });
    assert.equal(await page.getByRole('listitem').count(), 1);
    await filter.fill('zzz-nothing');
    await page.getByText('No project matches').waitFor(T);
    await page.getByRole('button', { name: 'Clear the filter' }).click();
    await page.getByRole('link', { name: 'Storefront', exact: true }).waitFor(T);
    noPageErrors(page);
    await context.close();
  });

  it('an org without projects leads to New project', async () => {
    const fresh = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, fresh);
    await page.getByText('No projects yet').waitFor(T);
    await page.getByRole('link', { name: 'Create your first project' }).click();
    await page.waitForURL((u) => u.pathname === '/new', T);
    noPageErrors(page);
    await context.close();
  });

  it('the overview shows the status, URLs, current deployment, runtime state and source', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.getByRole('link', { name: 'Storefront', exact: true }).click();
    await page.getByRole('heading', { name: /Storefront/, level: 1 }).waitFor(T);
    for (const h of ['Status', 'URLs', 'Current deployment', 'Source', 'Quick actions']) await page.getByRole('heading', { name: h, level: 2 }).waitFor(T);
    const status = page.getByRole('region', { name: 'Status' });
    await status.getByText('running').waitFor(T);
    const info = (await dash.server.api(owner.token).get(`/api/projects/${live.id}/info`)).body.data;
    assert.match(await status.innerText(), new RegExp(`Port\\s+${info.runtime.port}`));
    await page.getByRole('link', { name: info.runtime.url }).waitFor(T);
    const current = page.getByRole('region', { name: 'Current deployment' });
    await current.getByRole('link', { name: live.deploymentId }).waitFor(T);
    await current.getByText('ready', { exact: true }).waitFor(T);
    await page.getByRole('region', { name: 'Source' }).getByText('Upload').waitFor(T);
    await screenshot(page, 'project-overview');
    await current.getByRole('link', { name: live.deploymentId }).click();
    await page.waitForURL((u) => u.pathname === `/projects/${live.id}/deployments/${live.deploymentId}`, T);
    noPageErrors(page);
    await context.close();
  });

  it("the project's domain links (card, header, free domain) carry the edge's port and open the app", async () => {
    const info = (await dash.server.api(owner.token).get(`/api/projects/${live.id}/info`)).body.data;
    const edge = new URL(info.runtime.url);
    assert.ok(edge.port !== '', `the test edge listens on a port other than 80 (${info.runtime.url})`);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    const card = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Storefront', exact: true }) });
    const cardLink = card.getByRole('link', { name: edge.hostname });
    await cardLink.waitFor(T);
    assert.equal(await cardLink.getAttribute('href'), info.runtime.url, 'the card links where "Open the app" does');
    await page.getByRole('link', { name: 'Storefront', exact: true }).click();
    const header = page.locator('.project-head').getByRole('link', { name: edge.hostname });
    await header.waitFor(T);
    assert.equal(await header.getAttribute('href'), info.runtime.url, 'the header links where "Open the app" does');
    await page.getByRole('link', { name: 'Domains', exact: true }).click();
    await page.getByRole('heading', { name: 'Domains', level: 2 }).waitFor(T);
    const served = page.getByRole('definition').getByRole('link', { name: edge.hostname });
    assert.equal(await served.first().getAttribute('href'), info.runtime.url);
    // The link really opens the app: Chromium resolves *.localhost to loopback, the edge answers on its port.
    const app = await context.newPage();
    const res = await app.goto(info.runtime.url);
    assert.equal(res?.status(), 200);
    assert.match(await app.innerText('body'), /v\d/);
    noPageErrors(page);
    await context.close();
  });

  it('Redeploy starts a deployment and the overview follows it until it is ready', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.goto(`/projects/${live.id}`);
    const current = page.getByRole('region', { name: 'Current deployment' });
    await current.getByRole('link', { name: live.deploymentId }).waitFor(T);
    await page.getByRole('button', { name: 'Redeploy' }).click();
    const follow = page.getByRole('link', { name: 'Follow the build log of the new deployment' });
    await follow.waitFor(T);
    const href = (await follow.getAttribute('href'))!;
    const newId = href.split('/').pop()!;
    assert.notEqual(newId, live.deploymentId);
    // The new deployment leads at once, and the page refreshes itself (no reload) until it is ready.
    await current.getByRole('link', { name: newId }).waitFor(T);
    // While it builds, the earlier release is said to be still serving.
    await current.getByText('Still serving the earlier release').waitFor(T);
    await current.getByText('ready', { exact: true }).waitFor({ timeout: 40_000 });
    await current.getByText('serving', { exact: true }).waitFor(T);
    assert.equal(await current.getByText('Still serving the earlier release').count(), 0);
    const done = await waitForDeployment(dash.server.api(owner.token), newId, 5_000);
    assert.equal(done.status, 'ready');
    live.deploymentId = newId;
    noPageErrors(page);
    await context.close();
  });

  it('the projects list and the overview fit 375 px', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(page, owner);
    await page.getByRole('link', { name: 'Storefront', exact: true }).waitFor(T);
    await assertFitsWidth(page);
    await page.goto(`/projects/${live.id}`);
    await page.getByRole('region', { name: 'Current deployment' }).getByRole('link', { name: /^dpl_/ }).first().waitFor(T);
    await assertFitsWidth(page);
    noPageErrors(page);
    await context.close();
  });

  it('a degraded app shows the state and its reason on the overview', async () => {
    const api = dash.server.api(owner.token);
    const edge = new URL((await api.get(`/api/projects/${live.id}/info`)).body.data.runtime.url);
    // The app exits on /crash and the supervisor restarts it: 5 crash restarts make it degraded.
    await waitFor(
      async () => {
        const state = (await api.get(`/api/projects/${live.id}/info`)).body.data.runtime.state;
        if (state === 'running') await edgeRequest(Number(edge.port), edge.hostname, '/crash').catch(() => null);
        return state === 'degraded';
      },
      'five crash restarts to make the app degraded',
      60_000,
      200,
    );
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.goto(`/projects/${live.id}`);
    const status = page.getByRole('region', { name: 'Status' });
    await status.getByText('degraded', { exact: true }).waitFor(T);
    await status.getByText(/restarted 5 times in 10 minutes/).waitFor(T);
    noPageErrors(page);
    await context.close();
  });
});

describe('dashboard: organizations', { skip }, () => {
  const dash = useDashboard();

  it('the org switcher switches the projects list', async () => {
    const team = await createTeam(dash.server);
    await createProject(dash.server, team.owner, { name: 'Team dashboard' });
    const user = await createUser(dash.server);
    await createProject(dash.server, user, { name: 'My side project' });
    await createUser(dash.server, { email: user.email, orgId: team.orgId, role: 'member' });
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    const switcher = page.getByLabel('Organization');
    const mine = page.getByRole('link', { name: 'My side project' });
    const theirs = page.getByRole('link', { name: 'Team dashboard' });
    const start = await switcher.inputValue();
    const other = start === team.orgId ? user.orgId : team.orgId;
    await (start === team.orgId ? theirs : mine).waitFor(T);
    await switcher.selectOption(other);
    await (other === team.orgId ? theirs : mine).waitFor(T);
    await (other === team.orgId ? mine : theirs).waitFor({ state: 'detached', ...T });
    assert.equal(await switcher.inputValue(), other);
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.json()));
    assert.equal(me.data.org.id, other, 'the session itself switched');
    noPageErrors(page);
    await context.close();
  });

  it('creates a team organization with the keyboard and switches to it', async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.getByRole('link', { name: 'New organization' }).click();
    await page.getByRole('heading', { name: 'New organization', level: 1 }).waitFor(T);
    // An empty name is refused by the API, which names the field.
    await page.getByLabel('Organization name').focus();
    await page.keyboard.press('Enter');
    const name = page.getByLabel('Organization name');
    await page.waitForFunction(() => document.querySelector('input[aria-invalid="true"]') !== null, undefined, T);
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    const orgName = `Acme ${randomString(4)}`;
    await page.keyboard.type(orgName);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor(T);
    await page.getByText(`In ${orgName}`).waitFor(T);
    const me = await page.evaluate(() => fetch('/api/auth/me').then((r) => r.json()));
    assert.equal(me.data.org.name, orgName);
    assert.equal(me.data.org.isTeam, true);
    assert.equal(me.data.role, 'owner');
    assert.equal(await page.getByLabel('Organization').inputValue(), me.data.org.id);
    noPageErrors(page);
    await context.close();
  });
});
