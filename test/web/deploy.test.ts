/**
 * Deploying from the dashboard, in a real browser against a real server with the real runtime:
 * a folder picked in the browser is packed there (ignore rules), uploaded, scanned, deployed, and
 * its build log followed live to "ready"; the deployments list redeploys, rolls back after a
 * confirmation and cancels optimistically; every page fits 375 px.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import * as tar from 'tar';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

/** A file name over 100 bytes, a path over 100 bytes that splits at a folder, a name that is not ASCII. */
const LONG_NAMES = [`assets/${'a'.repeat(120)}.txt`, `${'deep/'.repeat(22)}file.txt`, 'docs/naïve café.md'];

/**
 * An app folder as a developer has it: a Node server (no dependencies) that prints a line per
 * request, a build that prints three steps, the first 4 s before the others, and what must stay behind: installed
 * dependencies, the git folder, the CLI's link and a file .gitignore lists.
 */
function writeApp(dir: string): string {
  const put = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  };
  put('package.json', JSON.stringify({ name: 'hello-upload', version: '1.0.0', private: true, scripts: { build: 'node build.js', start: 'node server.js' } }, null, 2));
  // A pause after the first step: long enough that a page opened meanwhile sees the steps arrive.
  put('build.js', "let n = 0;\nconst step = () => { n += 1; console.log('build step ' + n + ' of 3'); if (n < 3) setTimeout(step, n === 1 ? 4000 : 300); };\nstep();\n");
  put(
    'server.js',
    [
      "const http = require('node:http');",
      'http.createServer((req, res) => {',
      "  console.log('request ' + req.method + ' ' + req.url);",
      "  res.end('hello from the upload');",
      "}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));",
      '',
    ].join('\n'),
  );
  // Names a plain tar header cannot hold: the browser's writer uses the ustar prefix or a PAX header.
  for (const rel of LONG_NAMES) put(rel, `contents of ${rel}`);
  put('.gitignore', 'secret.txt\ncoverage/\n');
  put('secret.txt', 'not for the server');
  put('coverage/report.txt', 'left behind');
  put('node_modules/left-pad/index.js', 'module.exports = 1;');
  put('.git/HEAD', 'ref: refs/heads/main\n');
  put('.berth/project.json', '{}');
  return dir;
}

/** An id as the pages show it: without its kind prefix, 8 characters. */
const short = (id: string) => id.replace(/^[a-z]+_/, '').slice(0, 8);

describe('deploying from the dashboard', browserSuite('deploying from the dashboard'), () => {
  let root: string;
  let appDir: string;
  const dash = useDashboard({ background: true });
  let user: TestUser;
  let api: HttpClient;
  /** The app as a .tar.gz archive (what the archive field takes, and what the API deploys). */
  let archive: string;

  before(async () => {
    root = tempDir('berth-web-deploy-');
    appDir = writeApp(path.join(root, 'hello-upload'));
    archive = path.join(root, 'hello-upload.tar.gz');
    tar.c({ gzip: true, cwd: appDir, sync: true, file: archive, portable: true }, ['server.js', 'package.json', 'build.js']);
    await getRuntime(dash.server.ctx).restored;
    user = await createUser(dash.server);
    api = dash.server.api(user.token);
  });
  after(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const edge = async (projectId: string, p: string) => {
    const slug = (await api.get(`/api/projects/${projectId}`)).body.data.slug;
    return edgeRequest(getRuntime(dash.server.ctx).edgePort(), `${slug}.localhost`, p);
  };
  /**
   * A case's own project: the app uploaded through a folder session and deployed to production
   * through the API, ready; answers the project's id and its first deployment's.
   */
  async function deployedProject(name: string): Promise<{ projectId: string; firstId: string }> {
    const p = await api.post('/api/projects', { name, buildCommand: 'npm run build', startCommand: 'npm start', port: 3000 });
    assert.equal(p.status, 201, p.text);
    const s = await api.post('/api/projects/folder/session', { name });
    assert.equal(s.status, 201, s.text);
    const { url, method, headers, sessionId } = s.body.data;
    const up = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(archive) });
    assert.ok(up.status < 300, await up.text());
    const res = await api.post('/api/deployments', { projectId: p.body.data.id, environment: 'production', sessionId });
    assert.equal(res.status, 202, res.text);
    const done = await waitForDeployment(api, res.body.data.id, 120_000);
    assert.equal(done.status, 'ready', done.error);
    return { projectId: p.body.data.id, firstId: done.id };
  }
  /** The row of a deployment in the list (its link shows the id short). */
  const rowOf = (page: Page, id: string) => page.locator('tbody tr').filter({ has: page.getByRole('link', { name: short(id), exact: true }) });

  it('a missing project name or source is named at its field', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto('/new');
    await page.getByRole('heading', { name: 'New project', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Upload and detect' }).click();
    const name = page.getByLabel('Project name');
    await page.locator('.field-error', { hasText: 'name the project' }).waitFor();
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    await name.fill('nothing chosen');
    await page.getByRole('button', { name: 'Upload and detect' }).click();
    await page.locator('.field-error', { hasText: 'choose a folder or a .tar.gz archive' }).waitFor();
    assert.equal(await page.locator('.notice-error').count(), 0, 'an error shown at its field is not repeated above');
    assert.equal(await page.getByLabel('Folder', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a .tar.gz archive is the alternative: sent as it is and scanned; a file that is not one, and a port the server refuses, are named at their fields', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto('/new');
    const archiveField = page.getByLabel('Or a .tar.gz archive of it');
    await archiveField.setInputFiles(path.join(appDir, 'server.js'));
    await page.getByLabel('Project name').fill('From an archive');
    await page.getByRole('button', { name: 'Upload and detect' }).click();
    await page.locator('.field-error', { hasText: 'server.js is not a gzipped tar archive' }).waitFor();
    await archiveField.setInputFiles(archive);
    await page.getByRole('button', { name: 'Upload and detect' }).click();
    await page.getByRole('heading', { name: 'Build plan' }).waitFor({ timeout: 30_000 });
    const steps = await page.getByRole('list', { name: 'Progress' }).innerText();
    assert.ok(!steps.includes('Pack the folder'), 'an archive is not packed again');
    assert.match(steps, /Upload/);
    assert.equal(await page.getByLabel('Runtime').inputValue(), 'node');
    assert.match(await page.getByLabel('Build command').inputValue(), /build/);
    // The server's refusal names its field, and the form shows it there.
    await page.getByLabel('Port').fill('70000');
    await page.getByRole('button', { name: 'Create and deploy' }).click();
    const port = page.getByLabel('Port');
    await page.waitForFunction(() => document.querySelector('[aria-invalid="true"]') !== null);
    assert.equal(await port.getAttribute('aria-invalid'), 'true');
    assert.match(await page.locator('.field-invalid .field-error').innerText(), /65535/);
    const projects = (await api.get('/api/projects')).body.data as Array<{ name: string }>;
    assert.ok(!projects.some((p) => p.name === 'From an archive'), 'nothing was created');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a folder picked in the browser is packed without node_modules, .git, .berth and ignored files, uploaded, scanned, and deployed with the keyboard; its build log streams live until "ready"', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto('/new');
    await page.getByLabel('Folder', { exact: true }).setInputFiles(appDir);
    await page.getByText('Chosen:').waitFor();
    // The name comes from the folder; the keyboard replaces it and submits the form.
    const name = page.getByLabel('Project name');
    assert.equal(await name.inputValue(), 'hello-upload');
    await name.focus();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('Hello Upload');
    await page.keyboard.press('Enter');
    // The detected plan, editable.
    await page.getByRole('heading', { name: 'Build plan' }).waitFor({ timeout: 30_000 });
    const packed = await page.locator('.new-packed').innerText();
    assert.match(packed, /^7 files \(/, packed); // .gitignore, build.js, package.json, dash.server.js and the three long names
    for (const left of ['node_modules/', '.git/', '.berth/', 'secret.txt', 'coverage/']) assert.ok(packed.includes(left), `${left} is left out: ${packed}`);
    assert.equal(await page.getByLabel('Runtime').inputValue(), 'node');
    assert.match(await page.getByLabel('Build command').inputValue(), /build/);
    await screenshot(page, 'new-project');
    // Keyboard only: from the name field, Tab to the port and set it, then Enter deploys.
    await page.getByLabel('Project name', { exact: true }).focus();
    let guard = 0;
    while (!(await page.getByLabel('Port').evaluate((el) => el === document.activeElement)) && guard++ < 10) await page.keyboard.press('Tab');
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('3000');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/projects\/[^/]+\/deployments\/[^/]+$/, { timeout: 30_000 });
    const m = /\/projects\/([^/]+)\/deployments\/([^/]+)$/.exec(page.url())!;
    const projectId = m[1]!;
    const firstId = m[2]!;
    const project = (await api.get(`/api/projects/${projectId}`)).body.data;
    assert.equal(project.name, 'Hello Upload');
    assert.equal(project.source.type, 'upload');
    assert.equal(project.config.port, 3000);
    // What the server unpacked is the folder as packed: every name whole, nothing left out came along.
    const source = path.join(dash.server.dataDir, 'uploads', projectId, 'current');
    const listed = readdirSync(source, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(source, path.join(e.parentPath, e.name)))
      .sort();
    assert.deepEqual(listed, ['.gitignore', 'build.js', 'package.json', 'server.js', ...LONG_NAMES].sort());
    for (const rel of LONG_NAMES) assert.equal(readFileSync(path.join(source, rel), 'utf8'), `contents of ${rel}`);
    // Live: the first build step shows while the build still runs (the others come 4 s later).
    const log = page.locator('pre.log-body');
    await log.getByText('build step 1 of 3').waitFor({ timeout: 60_000 });
    const heading = page.getByRole('heading', { level: 2 });
    assert.match(await heading.innerText(), /queued|building|deploying/, 'the status while the log streams');
    assert.equal(await log.getByText('build step 3 of 3').count(), 0, 'later steps are not there yet');
    await log.getByText('build step 3 of 3').waitFor({ timeout: 30_000 });
    await heading.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 60_000 });
    assert.equal((await api.get(`/api/deployments/${firstId}`)).body.data.status, 'ready');
    const open = page.getByRole('link', { name: /Open the app/ });
    await open.waitFor();
    assert.match((await open.getAttribute('href')) ?? '', /hello-upload/);
    assert.match((await edge(projectId, '/')).text, /^hello from the upload/);
    await screenshot(page, 'deployment-build-log');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('redeploy adds a live row; "Roll back to this" says what replaces what and, confirmed, makes the older release current', async () => {
    const { projectId, firstId } = await deployedProject('Roll Back');
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/deployments`);
    await page.getByRole('heading', { name: 'Deployments', level: 2 }).waitFor();
    await page.getByRole('button', { name: 'Redeploy', exact: true }).click();
    await page.locator('tbody tr').nth(1).waitFor();
    const ids = await page.locator('tbody tr a.mono').allInnerTexts();
    assert.equal(ids.length, 2);
    assert.equal(ids[1], short(firstId), 'newest first');
    const list = (await api.get(`/api/projects/${projectId}/deployments`)).body.data;
    const secondId: string = list.find((d: { id: string }) => d.id !== firstId).id;
    // The list follows the build without a reload: the new row turns ready and current.
    await rowOf(page, secondId).locator('.badge', { hasText: 'current' }).waitFor({ timeout: 60_000 });
    await rowOf(page, secondId).locator('.badge', { hasText: 'ready' }).waitFor();
    await page.getByRole('button', { name: `Roll back to deployment ${short(firstId)}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.ok(text.includes(short(firstId)) && text.includes(short(secondId)), `the dialog names both releases: ${text}`);
    assert.match(text, /instead of the current release/);
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await rowOf(page, firstId).locator('.badge', { hasText: 'current' }).waitFor({ timeout: 30_000 });
    await dialog.waitFor({ state: 'hidden' });
    await screenshot(page, 'deployments');
    const after = (await api.get(`/api/projects/${projectId}/deployments`)).body.data;
    assert.deepEqual(
      after.filter((d: { current: boolean }) => d.current).map((d: { id: string }) => d.id),
      [firstId],
    );
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('"Redeploy without cache" builds without the project\'s build cache: its log says nothing was restored or saved', async () => {
    const { projectId } = await deployedProject('No Cache');
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/deployments`);
    const before = (await api.get(`/api/projects/${projectId}/deployments?limit=1`)).body.data[0].id as string;
    await page.getByRole('button', { name: 'Redeploy without cache' }).click();
    const id = await waitFor(async () => {
      const latest = (await api.get(`/api/projects/${projectId}/deployments?limit=1`)).body.data[0].id as string;
      return latest !== before ? latest : null;
    }, 'the new deployment', 30_000);
    await rowOf(page, id).waitFor();
    const done = await waitForDeployment(api, id, 120_000);
    assert.equal(done.status, 'ready', done.error);
    const lines: string[] = (await api.get(`/api/deployments/${id}/logs`)).body.data.map((l: { line: string }) => l.line);
    assert.ok(lines.includes('[berth] cache: not used (noCache): nothing restored, nothing saved'), lines.join('\n'));
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('Cancel marks a running deployment cancelled at once, before the server answers, and the server agrees', async () => {
    const { projectId } = await deployedProject('Cancelled');
    const slow = await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "console.log(\'slow build\'); setTimeout(() => {}, 60000)"' });
    assert.equal(slow.status, 200, slow.text);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/deployments`);
    await page.getByRole('button', { name: 'Redeploy', exact: true }).click();
    const cancel = page.getByRole('button', { name: /^Cancel deployment / });
    await cancel.waitFor();
    const id = (await api.get(`/api/projects/${projectId}/deployments?limit=1`)).body.data[0].id as string;
    await waitFor(async () => (await api.get(`/api/deployments/${id}/logs`)).body.data.some((l: { line: string }) => l.line === 'slow build'), 'the slow build to start', 30_000);
    // The build is silent now and its record does not change: the row's duration counts on its own.
    const duration = rowOf(page, id).locator('.dep-duration');
    const shown = await duration.innerText();
    assert.match(shown, /^\d+ s$/);
    await waitFor(async () => (await duration.innerText()) !== shown, `the duration to count on from ${shown}`, 10_000);
    // Hold the server's answer back: what the row shows meanwhile is the page's own (optimistic).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/api/deployments/*/cancel', async (route) => {
      await held;
      await route.continue();
    });
    await cancel.click();
    await rowOf(page, id).locator('.badge', { hasText: 'cancelled' }).waitFor({ timeout: 1000 });
    assert.equal((await api.get(`/api/deployments/${id}`)).body.data.status !== 'cancelled', true, 'the server has not been asked yet');
    release();
    await waitForDeployment(api, id, 15_000);
    assert.equal((await api.get(`/api/deployments/${id}`)).body.data.status, 'cancelled');
    await page.getByText(`Deployment ${short(id)} cancelled`).waitFor();
    await rowOf(page, id).locator('.badge', { hasText: 'cancelled' }).waitFor();
    assert.equal(await page.getByRole('button', { name: /^Cancel deployment / }).count(), 0);
    // The release that served keeps serving.
    assert.match((await edge(projectId, '/')).text, /^hello from the upload/);
    await api.patch(`/api/projects/${projectId}`, { buildCommand: 'npm run build' });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('at 375 px the new-project form, the deployments list and a build log fit the width', async () => {
    const { projectId, firstId } = await deployedProject('Phone Check');
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(page, user);
    await page.goto('/new');
    await page.getByLabel('Folder', { exact: true }).waitFor();
    await assertFitsWidth(page);
    // The steps and the plan form too.
    await page.getByLabel('Or a .tar.gz archive of it').setInputFiles(archive);
    await page.getByRole('button', { name: 'Upload and detect' }).click();
    await page.getByRole('heading', { name: 'Build plan' }).waitFor({ timeout: 30_000 });
    await assertFitsWidth(page);
    await page.goto(`/projects/${projectId}/deployments`);
    await page.locator('tbody tr').first().waitFor();
    await assertFitsWidth(page);
    await page.goto(`/projects/${projectId}/deployments/${firstId}`);
    await page.locator('pre.log-body').getByText('build step 3 of 3').waitFor();
    await assertFitsWidth(page);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});
