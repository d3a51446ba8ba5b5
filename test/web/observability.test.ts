/**
 * The dashboard's observability pages (issue 38 point 5), in a real browser against a real server
 * running a real sandboxed app sampled every second: the Metrics tab and the overview draw uPlot charts
 * from the sampled points (CPU, memory, requests, latency, errors; 1 h / 24 h / 7 d), a project with no
 * points says so calmly; a degraded app shows its state and reason on the project list, the overview
 * and every project tab; the Notifications page creates a webhook channel (its secret shown once),
 * sends a test to a real local receiver that checks the signature, lists the delivery, deletes the
 * channel; a member is told the page is for owners and admins.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';
process.env.BERTH_HEALTH_CHECK_SECONDS = '0.5';
process.env.BERTH_HEALTH_DEGRADED_SECONDS = '1';

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { startReceiver } from '../notifications/receivers.js';
import { assertFitsWidth, browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser, type TestUser } from '../support/factories.js';
import { tempDir } from '../support/harness.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const root = tempDir('berth-web-obs-');

/** An app that burns a little CPU per request, answers /status/<n> with n, and /health 500 after /break. */
function writeApp(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'watched', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }));
  writeFileSync(
    path.join(dir, 'server.js'),
    [
      "const keep = Buffer.alloc(8 * 1024 * 1024, 1);",
      'let broken = false;',
      "require('node:http').createServer((req, res) => {",
      "  if (req.url === '/break') { broken = true; res.end('broken'); return; }",
      "  if (req.url === '/health') { res.statusCode = broken ? 500 : 200; res.end(broken ? 'sick' : 'ok'); return; }",
      '  let x = 0; for (let i = 0; i < 2e6; i++) x += i % 7;',
      '  const m = /^\\/status\\/(\\d+)$/.exec(req.url);',
      '  res.statusCode = m ? Number(m[1]) : 200; res.end(String(x + keep[0]));',
      '}).listen(Number(process.env.PORT));',
      '',
    ].join('\n'),
  );
}

/** How many pixels of a canvas are (about) this colour: the chart drew a line of it. */
function pixelsOf(canvas: Locator, hex: string): Promise<number> {
  return canvas.evaluate((el, rgb) => {
    const c = el as HTMLCanvasElement;
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3]! > 200 && Math.abs(d[i]! - rgb[0]!) < 24 && Math.abs(d[i + 1]! - rgb[1]!) < 24 && Math.abs(d[i + 2]! - rgb[2]!) < 24) n++;
    return n;
  }, [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
}

const chart = (page: Page, title: string) => page.locator('figure.chart', { has: page.locator('figcaption', { hasText: new RegExp(`^${title}$`) }) });

describe('the observability pages', browserSuite('the observability pages'), () => {
  const dash = useDashboard({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_METRICS_INTERVAL_SECONDS: '1' } });
  let owner: TestUser;
  let api: HttpClient;
  let project: { id: string; slug: string; name: string };

  before(async () => {
    await getRuntime(dash.server.ctx).restored;
    owner = await createUser(dash.server, { team: true });
    api = dash.server.api(owner.token);
    writeApp(path.join(root, 'local', 'watched'));
    const imported = await api.post('/api/projects/import', { path: path.join(root, 'local', 'watched'), name: 'watched' });
    assert.equal(imported.status, 201, imported.text);
    project = imported.body.data;
    assert.equal((await api.patch(`/api/projects/${project.id}`, { healthPath: '/health' })).status, 200);
    const d = await api.post('/api/deployments', { projectId: project.id });
    assert.equal(d.status, 202, d.text);
    const done = await waitForDeployment(api, d.body.data.id, 300_000);
    assert.equal(done.status, 'ready', done.error);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const edge = (p: string) => edgeRequest(getRuntime(dash.server.ctx).edgePort(), `${project.slug}.localhost`, p, { timeoutMs: 30_000 });

  it('the Metrics tab draws CPU, memory, requests, latency and errors from the sampled points; the overview the last hour', async () => {
    for (const p of ['/', '/a', '/status/404', '/status/500', '/b']) await edge(p);
    // Points are in the store: CPU and memory from the box's cgroup, requests from the edge.
    await waitFor(
      async () => {
        const s = (await api.get(`/api/projects/${project.id}/metrics`)).body.data.series.find((x: any) => x.kind === 'app');
        const sum = (a: Array<number | null>) => a.reduce<number>((t, v) => t + (v ?? 0), 0);
        return s && s.cpuCores.some((v: number | null) => v !== null) && sum(s.requests2xx) >= 3 && sum(s.requests5xx) >= 1;
      },
      'sampled CPU and requests',
      60_000,
      250,
    );
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('link', { name: 'Metrics' }).click();
    await page.getByRole('heading', { name: 'Metrics', level: 2 }).waitFor();
    assert.equal(await page.getByRole('button', { name: '1 hour' }).getAttribute('aria-pressed'), 'true');
    await page.getByText('One point every 10 seconds.').waitFor();
    for (const title of ['CPU', 'Memory', 'Requests per second', 'Latency at the edge', 'Errors per second']) {
      const fig = chart(page, title);
      await fig.locator('canvas').waitFor();
      assert.ok(Number(await fig.getAttribute('data-points')) > 0, `${title}: points`);
    }
    // The app's CPU line (the first colour) is drawn, and said in words.
    const cpu = chart(page, 'CPU');
    assert.ok((await pixelsOf(cpu.locator('canvas'), '#2563eb')) > 20, 'the CPU line is drawn');
    assert.match(await cpu.locator('.chart-summary').innerText(), /app: latest .*, peak /);
    assert.match(await chart(page, 'Memory').locator('.chart-summary').innerText(), /app: latest \d+(\.\d)? MB/);
    const requests = await chart(page, 'Requests per second').locator('.chart-summary').innerText();
    assert.match(requests, /2xx: latest/);
    assert.match(requests, /5xx: latest/);
    assert.ok((await pixelsOf(chart(page, 'Requests per second').locator('canvas'), '#059669')) > 20, 'the 2xx line is drawn');
    assert.match(await chart(page, 'Latency at the edge').locator('.chart-summary').innerText(), /p50: latest [\d.]+ ms[\s\S]*p99/);
    assert.match(await chart(page, 'Errors per second').locator('.chart-summary').innerText(), /4xx[\s\S]*5xx/);
    await screenshot(page, 'metrics');
    // 24 hours and 7 days ask for the coarser steps (1 min, 1 h points).
    await page.getByRole('button', { name: '24 hours' }).click();
    await page.getByText('One point every minute.').waitFor();
    await page.getByRole('button', { name: '7 days' }).click();
    await page.getByText('One point every hour.').waitFor();
    assert.equal(await page.getByRole('button', { name: '7 days' }).getAttribute('aria-pressed'), 'true');
    // The overview: the last hour's CPU, memory and requests, and the way to the tab.
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('heading', { name: 'Last hour', level: 2 }).waitFor();
    await chart(page, 'CPU').locator('canvas').waitFor();
    await chart(page, 'Requests per second').locator('canvas').waitFor();
    assert.equal(await page.getByRole('link', { name: 'All metrics' }).getAttribute('href'), `/projects/${project.id}/metrics`);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a project with no points says so at each chart, without an error', async () => {
    const empty = await api.post('/api/projects', { name: 'Quiet' });
    assert.equal(empty.status, 201, empty.text);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    await page.goto(`/projects/${empty.body.data.id}/metrics`);
    await chart(page, 'CPU').getByText('No CPU readings in this range.').waitFor();
    await chart(page, 'Latency at the edge').getByText('No requests in this range, so no latency.').waitFor();
    assert.equal(await page.locator('figure.chart canvas').count(), 0);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('a degraded app shows its state and reason on the project list, the overview and every project tab', async () => {
    await edge('/break');
    await waitFor(async () => (await api.get(`/api/projects/${project.id}/info`)).body.data.runtime.state === 'degraded', 'the app degraded', 30_000, 200);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, owner);
    const card = page.locator('.project-card', { has: page.getByRole('link', { name: 'watched' }) });
    await card.locator('.badge', { hasText: 'degraded' }).waitFor();
    assert.match(await card.locator('.project-card-reason').innerText(), /health check failing/);
    await page.goto(`/projects/${project.id}`);
    assert.match(await page.locator('.runtime-reason').innerText(), /health check failing .*GET \/health answered 500/);
    await page.goto(`/projects/${project.id}/metrics`);
    assert.match(await page.locator('.project-degraded').innerText(), /The app is degraded: health check failing/);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it('the Notifications page creates a webhook channel (secret shown once), sends a test to a real receiver, lists the delivery, deletes the channel', async () => {
    const receiver = await startReceiver();
    try {
      const { context, page } = await openPage(dash.browser, dash.server);
      await signIn(page, owner);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Notifications' }).click();
      await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
      await page.getByText('No channels yet').waitFor();
      await page.getByLabel('Name').fill('on-call hook');
      await page.getByLabel('Kind').selectOption('webhook');
      await page.getByLabel('URL').fill(receiver.url('/berth'));
      await page.getByRole('checkbox', { name: /An app is degraded/ }).check();
      await page.getByRole('button', { name: 'Create channel' }).click();
      const secret = await page.getByTestId('channel-secret').innerText();
      assert.match(secret, /^berth_whs_/);
      receiver.setSecret(secret);
      await page.getByRole('button', { name: 'I have copied it' }).click();
      await page.getByTestId('channel-secret').waitFor({ state: 'detached' });
      const row = page.locator('tbody tr', { hasText: 'on-call hook' });
      await row.waitFor();
      assert.match(await row.innerText(), /http:\/\/127\.0\.0\.1:\d+\/…/);
      assert.equal(await page.getByText(secret).count(), 0, 'the secret is not shown again');
      await page.getByRole('button', { name: 'Send a test to on-call hook' }).click();
      await page.getByText('Test sent to “on-call hook”').waitFor();
      const deliveries = page.locator('.deliveries-row');
      await deliveries.locator('.badge', { hasText: 'delivered' }).waitFor();
      assert.match(await deliveries.innerText(), /Test[\s\S]*delivered[\s\S]*1[\s\S]*HTTP 200/);
      assert.equal(receiver.got.length, 1);
      assert.equal(receiver.got[0]!.signatureValid, true, 'signed with the secret the page showed');
      assert.equal(receiver.got[0]!.json.event, 'test');
      await screenshot(page, 'notifications');
      await page.getByRole('button', { name: 'Delete the channel on-call hook' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete channel' }).click();
      await page.getByText('No channels yet').waitFor();
      assert.equal((await api.get('/api/notification-channels')).body.data.length, 0);
      assert.deepEqual(pageErrors(page), []);
      await context.close();
    } finally {
      await receiver.close();
    }
  });

  it('a member is not offered the Notifications page, and reaching it by address says who manages it', async () => {
    const member = await createUser(dash.server, { orgId: owner.orgId, role: 'member' });
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, member);
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Notifications' }).count(), 0);
    await page.goto('/org/notifications');
    await page.getByText(/Only owners and admins of .* manage its notification channels/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create channel' }).count(), 0);
    await context.close();
  });

  it('at 375 px the Metrics tab and the Notifications page fit', async () => {
    const { context, page } = await openPage(dash.browser, dash.server, { width: 375 });
    await signIn(page, owner);
    await page.goto(`/projects/${project.id}/metrics`);
    await chart(page, 'CPU').locator('canvas').waitFor();
    await assertFitsWidth(page);
    await page.goto('/org/notifications');
    await page.getByRole('button', { name: 'Create channel' }).waitFor();
    await assertFitsWidth(page);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});
