/**
 * The search of the kept logs on a project's logs page, in a real browser against a real server
 * running a real app: text finds the lines and marks it, the Logs filter narrows to stderr or to the
 * edge's requests, a range without them says nothing matched, a bad range is named at its field,
 * Download answers the same search, Clear search returns to the live tail; 375 px and the keyboard.
 * One app, deployed before the tests; each test prints lines of its own (a fresh word) and reads
 * only those.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { deployUploadedFolder } from '../support/upload.js';
import { waitFor } from '../support/wait.js';

describe('searching the kept logs in the dashboard', browserSuite('searching the kept logs in the dashboard'), () => {
  let root: string;
  const dash = useDashboard({ background: true });
  let user: TestUser;
  let api: HttpClient;
  let projectId: string;
  let slug: string;

  before(async () => {
    root = tempDir('berth-web-log-search-');
    await getRuntime(dash.server.ctx).restored;
    user = await createUser(dash.server);
    api = dash.server.api(user.token);
    // The app, deployed through the API as `berth deploy` does (the browser flow is deploy.test.ts's).
    ({ projectId, slug } = await deployUploadedFolder(api, writeTinyApp(path.join(root, 'app')), 'Search Logs', ['server.js', 'package.json']));
  });
  after(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /**
   * A fresh word the app prints twice through the edge (`/print/<word>`: `stdout <word>=undefined` on
   * stdout, `stderr <word>=undefined` on stderr; the edge's request line `GET /print/<word> 200 …`),
   * once both app lines are kept (the API's search finds them).
   */
  async function printed(): Promise<string> {
    const word = `w${randomBytes(5).toString('hex')}`;
    const res = await edgeRequest(getRuntime(dash.server.ctx).edgePort(), `${slug}.localhost`, `/print/${word}`);
    assert.equal(res.status, 200, res.text);
    await waitFor(async () => {
      const r = await api.get(`/api/projects/${projectId}/logs?q=${word}&stream=runtime,request`);
      return r.status === 200 && r.body.data.length === 3;
    }, `the lines of ${word} kept`);
    return word;
  }

  async function logsPage(width?: number): Promise<{ page: Page; close(): Promise<void> }> {
    const { context, page } = await openPage(dash.browser, dash.server, width ? { width } : {});
    await signIn(page, user);
    await page.goto(`/projects/${projectId}/logs`);
    await page.getByRole('heading', { name: 'Search the kept logs', level: 3 }).waitFor();
    return { page, close: () => context.close() };
  }
  const found = (page: Page) => page.locator('ol.found-lines > li.found-line');
  const textField = (page: Page) => page.getByLabel('Text', { exact: true });
  const logsField = (page: Page) => page.getByLabel('Logs', { exact: true });

  it('text finds the kept lines that hold it, each with its time and stream and the text marked; Clear search returns to the live tail', async () => {
    const word = await printed();
    const { page, close } = await logsPage();
    await page.getByRole('heading', { name: 'Live tail', level: 3 }).waitFor();
    await textField(page).fill(word);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await found(page).first().waitFor();
    assert.deepEqual((await found(page).allInnerTexts()).map((t) => t.replace(/^\S+ \S+ /, '')), [`stdout stdout ${word}=undefined`, `stderr stderr ${word}=undefined`], 'both app lines, oldest first, with their stream');
    assert.deepEqual(await page.locator('ol.found-lines mark').allInnerTexts(), [word, word], 'the matched text is marked in each line');
    const times = await found(page).locator('time').evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime') ?? ''));
    assert.equal(times.length, 2);
    for (const t of times) assert.ok(Math.abs(Date.now() - Date.parse(t)) < 10 * 60_000, `a line's time: ${t}`);
    assert.match((await found(page).nth(1).getAttribute('class')) ?? '', /log-err/, 'the stderr line is marked as such');
    await page.getByText('2 matching lines').waitFor();
    assert.equal(await page.locator('pre.log-body').count(), 0, 'the live tail gives way to the results');
    await screenshot(page, 'log-search');
    await page.getByRole('button', { name: 'Clear search' }).click();
    await page.getByRole('heading', { name: 'Live tail', level: 3 }).waitFor();
    await page.locator('pre.log-body .log-line', { hasText: 'listening on' }).first().waitFor();
    assert.equal(await found(page).count(), 0);
    assert.equal(await textField(page).inputValue(), '', 'the text is cleared');
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it("the Logs filter narrows: stderr only, then the edge's requests", async () => {
    const word = await printed();
    const { page, close } = await logsPage();
    await textField(page).fill(word);
    await logsField(page).selectOption('runtime,stderr');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('1 matching line,').waitFor();
    assert.deepEqual(await found(page).locator('.found-text').allInnerTexts(), [`stderr ${word}=undefined`]);
    assert.equal(await found(page).locator('.found-stream').innerText(), 'stderr');
    await logsField(page).selectOption('request');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await found(page).locator('.found-stream', { hasText: 'request' }).waitFor();
    const lines = await found(page).locator('.found-text').allInnerTexts();
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, new RegExp(`^GET /print/${word} 200 `), 'the request line: method, path, status');
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it('a time range without the lines says nothing matched', async () => {
    const word = await printed();
    const { page, close } = await logsPage();
    await textField(page).fill(word);
    await page.getByLabel('Time range').selectOption('custom');
    // The day before yesterday, 00:00 to 01:00 UTC: before the app existed.
    const day = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('From (UTC)').fill(`${day}T00:00`);
    await page.getByLabel('To (UTC)').fill(`${day}T01:00`);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('.empty-title', { hasText: 'Nothing matched' }).waitFor();
    await page.getByText(`holds “${word}” in this time range`).waitFor();
    assert.equal(await found(page).count(), 0);
    // The same range over the last 15 minutes finds them.
    await page.getByLabel('Time range').selectOption('15m');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('2 matching lines').waitFor();
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it("To before From: the server's refusal is shown at To, and the search runs once it is right", async () => {
    const word = await printed();
    const { page, close } = await logsPage();
    await textField(page).fill(word);
    await page.getByLabel('Time range').selectOption('custom');
    // An hour either side of now (a calendar day would miss lines printed just before a midnight the test runs across).
    const minute = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);
    const [earlier, later] = [minute(-3_600_000), minute(3_600_000)];
    await page.getByLabel('From (UTC)').fill(later);
    await page.getByLabel('To (UTC)').fill(earlier);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('.field-error', { hasText: 'until must be after since' }).waitFor();
    assert.equal(await page.getByLabel('To (UTC)').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('From (UTC)').getAttribute('aria-invalid'), null);
    assert.equal(await page.locator('.notice-error').count(), 0, 'an error shown at its field is not repeated above');
    assert.equal(await found(page).count(), 0);
    await page.getByLabel('From (UTC)').fill(earlier);
    await page.getByLabel('To (UTC)').fill(later);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('2 matching lines').waitFor();
    assert.equal(await page.locator('.field-error').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it("Download answers the same search's lines as JSON lines", async () => {
    const word = await printed();
    const { page, close } = await logsPage();
    await textField(page).fill(word);
    await logsField(page).selectOption('runtime,build,request');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('3 matching lines').waitFor();
    const link = page.getByRole('link', { name: 'Download' });
    const href = new URL((await link.getAttribute('href'))!, dash.server.url);
    assert.equal(href.pathname, `/api/projects/${projectId}/logs/download`);
    assert.equal(href.searchParams.get('q'), word);
    assert.equal(href.searchParams.get('stream'), 'runtime,build,request');
    assert.ok(href.searchParams.get('since'), 'the range goes along');
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), `${slug}-logs.jsonl`);
    const text = readFileSync((await download.path())!, 'utf8');
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.source).sort(), ['request', 'runtime', 'runtime']);
    assert.ok(lines.every((l) => l.line.includes(word)), text);
    assert.deepEqual(
      lines.map((l) => l.line),
      await found(page).locator('.found-text').allInnerTexts(),
      'the same lines as the page, in the same order',
    );
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it('a page holds the newest 200 matches; Show older lines adds the older ones above', async () => {
    const word = await printed();
    // 100 more requests: 202 app lines hold the word.
    const port = getRuntime(dash.server.ctx).edgePort();
    for (let i = 0; i < 100; i++) assert.equal((await edgeRequest(port, `${slug}.localhost`, `/print/${word}`)).status, 200);
    await waitFor(async () => {
      const r = await api.get(`/api/projects/${projectId}/logs?q=${word}&limit=1000`);
      return r.status === 200 && r.body.data.length === 202;
    }, `the 202 lines of ${word} kept`);
    const { page, close } = await logsPage();
    await textField(page).fill(word);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('200+ matching lines').waitFor();
    assert.equal(await found(page).count(), 200);
    await page.getByRole('button', { name: 'Show older lines' }).click();
    await page.getByText('202 matching lines').waitFor();
    assert.equal(await found(page).count(), 202);
    assert.equal(await page.getByRole('button', { name: 'Show older lines' }).count(), 0, 'nothing older is left');
    const times = await found(page).locator('time').evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime') ?? ''));
    assert.deepEqual(times, [...times].sort(), 'oldest first, the older page above');
    assert.deepEqual(pageErrors(page), []);
    await close();
  });

  it('at 375 px the search and its results fit, and it works with the keyboard alone', async () => {
    const word = await printed();
    const { page, close } = await logsPage(375);
    await assertFitsWidth(page);
    const text = textField(page);
    let guard = 0;
    while (!(await text.evaluate((el) => el === document.activeElement)) && guard++ < 40) await page.keyboard.press('Tab');
    assert.ok(guard < 40, 'the text field is reachable with Tab');
    await page.keyboard.type(word);
    await page.keyboard.press('Enter');
    await page.getByText('2 matching lines').waitFor();
    await assertFitsWidth(page);
    await page.getByLabel('Time range').selectOption('custom');
    await assertFitsWidth(page);
    await screenshot(page, 'log-search-375');
    assert.deepEqual(pageErrors(page), []);
    await close();
  });
});
