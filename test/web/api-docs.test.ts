/**
 * The API reference at /api/docs: a page of the built dashboard that renders /api/openapi.json with
 * Redoc's bundle, served by Berth itself (no CDN), under a policy that allows only same-origin
 * scripts. Checked over HTTP (the page and its policy) and in Chromium (it renders, nothing leaves
 * the origin, nothing is blocked), and reached from the dashboard's navigation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { browserSuite, openPage, pageErrors, screenshot, signIn, useDashboard } from '../support/browser.js';
import { createUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

const { skip } = browserSuite('web/api-docs');
const T = { timeout: 20_000 };

/** The directives of a Content-Security-Policy header, by name. */
function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

const screenshotApiDocs = (page: Parameters<typeof screenshot>[0]) => screenshot(page, 'api-docs');

describe('the API reference at /api/docs', { skip }, () => {
  const dash = useDashboard();

  it('answers an HTML page, never cached, that loads only same-origin scripts and allows no other', async () => {
    for (const p of ['/api/docs', '/api/docs/']) {
      const res = await fetch(dash.server.url + p);
      assert.equal(res.status, 200, p);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      const csp = directives(res.headers.get('content-security-policy') ?? '');
      assert.deepEqual(csp.get('script-src'), ["'self'"], 'scripts: this origin only (no inline, no eval, no CDN)');
      assert.deepEqual(csp.get('default-src'), ["'self'"]);
      assert.deepEqual(csp.get('connect-src'), ["'self'"]);
      assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
      const html = await res.text();
      assert.match(html, /<title>Berth API reference<\/title>/);
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline <script>');
      const sources = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
      assert.ok(sources.length > 0, 'the page loads its script');
      for (const src of sources) assert.match(src, /^\/assets\//, `a same-origin script: ${src}`);
    }
    // The rest of /api is still the API's.
    const missing = await dash.server.api().get('/api/docs/nothing');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'NOT_FOUND');
  });

  it('renders the OpenAPI document in Chromium from this origin alone, the policy blocking nothing it needs', async () => {
    const { context, page } = await openPage(dash.browser, dash.server);
    const origin = new URL(dash.server.url).origin;
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    const messages: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') messages.push(m.text());
    });
    await page.goto('/api/docs');
    // A known route, by its summary and its path, as Redoc lists it.
    await page.getByRole('heading', { name: 'Liveness and what this instance is' }).waitFor(T);
    await page.getByRole('heading', { name: 'The OpenAPI document: every route with what it requires' }).waitFor(T);
    await screenshotApiDocs(page);
    assert.ok(await page.getByText('/api/health', { exact: true }).count() > 0, 'the path of a known route is shown');
    // Redoc's sidebar shows its vendor's logo from a CDN; the policy blocks it (img-src 'self' data:),
    // so that request never leaves the browser. Nothing else is asked of another origin.
    const elsewhere = requests.filter((u) => !u.startsWith(origin + '/') && !u.startsWith('data:') && !u.startsWith('blob:'));
    assert.deepEqual(
      elsewhere.filter((u) => !failed.includes(`${u} csp`)),
      [],
      'every request to another origin is blocked by the policy',
    );
    assert.ok(elsewhere.every((u) => u.endsWith('.svg')), `only an image is asked elsewhere: ${elsewhere.join(', ')}`);
    assert.ok(requests.includes(`${origin}/api/openapi.json`), 'the document is read from /api/openapi.json');
    const refused = messages.filter((m) => /Content Security Policy/i.test(m));
    assert.deepEqual(
      refused.filter((m) => !/^Loading the image 'https:\/\/[^']+' violates/.test(m)),
      [],
      'the policy blocks no script, style, worker or fetch the page needs',
    );
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });

  it("is linked from the dashboard's navigation", async () => {
    const user = await createUser(dash.server);
    const { context, page } = await openPage(dash.browser, dash.server);
    await signIn(page, user);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API reference' }).click();
    await page.waitForURL((u) => u.pathname === '/api/docs', T);
    await page.getByRole('heading', { name: 'Liveness and what this instance is' }).waitFor(T);
    await page.getByRole('link', { name: '← Berth dashboard' }).click();
    await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor(T);
    assert.deepEqual(pageErrors(page), []);
    await context.close();
  });
});

describe('the OpenAPI document the reference renders', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('declares the request body of applying a staged restore: { confirmationToken }, optional as the route treats it', async () => {
    const doc = (await server.api().get('/api/openapi.json')).body;
    const op = doc.paths['/api/backup-restores/{restoreId}/apply'].post;
    assert.equal(op.requestBody.required, false, 'a missing body is answered by the route (400 INVALID_CONFIRMATION_TOKEN), not by validation');
    const schema = op.requestBody.content['application/json'].schema;
    const object = (schema.anyOf ?? [schema]).find((s: { type?: string }) => s.type === 'object');
    assert.ok(object?.properties?.confirmationToken, JSON.stringify(schema));
    assert.match(object.properties.confirmationToken.description, /INVALID_CONFIRMATION_TOKEN/);
  });
});
