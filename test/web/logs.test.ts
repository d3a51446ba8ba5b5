/**
 * The live log pages, in a real browser against a real server running a real app: the runtime log
 * follows the app's output (filter, search, pause and resume, reconnect from the last line), the
 * request log follows the edge's requests (newest first, status classes, a fresh token when the
 * stream closes); both fit 375 px and work with the keyboard; a preview's app's logs are read by
 * choosing its environment.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { assertFitsWidth, browserSuite, openPage, orPageState, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { deployUploadedFolder, uploadFolder } from '../support/upload.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

/** A Node app that prints a line per request (stderr for /boom) and answers 404 for /missing, 500 for /boom. */
function writeApp(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'log-app', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }));
  writeFileSync(
    path.join(dir, 'server.js'),
    [
      "const http = require('node:http');",
      'http.createServer((req, res) => {',
      "  if (req.url === '/boom') { console.error('boom on request ' + req.url); res.statusCode = 500; res.end('boom'); return; }",
      "  console.log('request ' + req.method + ' ' + req.url);",
      "  if (req.url === '/missing') { res.statusCode = 404; res.end('no such page'); return; }",
      "  res.end('ok ' + req.url);",
      "}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));",
      '',
    ].join('\n'),
  );
  return dir;
}

describe('the live log pages', browserSuite('the live log pages'), () => {
  let root: string;
  const dash = useDashboard({ background: true });
  let user: TestUser;
  let api: HttpClient;
  let projectId: string;
  let slug: string;

  before(async () => {
    root = tempDir('berth-web-logs-');
    await getRuntime(dash.server.ctx).restored;
    user = await createUser(dash.server);
    api = dash.server.api(user.token);
    // The app, deployed through the API as `berth deploy` does (the browser flow is deploy.test.ts's).
    ({ projectId, slug } = await deployUploadedFolder(api, writeApp(path.join(root, 'log-app')), 'Log App', ['server.js', 'package.json']));
  });
  after(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const edge = (p: string) => edgeRequest(getRuntime(dash.server.ctx).edgePort(), `${slug}.localhost`, p);
  const logLine = (page: Page, text: string) => page.locator('pre.log-body .log-line', { hasText: text });

  it("the runtime log shows the app's output live; stdout/stderr filter, search, pause and resume (nothing said meanwhile is lost)", async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/logs`);
    await orPageState(page, page.getByRole('heading', { name: 'Logs', level: 2 }).waitFor());
    assert.equal(await page.getByLabel('Environment').count(), 0, 'no environment choice while production is the only one');
    await logLine(page, 'listening on').first().waitFor({ timeout: 15_000 });
    await page.getByText('Live.').waitFor();
    // Live: a request through the edge prints a line, which shows without a reload.
    assert.equal((await edge('/hello-live')).status, 200);
    await logLine(page, 'request GET /hello-live').waitFor({ timeout: 10_000 });
    assert.equal((await edge('/boom')).status, 500);
    await logLine(page, 'boom on request /boom').waitFor({ timeout: 10_000 });
    assert.match((await logLine(page, 'boom on request').getAttribute('class')) ?? '', /log-err/, 'stderr lines are marked');
    // stderr only, then stdout only.
    await page.getByLabel('Stream').selectOption('stderr');
    await logLine(page, 'request GET /hello-live').waitFor({ state: 'detached' });
    assert.equal(await logLine(page, 'boom on request').count(), 1);
    await page.getByLabel('Stream').selectOption('stdout');
    await logLine(page, 'boom on request').waitFor({ state: 'detached' });
    await page.getByLabel('Stream').selectOption('all');
    // Search narrows to matching lines, case-insensitively.
    await page.getByLabel('Filter lines').fill('HELLO-LIVE');
    await logLine(page, 'listening on').waitFor({ state: 'detached' });
    assert.equal(await logLine(page, 'request GET /hello-live').count(), 1);
    await page.getByText(/Showing 1 of \d+ lines/).waitFor();
    await page.getByLabel('Filter lines').fill('');
    // Pause: a line printed meanwhile waits; Resume brings it (from the last line shown, once).
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('Paused:').waitFor();
    await edge('/while-paused');
    await page.waitForTimeout(800);
    assert.equal(await logLine(page, 'request GET /while-paused').count(), 0, 'a paused log does not move');
    await page.getByRole('button', { name: 'Resume' }).click();
    await logLine(page, 'request GET /while-paused').waitFor({ timeout: 10_000 });
    assert.equal(await logLine(page, 'request GET /hello-live').count(), 1, 'lines shown before the pause are not repeated');
    await edge('/after-resume');
    await logLine(page, 'request GET /after-resume').waitFor({ timeout: 10_000 });
    await screenshot(page, 'runtime-logs');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a runtime-log stream that closes is opened again, asking only for lines after the last one (since=)', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    const urls: string[] = [];
    let first = true;
    const ts = new Date(Date.now() - 1000).toISOString();
    // The first stream sends one line and ends (as when the server restarts); later ones are real.
    await page.route('**/api/projects/*/logs/stream*', async (route) => {
      urls.push(route.request().url());
      if (!first) return route.continue();
      first = false;
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: `event: log\ndata: ${JSON.stringify({ ts, stream: 'stdout', line: 'the line before the stream closed' })}\n\n` });
    });
    await page.goto(`/projects/${projectId}/logs`);
    await logLine(page, 'the line before the stream closed').waitFor();
    await page.getByText(/The stream closed: reconnecting/).waitFor();
    await page.getByText('Live.').waitFor({ timeout: 10_000 });
    assert.ok(urls.length >= 2, `reconnected: ${urls.join(' ')}`);
    assert.equal(new URL(urls[1]!).searchParams.get('since'), ts, 'the second stream starts after the last line shown');
    await edge('/after-reconnect');
    await logLine(page, 'request GET /after-reconnect').waitFor({ timeout: 10_000 });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the request log shows requests live, newest first, with the status class in colour and words, and filters by class', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/requests`);
    await orPageState(page, page.getByRole('heading', { name: 'Request logs', level: 2 }).waitFor());
    await page.locator('.live-open', { hasText: 'Live' }).waitFor({ timeout: 10_000 });
    const row = (p: string) => page.locator('tbody tr').filter({ has: page.locator('td.req-path', { hasText: new RegExp(`^${p}$`) }) });
    // The earlier requests are there from the recent list.
    await row('/hello-live').first().waitFor();
    for (const p of ['/page-one', '/missing', '/boom', '/page-two']) await edge(p);
    await row('/page-two').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('tbody tr').first().locator('td.req-path').innerText(), '/page-two', 'newest first');
    const missing = row('/missing').first().locator('.badge');
    assert.equal((await missing.innerText()).replace(/\s+/g, ' ').trim(), '404 client error');
    assert.match((await missing.getAttribute('class')) ?? '', /badge-warn/);
    assert.match((await row('/boom').first().locator('.badge').getAttribute('class')) ?? '', /badge-bad/);
    assert.match((await row('/page-one').locator('.badge').getAttribute('class')) ?? '', /badge-ok/);
    await screenshot(page, 'request-logs');
    await page.getByLabel('Status').selectOption('4');
    await row('/page-one').waitFor({ state: 'detached' });
    const statuses = await page.locator('tbody tr .badge').allInnerTexts();
    assert.ok(statuses.length >= 1 && statuses.every((s) => s.startsWith('4')), statuses.join(', '));
    // Live under a filter too.
    await edge('/missing');
    await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length > n, statuses.length, { timeout: 10_000 });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('when the request-log stream closes, a fresh token is minted and the stream opened again', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    let tokens = 0;
    page.on('request', (r) => {
      if (r.url().includes('/server-logs/stream-token')) tokens += 1;
    });
    let first = true;
    await page.route('**/api/projects/*/server-logs/stream?*', async (route) => {
      if (!first) return route.continue();
      first = false;
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: ': the token ran out\n\n' });
    });
    await page.goto(`/projects/${projectId}/requests`);
    await page.locator('.live-open', { hasText: 'Live' }).waitFor({ timeout: 10_000 });
    assert.ok(tokens >= 2, `tokens minted: ${tokens}`);
    await edge('/after-new-token');
    await page.locator('td.req-path', { hasText: '/after-new-token' }).waitFor({ timeout: 10_000 });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('at 375 px both log pages fit, and the runtime-log filters work with the keyboard alone', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/requests`);
    await page.locator('tbody tr').first().waitFor();
    await assertFitsWidth(page);
    await page.goto(`/projects/${projectId}/logs`);
    await logLine(page, 'listening on').first().waitFor();
    await assertFitsWidth(page);
    // Keyboard: Tab to the stream filter, choose stderr with the arrows, Tab to the search, type.
    const stream = page.getByLabel('Stream');
    let guard = 0;
    while (!(await stream.evaluate((el) => el === document.activeElement)) && guard++ < 40) await page.keyboard.press('Tab');
    assert.ok(guard < 40, 'the stream filter is reachable with Tab');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.equal(await stream.inputValue(), 'stderr');
    await page.keyboard.press('Tab');
    await page.keyboard.type('boom');
    await logLine(page, 'listening on').first().waitFor({ state: 'detached' });
    assert.ok((await logLine(page, 'boom on request').count()) >= 1);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter'); // Pause
    await page.getByText('Paused:').waitFor();
    await page.keyboard.press('Enter'); // the same button, now Resume
    await page.getByText('Live.').waitFor({ timeout: 10_000 });
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("a preview's app has logs of its own: the Environment choice reads its runtime log live and in a search, and its request log (or every environment's); the page's address keeps it", async () => {
    const env = await api.post(`/api/projects/${projectId}/environments`, { name: 'feat', branch: 'feat' });
    assert.equal(env.status, 201, env.text);
    const sessionId = await uploadFolder(api, path.join(root, 'log-app'), { files: ['server.js', 'package.json'], session: { projectId } });
    const d = await api.post('/api/deployments', { projectId, environment: 'feat', sessionId });
    assert.equal(d.status, 202, d.text);
    assert.equal((await waitForDeployment(api, d.body.data.id, 90_000)).status, 'ready');
    const feat = ((await api.get(`/api/projects/${projectId}/environments`)).body.data as Array<{ name: string; domain: string }>).find((e) => e.name === 'feat')!;
    const previewEdge = (p: string) => edgeRequest(getRuntime(dash.server.ctx).edgePort(), feat.domain, p);

    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/logs`);
    await page.getByLabel('Environment').selectOption('feat');
    await page.waitForURL(/[?&]environment=feat\b/);
    await page.getByText('Live.').waitFor({ timeout: 10_000 });
    // A preview sleeps until its first request: this one wakes it.
    assert.equal((await previewEdge('/only-in-preview')).status, 200);
    await logLine(page, 'listening on').first().waitFor({ timeout: 15_000 });
    assert.equal((await edge('/only-in-production')).status, 200);
    await logLine(page, 'request GET /only-in-preview').waitFor({ timeout: 10_000 });
    // Production's line is in production's log, not here.
    await waitFor(async () => (await api.get(`/api/projects/${projectId}/logs?q=only-in-production`)).body.data?.length === 1, "production's line kept");
    assert.equal(await logLine(page, 'request GET /only-in-production').count(), 0);
    // A search reads the preview's kept lines.
    await waitFor(async () => (await api.get(`/api/projects/${projectId}/logs?q=only-in-preview&environment=feat`)).body.data?.length === 1, "the preview's line kept");
    await page.getByLabel('Text', { exact: true }).fill('only-in-');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const found = page.locator('ol.found-lines > li.found-line');
    await found.first().waitFor();
    assert.deepEqual((await found.allInnerTexts()).map((t) => t.includes('only-in-preview')), [true], 'only the preview\'s line');
    assert.match((await page.getByRole('link', { name: 'Download' }).getAttribute('href')) ?? '', /[?&]environment=feat\b/);
    // The address keeps the choice: a reload reads the preview's log again.
    await page.getByRole('button', { name: 'Clear search' }).click();
    await page.reload();
    assert.equal(await page.getByLabel('Environment').inputValue(), 'feat');
    await logLine(page, 'request GET /only-in-preview').waitFor({ timeout: 10_000 });
    // Back to production.
    await page.getByLabel('Environment').selectOption('production');
    await logLine(page, 'request GET /only-in-production').waitFor({ timeout: 10_000 });
    assert.ok(!page.url().includes('environment='));
    // The request log has the same choice: the preview's requests, recent and live.
    await page.goto(`/projects/${projectId}/requests?environment=feat`);
    const row = (p: string) => page.locator('td.req-path', { hasText: new RegExp(`^${p}$`) });
    await row('/only-in-preview').waitFor({ timeout: 10_000 });
    await page.locator('.live-open', { hasText: 'Live' }).waitFor({ timeout: 10_000 });
    await previewEdge('/preview-live');
    await edge('/production-live');
    await row('/preview-live').waitFor({ timeout: 10_000 });
    assert.equal(await row('/only-in-production').count(), 0);
    assert.equal(await row('/production-live').count(), 0);
    await page.getByLabel('Environment').selectOption('production');
    await row('/production-live').waitFor({ timeout: 10_000 });
    assert.equal(await row('/preview-live').count(), 0);
    // All environments: both apps' requests, recent and live, each row naming its environment.
    await page.getByLabel('Environment').selectOption({ label: 'All environments' });
    await page.waitForURL(/[?&]environment=(\*|%2A)/);
    await row('/preview-live').waitFor({ timeout: 10_000 });
    await row('/production-live').waitFor({ timeout: 10_000 });
    await page.locator('.live-open', { hasText: 'Live' }).waitFor({ timeout: 10_000 });
    await previewEdge('/preview-every');
    await edge('/production-every');
    await row('/preview-every').waitFor({ timeout: 10_000 });
    await row('/production-every').waitFor({ timeout: 10_000 });
    const environmentOf = (p: string) => page.locator('tr', { has: row(p) }).locator('td').nth(1).innerText();
    assert.equal(await environmentOf('/preview-every'), 'preview: feat');
    assert.equal(await environmentOf('/production-every'), 'production');
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});
