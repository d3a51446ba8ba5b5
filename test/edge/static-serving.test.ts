/**
 * The edge serving a prepared static site (contract section 17; site and edge from
 * test/support/static-site.ts): validators and conditional requests, cache headers, precompressed
 * variants, ranges, methods, SPA and 404 pages, cleanUrls and dotfiles.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { useStaticSite } from '../support/static-site.js';

const st = useStaticSite();

test('a static site is served with validators, Content-Type, nosniff and no-cache for HTML; the request log records it', async () => {
  const { indexHtml, site, edge, request } = st;
  const r = await request('plain.test', '/');
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), indexHtml);
  assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(r.headers['cache-control'], 'no-cache');
  assert.equal(r.headers['x-content-type-options'], 'nosniff');
  assert.equal(r.headers['vary'], 'Accept-Encoding');
  assert.equal(r.headers['content-encoding'], undefined);
  assert.ok(r.headers['etag']);
  assert.ok(r.headers['last-modified']);
  const e = r.entry;
  assert.equal(e.status, 200);
  assert.equal(e.bytes, Buffer.byteLength(indexHtml));
  assert.equal(e.path, '/');
  assert.equal(e.method, 'GET');
  assert.equal(st.upstreamAsked, 0, 'no upstream is asked for a static site');
  assert.equal(edge.openConnections('plain'), 0);
});

test('If-None-Match and If-Modified-Since answer 304 without a body', async () => {
  const { request } = st;
  const first = await request('plain.test', '/robots.txt');
  assert.equal(first.status, 200);
  const byTag = await request('plain.test', '/robots.txt', { headers: { 'if-none-match': first.headers['etag']! } });
  assert.equal(byTag.status, 304);
  assert.equal(byTag.body.length, 0);
  assert.equal(byTag.headers['etag'], first.headers['etag']);
  assert.equal(byTag.headers['cache-control'], 'public, max-age=0, must-revalidate');
  assert.equal(byTag.entry.status, 304);
  assert.equal(byTag.entry.bytes, 0);
  const byDate = await request('plain.test', '/robots.txt', { headers: { 'if-modified-since': first.headers['last-modified']! } });
  assert.equal(byDate.status, 304);
  const stale = await request('plain.test', '/robots.txt', { headers: { 'if-none-match': 'W/"nope"' } });
  assert.equal(stale.status, 200);
  const older = await request('plain.test', '/robots.txt', { headers: { 'if-modified-since': new Date(0).toUTCString() } });
  assert.equal(older.status, 200);
});

test('fingerprinted assets are immutable for a year; ordinary files revalidate', async () => {
  const { request } = st;
  const js = await request('plain.test', '/assets/index-B3xk9a_Q.js');
  assert.equal(js.status, 200);
  assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.equal(js.headers['content-type'], 'application/javascript; charset=utf-8');
  const svg = await request('plain.test', '/assets/logo-dark.svg');
  assert.equal(svg.headers['cache-control'], 'public, max-age=0, must-revalidate');
  assert.equal(svg.headers['content-type'], 'image/svg+xml');
});

test('brotli and gzip are sent when accepted, with the original Content-Type, Vary and an ETag of their own', async () => {
  const { indexHtml, appJs, request } = st;
  const plain = await request('plain.test', '/assets/index-B3xk9a_Q.js');
  const br = await request('plain.test', '/assets/index-B3xk9a_Q.js', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
  assert.equal(br.status, 200);
  assert.equal(br.headers['content-encoding'], 'br');
  assert.equal(br.headers['content-type'], 'application/javascript; charset=utf-8');
  assert.equal(br.headers['vary'], 'Accept-Encoding');
  assert.equal(br.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.ok(br.body.length < appJs.length);
  assert.equal(zlib.brotliDecompressSync(br.body).toString(), appJs);
  assert.equal(br.entry.bytes, br.body.length, 'the log counts the bytes sent');
  const gz = await request('plain.test', '/assets/index-B3xk9a_Q.js', { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.equal(zlib.gunzipSync(gz.body).toString(), appJs);
  const none = await request('plain.test', '/assets/index-B3xk9a_Q.js', { headers: { 'accept-encoding': 'br;q=0, gzip;q=0' } });
  assert.equal(none.headers['content-encoding'], undefined);
  assert.equal(none.body.toString(), appJs);
  const tags = new Set([plain.headers['etag'], br.headers['etag'], gz.headers['etag']]);
  assert.equal(tags.size, 3, 'each variant has its own ETag');
  // A conditional request with the brotli ETag revalidates the brotli variant.
  const again = await request('plain.test', '/assets/index-B3xk9a_Q.js', { headers: { 'accept-encoding': 'br', 'if-none-match': br.headers['etag']! } });
  assert.equal(again.status, 304);
  assert.equal(again.headers['vary'], 'Accept-Encoding');
  // HTML too; a small file has no variant and is sent as it is.
  const html = await request('plain.test', '/', { headers: { 'accept-encoding': 'br' } });
  assert.equal(html.headers['content-encoding'], 'br');
  assert.equal(zlib.brotliDecompressSync(html.body).toString(), indexHtml);
  // No .br (a folder holds the name): the .gz is the next choice.
  const odd = await request('plain.test', '/odd.js', { headers: { 'accept-encoding': 'br, gzip' } });
  assert.equal(odd.headers['content-encoding'], 'gzip');
  assert.equal(zlib.gunzipSync(odd.body).toString(), 'let x = 1;\n'.repeat(200));
  const small = await request('plain.test', '/robots.txt', { headers: { 'accept-encoding': 'br, gzip' } });
  assert.equal(small.headers['content-encoding'], undefined);
  assert.equal(small.headers['vary'], undefined);
});

test('Range requests answer 206 with Content-Range, and 416 outside the file', async () => {
  const { dataBin, request } = st;
  const r = await request('plain.test', '/data.bin', { headers: { range: 'bytes=10-19' } });
  assert.equal(r.status, 206);
  assert.equal(r.headers['content-range'], 'bytes 10-19/1000');
  assert.equal(r.headers['accept-ranges'], 'bytes');
  assert.deepEqual(r.body, dataBin.subarray(10, 20));
  assert.equal(r.entry.status, 206);
  assert.equal(r.entry.bytes, 10);
  const tail = await request('plain.test', '/data.bin', { headers: { range: 'bytes=-5' } });
  assert.deepEqual(tail.body, dataBin.subarray(995));
  const out = await request('plain.test', '/data.bin', { headers: { range: 'bytes=5000-6000' } });
  assert.equal(out.status, 416);
  assert.equal(out.headers['content-range'], 'bytes */1000');
  assert.equal(out.entry.status, 416);
});

test('HEAD answers the headers without a body; other methods get 405 with Allow', async () => {
  const { request } = st;
  const h = await request('plain.test', '/robots.txt', { method: 'HEAD' });
  assert.equal(h.status, 200);
  assert.equal(h.headers['content-length'], String('User-agent: *\n'.length));
  assert.equal(h.body.length, 0);
  assert.equal(h.entry.method, 'HEAD');
  assert.equal(h.entry.bytes, 0);
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
    const r = await request('plain.test', '/robots.txt', { method });
    assert.equal(r.status, 405, method);
    assert.equal(r.headers['allow'], 'GET, HEAD');
    assert.match(r.body.toString(), /GET and HEAD/);
    assert.equal(r.entry.status, 405);
  }
});

test('SPA: a path with no file and no extension answers index.html; a missing asset the site 404.html', async () => {
  const { indexHtml, request } = st;
  const route = await request('spa.test', '/users/42/settings?tab=1');
  assert.equal(route.status, 200);
  assert.equal(route.body.toString(), indexHtml);
  assert.equal(route.headers['cache-control'], 'no-cache');
  assert.equal(route.entry.path, '/users/42/settings');
  const slash = await request('spa.test', '/users/');
  assert.equal(slash.status, 200);
  assert.equal(slash.body.toString(), indexHtml);
  const asset = await request('spa.test', '/assets/missing-B3xk9a_Q.js');
  assert.equal(asset.status, 404);
  assert.equal(asset.body.toString(), '<h1>Custom 404</h1>');
  assert.equal(asset.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(asset.entry.status, 404);
});

test('no SPA: a missing file answers the site 404.html with 404 (never 304 or 206), or Berth 404 page without one', async () => {
  const { edge, request } = st;
  const r = await request('plain.test', '/nope');
  assert.equal(r.status, 404);
  assert.equal(r.body.toString(), '<h1>Custom 404</h1>');
  assert.equal(r.headers['etag'], undefined);
  const cond = await request('plain.test', '/nope', { headers: { 'if-none-match': '*', range: 'bytes=0-1' } });
  assert.equal(cond.status, 404);
  assert.equal(cond.body.toString(), '<h1>Custom 404</h1>');
  const bare = await request('bare.test', '/nope');
  assert.equal(bare.status, 404);
  assert.match(bare.body.toString(), /Not found/);
  assert.match(bare.body.toString(), /Berth edge/);
  assert.equal(bare.entry.status, 404);
  assert.equal(bare.entry.bytes, bare.body.length);
});

test('cleanUrls: /about serves about.html, a folder its index.html, and /about.html redirects 308 keeping the query', async () => {
  const { request } = st;
  const about = await request('clean.test', '/about');
  assert.equal(about.status, 200);
  assert.equal(about.body.toString(), '<h1>About</h1>');
  assert.equal(about.headers['content-type'], 'text/html; charset=utf-8');
  for (const p of ['/docs', '/docs/']) {
    const docs = await request('clean.test', p);
    assert.equal(docs.status, 200, p);
    assert.equal(docs.body.toString(), '<h1>Docs</h1>');
  }
  const red = await request('clean.test', '/about.html?x=1&y=2');
  assert.equal(red.status, 308);
  assert.equal(red.headers['location'], '/about?x=1&y=2');
  const idx = await request('clean.test', '/docs/index.html');
  assert.equal(idx.status, 308);
  assert.equal(idx.headers['location'], '/docs/');
  const root = await request('clean.test', '/index.html?a');
  assert.equal(root.headers['location'], '/?a');
  assert.equal(red.entry.status, 308);
  assert.equal(red.entry.path, '/about.html');
  // Without cleanUrls: /about.html is served, /about is missing, /docs redirects to /docs/.
  assert.equal((await request('plain.test', '/about.html')).status, 200);
  assert.equal((await request('plain.test', '/about')).status, 404);
  const dir = await request('plain.test', '/docs?q=1');
  assert.equal(dir.status, 301);
  assert.equal(dir.headers['location'], '/docs/?q=1');
});

test('dotfiles are hidden except under /.well-known/; names are decoded; bad paths are refused', async () => {
  const { SECRET, site, edge, request } = st;
  // prepareStaticSite leaves dotfiles out; the edge hides them anyway (a folder filled otherwise).
  await writeFile(path.join(site, '.env'), `SECRET=${SECRET}\n`);
  await mkdir(path.join(site, '.hidden'));
  await writeFile(path.join(site, '.hidden', 'x.txt'), SECRET);
  await writeFile(path.join(site, '.well-known', '.secret'), SECRET);
  for (const p of ['/.hidden/x.txt', '/.well-known/.secret']) {
    const r = await request('plain.test', p);
    assert.equal(r.status, 404, p);
    assert.ok(!r.body.toString().includes(SECRET));
  }
  for (const host of ['plain.test', 'spa.test']) {
    const env = await request(host, '/.env');
    assert.equal(env.status, 404, host);
    assert.ok(!env.body.toString().includes(SECRET));
    assert.equal(env.body.toString(), '<h1>Custom 404</h1>', 'not the SPA index either');
  }
  const wk = await request('plain.test', '/.well-known/security.txt');
  assert.equal(wk.status, 200);
  assert.match(wk.body.toString(), /Contact:/);
  const odd = await request('plain.test', '/with%20space%20%25.txt');
  assert.equal(odd.status, 200);
  assert.equal(odd.body.toString(), 'odd name');
  const bad = await request('plain.test', '/%FF.txt');
  assert.equal(bad.status, 400);
  const nul = await request('plain.test', '/a%00b');
  assert.equal(nul.status, 400);
  const up = await request('plain.test', '/assets/../../outside.txt');
  assert.notEqual(up.status, 200);
  assert.ok(!up.body.toString().includes(SECRET));
});
