import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A raw GET (fetch would undo the content encoding this suite checks). */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * `berth serve` answers the dashboard at `/`: the page for every path outside /api (its router shows
 * the page), the content-hashed assets with a year of caching and their prebuilt compressed
 * variants, and the API's own JSON 404 under /api. A built dashboard is faked in a temp folder, so
 * this suite needs no build.
 */
describe('the dashboard is served at / beside the API', () => {
  let server: TestServer;
  let unbuilt: TestServer;
  const dir = tempDir('berth-web-');
  const js = 'console.log("dashboard");'.repeat(100);
  before(async () => {
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Berth</title><script type="module" src="/assets/index-abc123.js"></script>');
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), js);
    const { gzipSync } = await import('node:zlib');
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js.gz'), gzipSync(js));
    writeFileSync(path.join(dir, 'secret.txt'), 'outside assets');
    server = await startTestServer({ env: { BERTH_DASHBOARD_DIR: dir } });
    unbuilt = await startTestServer({ env: { BERTH_DASHBOARD_DIR: path.join(dir, 'missing') } });
  });
  after(async () => {
    await server.close();
    await unbuilt.close();
  });

  it('GET / and any deep link answer the single page, never cached, with a strict content security policy', async () => {
    for (const p of ['/', '/projects/abc/env', '/invite/inv_123?x=1', '/login']) {
      const r = await get(server.url + p);
      assert.equal(r.status, 200, p);
      assert.match(String(r.headers['content-type']), /^text\/html; charset=utf-8/);
      assert.equal(r.headers['cache-control'], 'no-cache');
      assert.match(String(r.headers['content-security-policy']), /default-src 'self'.*script-src 'self'.*frame-ancestors 'none'/);
      assert.equal(r.headers['x-frame-options'], 'DENY');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.match(r.body.toString(), /<title>Berth<\/title>/);
    }
    const head = await get(server.url + '/', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
  });

  it('an asset is cached for a year and sent gzip-encoded from its prebuilt variant when the client accepts it', async () => {
    const plain = await get(`${server.url}/assets/index-abc123.js`);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(plain.headers['content-type']), /javascript/);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body.toString(), js);
    const gz = await get(`${server.url}/assets/index-abc123.js`, { 'accept-encoding': 'br, gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip', 'no .br variant exists, so gzip');
    assert.equal(gz.headers.vary, 'accept-encoding');
    assert.equal(gunzipSync(gz.body).toString(), js);
    assert.ok(gz.body.length < js.length / 5);
    const again = await get(`${server.url}/assets/index-abc123.js`, { 'if-none-match': String(plain.headers.etag) });
    assert.equal(again.status, 304);
  });

  it('a missing asset is 404, and no path reaches outside the assets or the page', async () => {
    assert.equal((await get(`${server.url}/assets/index-old999.js`)).status, 404);
    for (const p of ['/assets/../secret.txt', '/assets/%2e%2e/secret.txt', '/assets/..%2fsecret.txt', '/assets/.%2e/.%2e/package.json']) {
      const r = await get(server.url + p);
      assert.ok(r.status === 404 || (r.status === 200 && /<title>Berth/.test(r.body.toString())), `${p}: ${r.status}`);
      assert.doesNotMatch(r.body.toString(), /outside assets|"name"/, p);
    }
    // `/secret.txt` is a page path: the single page answers, not the file.
    assert.match((await get(`${server.url}/secret.txt`)).body.toString(), /<title>Berth/);
  });

  it('under /api an unknown route is still the JSON 404 naming it, and unsafe methods outside /api are not pages', async () => {
    const r = await server.api().get('/api/nothing-here');
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'NOT_FOUND');
    assert.match(r.body.error.message, /GET \/api\/nothing-here/);
    const post = await server.api().post('/', {});
    assert.equal(post.status, 404);
    assert.equal(post.body.error.code, 'NOT_FOUND');
  });

  it('without a built dashboard, / says how to build it (503) while the API answers', async () => {
    const r = await get(unbuilt.url + '/');
    assert.equal(r.status, 503);
    assert.match(r.body.toString(), /npm run build:web/);
    assert.equal((await unbuilt.api().get('/api/health')).status, 200);
  });

  const builtPage = path.resolve(new URL('../../dist/web/index.html', import.meta.url).pathname);
  it(
    "the built dashboard's page references only its own assets (no inline script, which the policy would block)",
    { skip: existsSync(builtPage) ? false : 'the dashboard is not built here (npm run build:web)' },
    () => {
      const html = readFileSync(builtPage, 'utf8');
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'an inline <script>');
      for (const m of html.matchAll(/(?:src|href)="([^"]+)"/g)) assert.ok(m[1]!.startsWith('/assets/') || m[1]!.startsWith('data:'), m[1]);
    },
  );
});
