/**
 * Previews and promotion in the dashboard (issue 22), in a real browser against a real server with
 * the real runtime and edge: a preview environment is created from the page (the keyboard alone;
 * refusals named at their fields), deployed and followed until ready at its own URL, promoted to
 * production after a confirmation that says what production will run, and deleted after typing its
 * name. A member with read access sees the previews and is refused, with the server's words, when
 * it tries to change them. The page fits 375 px, in dark too.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import * as tar from 'tar';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createDeployment, createGrant, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

type Project = { id: string; slug: string };

/** An id as the pages show it: without its kind prefix, 8 characters. */
const short = (id: string) => id.replace(/^[a-z]+_/, '').slice(0, 8);

describe('previews and promotion in the dashboard', browserSuite('previews and promotion in the dashboard'), () => {
  const dash = useDashboard({ background: true });
  let root: string;
  let team: TestOrg;
  let api: HttpClient;
  /**
   * The read-only cases' project: production serves v1 while the project's source is v2, the preview
   * `feat` (branch Feature/Login) serves its build of v2, and pr-7 is a pull request's preview, not
   * deployed. A case that changes a project makes its own.
   */
  let shared: Project;
  let uploads = 0;
  const previewHost = (project: Project) => `feature-login--${project.slug}.localhost`;
  const edge = (host: string) => edgeRequest(getRuntime(dash.server.ctx).edgePort(), host, '/');
  const visit = async (page: Page, project: Project) => {
    await page.goto(`/projects/${project.id}/previews`);
    await page.getByRole('heading', { name: 'Previews', level: 2 }).waitFor();
  };
  const card = (page: Page, name: string) => page.getByRole('region', { name, exact: true });

  /** The tiny app of `version`, packed and uploaded through a folder session: the session id. */
  async function upload(version: string): Promise<string> {
    const dir = writeTinyApp(path.join(root, `${version}-${(uploads += 1)}`), { version });
    const file = `${dir}.tgz`;
    tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['.']);
    const s = await api.post('/api/projects/folder/session', { name: version });
    assert.equal(s.status, 201, s.text);
    const { url, method, headers, sessionId } = s.body.data;
    const res = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
    assert.ok(res.status < 300, await res.text());
    return sessionId;
  }

  /** A project of the team's with pr-7, a pull request's preview as the GitHub App makes them (not deployed). */
  async function newProject(name: string): Promise<Project> {
    const p = await api.post('/api/projects', { name });
    assert.equal(p.status, 201, p.text);
    const pr = await api.post(`/api/projects/${p.body.data.id}/environments`, { name: 'pr-7', branch: 'fix/typo-in-footer' });
    assert.equal(pr.status, 201, pr.text);
    return p.body.data;
  }

  /** The preview `feat` of branch Feature/Login, made through the API (not deployed). */
  async function featPreview(project: Project): Promise<void> {
    const res = await api.post(`/api/projects/${project.id}/environments`, { name: 'feat', branch: 'Feature/Login' });
    assert.equal(res.status, 201, res.text);
  }

  /** Deploys `environment` (of `version` uploaded first, which becomes the source; else the project's source) and waits until ready: its id. */
  async function deploy(project: Project, environment: string, version?: string): Promise<string> {
    const res = await api.post('/api/deployments', { projectId: project.id, environment, ...(version ? { sessionId: await upload(version) } : {}) });
    assert.equal(res.status, 202, res.text);
    const done = await waitForDeployment(api, res.body.data.id, 120_000);
    assert.equal(done.status, 'ready', done.error);
    return done.id;
  }

  /** `version` uploaded as the project's source, nothing deployed. */
  async function setSource(project: Project, version: string): Promise<void> {
    const res = await api.post('/api/projects/ensure', { projectId: project.id, sessionId: await upload(version) });
    assert.ok(res.status < 300, res.text);
  }

  const productionCurrent = async (project: Project) => {
    const list = (await api.get(`/api/projects/${project.id}/deployments?environment=production`)).body.data as Array<{ id: string; current: boolean; trigger: string; promotedFrom: string | null }>;
    return list.find((d) => d.current);
  };

  before(async () => {
    root = tempDir('berth-web-previews-');
    await getRuntime(dash.server.ctx).restored;
    team = await createTeam(dash.server);
    api = dash.server.api(team.owner.token);
    shared = await newProject('Preview Shop');
    await deploy(shared, 'production', 'v1');
    await featPreview(shared);
    await deploy(shared, 'feat', 'v2');
  });
  after(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('a preview is created with the keyboard alone; a name or a branch the server refuses is named at its field', async () => {
    const project = await newProject('Preview Create');
    // A production release on record (nothing is served: no preview is deployed here).
    const v1 = await createDeployment(dash.server, { id: project.id, orgId: team.orgId });
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, team.owner);
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Previews' }).click();
    await page.getByRole('heading', { name: 'Previews', level: 2 }).waitFor();
    const pr = card(page, 'pr-7');
    await pr.getByText('Pull request #7').waitFor();
    await pr.getByText('not deployed yet').waitFor();
    assert.match(await card(page, 'Production').innerText(), new RegExp(short(v1)), "production's current release is v1");

    const name = page.getByLabel('Name', { exact: true });
    const branch = page.getByLabel('Branch', { exact: true });
    await name.fill('Feat Login!');
    await page.getByRole('button', { name: 'Create preview' }).click();
    await page.locator('.field-invalid .field-error', { hasText: 'lowercase letters, digits and dashes' }).waitFor();
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator('.notice-error').count(), 0, 'an error shown at its field is not repeated above');
    await name.fill('feat');
    await branch.fill('feature..login');
    await page.getByRole('button', { name: 'Create preview' }).click();
    await page.locator('.field-invalid .field-error', { hasText: 'valid git branch name' }).waitFor();
    assert.equal(await branch.getAttribute('aria-invalid'), 'true');
    assert.equal(await name.getAttribute('aria-invalid'), null);

    // Keyboard only: the name, Tab to the branch, Enter creates.
    await name.focus();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('feat');
    await page.keyboard.press('Tab');
    assert.ok(await branch.evaluate((el) => el === document.activeElement), 'Tab goes from the name to the branch');
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('Feature/Login');
    await page.keyboard.press('Enter');
    const feat = card(page, 'feat');
    await feat.waitFor();
    await feat.getByText('not deployed yet').waitFor();
    const envs = (await api.get(`/api/projects/${project.id}/environments`)).body.data as Array<{ name: string; url: string; domain: string; branch: string }>;
    const env = envs.find((e) => e.name === 'feat')!;
    assert.equal(env.branch, 'Feature/Login');
    assert.equal(env.domain, previewHost(project));
    const link = feat.getByRole('link', { name: previewHost(project) });
    assert.equal(await link.getAttribute('href'), env.url);
    assert.match(await feat.innerText(), /Created by hand/);
    assert.equal(await name.inputValue(), '', 'the form is empty again');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('Deploy builds the preview, the card follows it live until ready, and its URL serves the build', async () => {
    // Production serves v1 while the project's source is v2: the preview builds v2.
    const project = await newProject('Preview Deploy');
    await deploy(project, 'production', 'v1');
    await setSource(project, 'v2');
    await featPreview(project);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, team.owner);
    await visit(page, project);
    const feat = card(page, 'feat');
    await feat.getByRole('button', { name: 'Deploy feat' }).click();
    // The new deployment shows at once (before the build ends), then turns ready without a reload.
    const dep = feat.getByRole('link', { name: /^Deployment / });
    await dep.waitFor({ timeout: 5000 });
    assert.match(await feat.locator('.pv-dep .badge').innerText(), /queued|building|deploying/, 'on its way at first');
    await feat.getByRole('status').filter({ hasText: /Queued|Building/ }).first().waitFor({ timeout: 1000 });
    const list = (await api.get(`/api/projects/${project.id}/deployments?environment=feat`)).body.data as Array<{ id: string }>;
    assert.equal(list.length, 1);
    const previewDeployment = list[0]!.id;
    assert.equal(await dep.innerText(), short(previewDeployment));
    await feat.locator('.pv-dep .badge', { hasText: 'ready' }).waitFor({ timeout: 120_000 });
    assert.equal((await api.get(`/api/deployments/${previewDeployment}`)).body.data.status, 'ready');
    await feat.getByText('Sleeps when idle').waitFor();
    assert.match((await edge(previewHost(project))).text, /^hello v2/, 'the preview serves the source it built');
    assert.match((await edge(`${project.slug}.localhost`)).text, /^hello v1/, 'production is untouched');
    await page.locator('.toast').first().waitFor({ state: 'detached', timeout: 10_000 });
    await screenshot(page, 'previews');
    // Its logs are a link away: the Logs page with the preview chosen.
    await feat.getByRole('link', { name: 'Logs of feat' }).click();
    await page.waitForURL(/\/logs\?environment=feat$/);
    assert.equal(await page.getByLabel('Environment').inputValue(), 'feat');
    await page.getByText('Live.').waitFor({ timeout: 10_000 });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("Promote says what production will run instead of what and, confirmed, production's current release becomes the preview's build", async () => {
    // Production serves v1; the preview feat serves its build of v2.
    const project = await newProject('Preview Promote');
    const v1 = await deploy(project, 'production', 'v1');
    await featPreview(project);
    const previewDeployment = await deploy(project, 'feat', 'v2');
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, team.owner);
    await visit(page, project);
    assert.equal(await card(page, 'pr-7').getByRole('button', { name: 'Promote pr-7 to production' }).isDisabled(), true, 'nothing ready to promote');
    await card(page, 'feat').getByRole('button', { name: 'Promote feat to production' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    assert.equal(await dialog.getByLabel('Deployment to promote').inputValue(), previewDeployment, "the preview's current release is chosen");
    const text = await dialog.innerText();
    assert.match(text, new RegExp(`Production will run deployment ${short(previewDeployment)}`), text);
    assert.match(text, new RegExp(`instead of its current release ${short(v1)}`), text);
    assert.match(text, /Nothing is rebuilt/);
    await dialog.getByRole('button', { name: 'Promote to production' }).click();
    await dialog.waitFor({ state: 'hidden', timeout: 60_000 });
    const now = await waitFor(async () => {
      const c = await productionCurrent(project);
      return c && c.id !== v1 ? c : null;
    }, 'a new production release');
    assert.equal(now.trigger, 'promote');
    assert.equal(now.promotedFrom, previewDeployment);
    const prod = card(page, 'Production');
    await prod.getByRole('link', { name: `Deployment ${short(now.id)}` }).waitFor();
    assert.match(await prod.innerText(), new RegExp(`promoted from the preview deployment ${short(previewDeployment)}`));
    assert.match((await edge(`${project.slug}.localhost`)).text, /^hello v2/, 'production serves the promoted build');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('at 375 px, in dark, the previews, the form with an error and the promotion dialog fit the width', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375, colorScheme: 'dark' });
    await signIn(page, team.owner);
    await visit(page, shared);
    await card(page, 'feat').getByRole('link', { name: previewHost(shared) }).waitFor();
    await assertFitsWidth(page);
    await page.getByLabel('Name', { exact: true }).fill('Not Valid');
    await page.getByRole('button', { name: 'Create preview' }).click();
    await page.locator('.field-invalid .field-error').waitFor();
    await assertFitsWidth(page);
    await card(page, 'feat').getByRole('button', { name: 'Promote feat to production' }).click();
    await page.getByRole('dialog').waitFor();
    await assertFitsWidth(page);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a member with read access sees the previews and is offered no control to change them', async () => {
    const reader = await createUser(dash.server, { orgId: team.orgId, role: 'restricted' });
    await createGrant(dash.server, reader, 'project', shared.id, ['read']);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, reader);
    await visit(page, shared);
    const feat = card(page, 'feat');
    await feat.getByRole('link', { name: previewHost(shared) }).waitFor();
    assert.equal(await page.getByRole('button', { name: /^(Deploy|Promote|Delete) / }).count(), 0, 'no Deploy, Promote or Delete');
    assert.equal(await page.getByRole('button', { name: 'Create preview' }).count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("write taken away while the page is open: a change is refused in the server's words, after which the controls are gone", async () => {
    const writer = await createUser(dash.server, { orgId: team.orgId, role: 'restricted' });
    const grant = (permissions: string[]) => api.post('/api/permissions/grants', { userId: writer.userId, resourceType: 'project', resourceId: shared.id, permissions });
    assert.equal((await grant(['read', 'write'])).status, 201);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, writer);
    await visit(page, shared);
    const feat = card(page, 'feat');
    const deploy = feat.getByRole('button', { name: 'Deploy feat' });
    await deploy.waitFor();
    assert.equal((await grant(['read'])).status, 201);
    await deploy.click();
    const notice = page.locator('.notice', { hasText: 'Read only' });
    await notice.waitFor();
    assert.match(await notice.innerText(), /needs write access/);
    assert.equal(await page.getByRole('button', { name: /^(Deploy|Promote|Delete) / }).count(), 0, 'no controls once refused');
    assert.equal(await page.getByRole('button', { name: 'Create preview' }).count(), 0);
    assert.equal((await api.get(`/api/projects/${shared.id}/deployments?environment=feat`)).body.data.length, 1, 'nothing was deployed');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("Delete asks for the preview's name, says what goes, and removes it: its URL stops answering, production keeps serving", async () => {
    // Production and the preview feat both serve v2.
    const project = await newProject('Preview Delete');
    await deploy(project, 'production', 'v2');
    await featPreview(project);
    await deploy(project, 'feat');
    assert.match((await edge(previewHost(project))).text, /^hello v2/, 'the preview answers before it is deleted');
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, team.owner);
    await visit(page, project);
    await card(page, 'feat').getByRole('button', { name: 'Delete feat' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /deployments, build outputs, variables, volume and logs are deleted/);
    const confirm = dialog.getByRole('button', { name: 'Delete preview' });
    assert.equal(await confirm.isDisabled(), true, 'not before the name is typed');
    await dialog.getByLabel(/Type feat to confirm/).fill('feat');
    await confirm.click();
    await card(page, 'feat').waitFor({ state: 'detached', timeout: 30_000 });
    await page.getByText('Preview feat deleted').waitFor();
    const names = ((await api.get(`/api/projects/${project.id}/environments`)).body.data as Array<{ name: string }>).map((e) => e.name).sort();
    assert.deepEqual(names, ['pr-7', 'production']);
    assert.equal((await edge(previewHost(project))).status, 404);
    assert.match((await edge(`${project.slug}.localhost`)).text, /^hello v2/);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});
