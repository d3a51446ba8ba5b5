import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import { existsSync, lstatSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { EdgeServer, type EdgeTarget } from '../../src/edge/proxy.js';
import { RequestLog, type RequestEntry } from '../../src/edge/requests.js';
import { compileRules, type RuleRow } from '../../src/edge/rules.js';
import { cacheControlFor, isFingerprinted, looksLikeHash, prepareStaticSite, type PreparedSite } from '../../src/edge/static-site.js';
import { createLogger } from '../../src/lib/logger.js';

// ---- the fingerprint heuristic

test('fingerprinted names: Vite, CRA, Angular, Astro, esbuild, webpack, Next and SvelteKit folders', () => {
  for (const p of [
    '/assets/index-B3xk9a_Q.js',
    '/assets/index-B3xk9a_Q.js.map',
    '/assets/vendor-Dq-4xk9a.js',
    '/assets/my-component-TndHTXKY.css',
    '/static/js/main.3f2a1b4c.js',
    '/static/js/787.3f2a1b4c.chunk.js',
    '/static/css/main.3f2a1b4c.css',
    '/main.1a2b3c4d5e6f7a8b.js',
    '/polyfills.9f8e7d6c5b4a3210.js',
    '/_astro/x.BkL9aQx1.css',
    '/_astro/Layout.astro_astro_type_script_index_0_lang.Cj8p2ZfA.js',
    '/_nuxt/Cj8p2ZfA.js',
    '/build/_shared/chunk-ZGZGH5PW.js',
    '/3f2a1b4c5d6e7f8091a2.js',
    '/_next/static/chunks/pages/_app.js',
    '/_next/static/abcdef/_buildManifest.js',
    '/_app/immutable/entry/start.js',
  ]) {
    assert.ok(isFingerprinted(p), p);
  }
});

test('ordinary names are not fingerprinted', () => {
  for (const p of [
    '/favicon.ico',
    '/robots.txt',
    '/logo-dark.svg',
    '/main.js',
    '/index.html',
    '/404.html',
    '/apple-touch-icon.png',
    '/android-chrome-192x192.png',
    '/og-image-1200x630.png',
    '/site.webmanifest',
    '/sitemap-0.xml',
    '/fonts/Roboto-Regular.woff2',
    '/fonts/NotoSans-BoldItalic.ttf',
    '/vendor/jquery-3.7.1.min.js',
    '/react-dom.production.min.js',
    '/data-20240101.json',
    '/IMG_20240101_123456.jpg',
    '/HomePage.js',
    '/icons/logo-darkMode.svg',
    '/case-iPhone12.png',
    '/serviceWorker.js',
    '/bg-1920x1080.jpg',
    '/report-v2beta10.pdf',
    '/blog/2024-01-01-hello-world.html',
    '/LICENSE',
    '/.htaccess',
    '/_nuxt/builds/latest.json',
  ]) {
    assert.ok(!isFingerprinted(p), p);
  }
});

test('looksLikeHash: hex needs a digit and a letter, mixed case needs to look random', () => {
  assert.ok(looksLikeHash('3f2a1b4c'));
  assert.ok(!looksLikeHash('20240101'), 'a date');
  assert.ok(!looksLikeHash('deadbeefcafe'.replace(/\d/g, '')), 'hex letters only');
  assert.ok(!looksLikeHash('3f2a1b4'), 'too short');
  assert.ok(looksLikeHash('B3xk9a_Q'));
  assert.ok(!looksLikeHash('darkMode'));
  assert.ok(!looksLikeHash('HomePage', true));
  assert.ok(looksLikeHash('ZGZGH5PW'), 'esbuild base32');
  assert.ok(!looksLikeHash('ZGZGH5PW', true), 'base32 is not taken for a whole name');
});

test('cacheControlFor: HTML revalidates, fingerprinted assets are immutable, the rest revalidate', () => {
  assert.equal(cacheControlFor('index.html'), 'no-cache');
  assert.equal(cacheControlFor('about/index-B3xk9a_Q.html'), 'no-cache', 'HTML is never immutable');
  assert.equal(cacheControlFor('assets/index-B3xk9a_Q.js'), 'public, max-age=31536000, immutable');
  assert.equal(cacheControlFor('robots.txt'), 'public, max-age=0, must-revalidate');
});

// ---- prepareStaticSite and the edge serving its folder

let tmp: string;
let build: string;
let site: string;
let bareSite: string;
let prepared: PreparedSite;
let hasFifo = false;
const SECRET = 'TOP-SECRET-OUTSIDE-THE-BUILD';
const indexHtml = '<!doctype html><html><head><title>Home</title></head><body>' + '<p>Welcome to the static site.</p>\n'.repeat(80) + '</body></html>\n';
const appJs = 'export function hello(name) { return "hello " + name; }\n'.repeat(300);
const dataBin = crypto.randomBytes(1000);
const BIG = 32 * 1024 * 1024;

let edge: EdgeServer;
let port: number;
const requests = new RequestLog(50);
let upstreamAsked = 0;
const rule = (kind: string, config: object, p: string | null = null): RuleRow => ({ id: kind, kind, enabled: 1, path: p, config: JSON.stringify(config) });

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'berth-static-'));
  build = path.join(tmp, 'build');
  const w = async (rel: string, body: string | Buffer) => {
    await mkdir(path.dirname(path.join(build, rel)), { recursive: true });
    await writeFile(path.join(build, rel), body);
  };
  await w('index.html', indexHtml);
  await w('about.html', '<h1>About</h1>');
  await w('docs/index.html', '<h1>Docs</h1>');
  await w('404.html', '<h1>Custom 404</h1>');
  await w('assets/index-B3xk9a_Q.js', appJs);
  await w('assets/logo-dark.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await w('robots.txt', 'User-agent: *\n');
  await w('data.bin', dataBin);
  // The build's own variant is kept as it is; a folder named like a variant is never written over.
  await w('prebuilt.css', 'body { color: red; }\n'.repeat(100));
  await w('prebuilt.css.gz', zlib.gzipSync('body { color: red; }\n'.repeat(100), { level: 1 }));
  await w('odd.js.br/keep.txt', 'a folder named like a variant');
  await w('odd.js', 'let x = 1;\n'.repeat(200));
  await w('big.bin', Buffer.alloc(BIG));
  await w('.env', `SECRET=${SECRET}\n`);
  await w('.git/config', '[core]\n');
  await w('.well-known/security.txt', 'Contact: mailto:security@example.com\n');
  await w('with space %.txt', 'odd name');
  await writeFile(path.join(tmp, 'outside.txt'), SECRET);
  await mkdir(path.join(tmp, 'outside-dir'));
  await writeFile(path.join(tmp, 'outside-dir', 'x.txt'), SECRET);
  await symlink(path.join(tmp, 'outside.txt'), path.join(build, 'secret-link.txt'));
  await symlink(path.join(tmp, 'outside-dir'), path.join(build, 'linkdir'));
  try {
    execFileSync('mkfifo', [path.join(build, 'pipe.txt')]);
    hasFifo = true;
  } catch {
    /* no mkfifo here: the FIFO case is not covered */
  }
  site = path.join(tmp, 'sites', 'd1');
  prepared = await prepareStaticSite(build, site);

  const bareBuild = path.join(tmp, 'bare-build');
  await mkdir(bareBuild);
  await writeFile(path.join(bareBuild, 'index.html'), '<h1>Bare</h1>');
  bareSite = path.join(tmp, 'sites', 'bare');
  await prepareStaticSite(bareBuild, bareSite);

  const deny = compileRules([rule('allow-deny', { action: 'deny', cidrs: ['127.0.0.0/8', '::1/128'] }, '/private')]);
  const targets: Record<string, EdgeTarget> = {
    'spa.test': { projectId: 'spa', unavailable: null, rules: [], static: { root: site, spa: true, cleanUrls: false } },
    'plain.test': { projectId: 'plain', unavailable: null, rules: deny, static: { root: site, spa: false, cleanUrls: false } },
    'clean.test': { projectId: 'clean', unavailable: null, rules: [], static: { root: site, spa: false, cleanUrls: true } },
    'bare.test': { projectId: 'bare', unavailable: null, rules: [], static: { root: bareSite, spa: false, cleanUrls: false } },
  };
  edge = new EdgeServer(
    {
      lookup: (host) => targets[host] ?? null,
      upstream: () => {
        upstreamAsked++;
        throw new Error('a static site has no upstream');
      },
    },
    requests,
    createLogger('silent'),
  );
  port = (await edge.listen('127.0.0.1', 0)).port;
});

after(async () => {
  await edge?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const projectOf: Record<string, string> = { 'spa.test': 'spa', 'plain.test': 'plain', 'clean.test': 'clean', 'bare.test': 'bare' };
/** Every request-log entry per project, in the order recorded, and how many requests each was sent. */
const logged: Record<string, RequestEntry[]> = {};
const sent: Record<string, number> = {};
for (const pid of Object.values(projectOf)) {
  logged[pid] = [];
  sent[pid] = 0;
  requests.subscribe(pid, (e) => logged[pid]!.push(e));
}

/** Counts one more request to the project; answers its number (1-based). */
function countRequest(pid: string): number {
  return ++sent[pid]!;
}

/**
 * The log entry of the project's `n`th request. Entries are recorded when the response is done,
 * which may be just after the client has it all: this waits for it.
 */
async function entryOf(pid: string, n: number): Promise<RequestEntry> {
  for (let i = 0; i < 200 && logged[pid]!.length < n; i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(logged[pid]!.length >= n, `request ${n} of ${pid} was logged`);
  return logged[pid]![n - 1]!;
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The request log's entry for this request. */
  entry: RequestEntry;
}

/** One request to the edge (sequential within this file, so each project's entries come in request order). */
async function request(host: string, p: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const pid = projectOf[host]!;
  const n = countRequest(pid);
  const reply = await new Promise<Omit<Reply, 'entry'>>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: opts.method ?? 'GET', headers: { host, ...opts.headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  return { ...reply, entry: await entryOf(pid, n) };
}

test('prepareStaticSite copies regular files and folders only, and precompresses what is worth it', async () => {
  const expected = ['index.html', 'about.html', 'docs/index.html', '404.html', 'assets/index-B3xk9a_Q.js', 'assets/logo-dark.svg', 'robots.txt', 'data.bin', 'big.bin', '.well-known/security.txt', 'with space %.txt', 'prebuilt.css', 'prebuilt.css.gz', 'odd.js.br/keep.txt', 'odd.js'];
  assert.equal(prepared.files, expected.length);
  let bytes = 0;
  for (const rel of expected) bytes += (await stat(path.join(build, rel))).size;
  assert.equal(prepared.bytes, bytes);
  assert.equal(prepared.skipped, hasFifo ? 3 : 2, 'two symlinks (and a FIFO) left out');
  assert.equal(prepared.hidden, 2, '.env and .git left out (never served)');
  assert.ok(!existsSync(path.join(site, '.env')) && !existsSync(path.join(site, '.git')));
  for (const rel of expected) assert.deepEqual(await readFile(path.join(site, rel)), await readFile(path.join(build, rel)), rel);
  // Symlinks and FIFOs are not in the copy at all (lstat: not even as links).
  for (const rel of ['secret-link.txt', 'linkdir', 'pipe.txt']) assert.ok(!existsSync(path.join(site, rel)) && !lstatSafe(path.join(site, rel)), rel);
  // Variants: brotli and gzip beside large compressible files, smaller, decoding to the file; none for small or binary ones.
  for (const rel of ['index.html', 'assets/index-B3xk9a_Q.js']) {
    const orig = await readFile(path.join(site, rel));
    const br = await readFile(path.join(site, rel + '.br'));
    const gz = await readFile(path.join(site, rel + '.gz'));
    assert.ok(br.length < orig.length && gz.length < orig.length, rel);
    assert.deepEqual(zlib.brotliDecompressSync(br), orig);
    assert.deepEqual(zlib.gunzipSync(gz), orig);
    const m = (await stat(path.join(site, rel))).mtimeMs;
    assert.equal(Math.floor((await stat(path.join(site, rel + '.br'))).mtimeMs), Math.floor(m), 'a variant has the mtime of its file');
  }
  assert.ok(existsSync(path.join(site, 'prebuilt.css.br')), 'the missing variant is made');
  assert.deepEqual(await readFile(path.join(site, 'prebuilt.css.gz')), await readFile(path.join(build, 'prebuilt.css.gz')), "the build's own .gz is kept");
  assert.ok(existsSync(path.join(site, 'odd.js.gz')) && lstatSync(path.join(site, 'odd.js.br')).isDirectory());
  for (const rel of ['about.html', 'robots.txt', 'assets/logo-dark.svg', 'data.bin']) {
    assert.ok(!existsSync(path.join(site, rel + '.br')) && !existsSync(path.join(site, rel + '.gz')), rel);
  }
});

function lstatSafe(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

test('prepareStaticSite refuses a missing folder, a file, a symlinked folder, a non-empty or overlapping destination', async () => {
  await assert.rejects(prepareStaticSite(path.join(tmp, 'nope'), path.join(tmp, 'out1')), /does not exist/);
  await assert.rejects(prepareStaticSite(path.join(tmp, 'outside.txt'), path.join(tmp, 'out2')), /not a folder/);
  await symlink(build, path.join(tmp, 'build-link'));
  await assert.rejects(prepareStaticSite(path.join(tmp, 'build-link'), path.join(tmp, 'out3')), /symbolic link/);
  await assert.rejects(prepareStaticSite(path.join(tmp, 'build-link') + '/', path.join(tmp, 'out3')), /symbolic link/, 'a trailing slash does not follow the link');
  // A parent of `from` that is a link: refused when `within` names the workspace.
  const ws = path.join(tmp, 'ws');
  await mkdir(ws);
  await symlink(build, path.join(ws, 'out'));
  await assert.rejects(prepareStaticSite(path.join(ws, 'out', 'docs'), path.join(tmp, 'out3'), { within: ws }), /leads outside/);
  await assert.rejects(prepareStaticSite(build, site), /not empty/);
  await assert.rejects(prepareStaticSite(build, path.join(build, 'inner')), /overlap/);
  for (const out of ['out1', 'out2', 'out3']) assert.ok(!existsSync(path.join(tmp, out)), out);
  assert.ok(!existsSync(path.join(build, 'inner')));
});

test('prepareStaticSite is bounded: too many files or too deep a tree throws and leaves nothing', async () => {
  await assert.rejects(prepareStaticSite(build, path.join(tmp, 'out-few'), { maxFiles: 3 }), /more than 3 files/);
  assert.ok(!existsSync(path.join(tmp, 'out-few')));
  const deep = path.join(tmp, 'deep');
  await mkdir(path.join(deep, 'a', 'b', 'c'), { recursive: true });
  await assert.rejects(prepareStaticSite(deep, path.join(tmp, 'out-deep'), { maxDepth: 2 }), /deeper than 2/);
  assert.ok(!existsSync(path.join(tmp, 'out-deep')));
});

test('a static site is served with validators, Content-Type, nosniff and no-cache for HTML; the request log records it', async () => {
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
  assert.equal(upstreamAsked, 0, 'no upstream is asked for a static site');
  assert.equal(edge.openConnections('plain'), 0);
});

test('If-None-Match and If-Modified-Since answer 304 without a body', async () => {
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
  const js = await request('plain.test', '/assets/index-B3xk9a_Q.js');
  assert.equal(js.status, 200);
  assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.equal(js.headers['content-type'], 'application/javascript; charset=utf-8');
  const svg = await request('plain.test', '/assets/logo-dark.svg');
  assert.equal(svg.headers['cache-control'], 'public, max-age=0, must-revalidate');
  assert.equal(svg.headers['content-type'], 'image/svg+xml');
});

test('brotli and gzip are sent when accepted, with the original Content-Type, Vary and an ETag of their own', async () => {
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

test('a symlink in the build output to a file or folder outside is neither copied nor served', async () => {
  for (const p of ['/secret-link.txt', '/linkdir/x.txt', '/linkdir/', '/pipe.txt']) {
    for (const host of ['plain.test', 'spa.test']) {
      const r = await request(host, p);
      assert.ok(r.status === 404 || (host === 'spa.test' && p === '/linkdir/'), `${host}${p}: ${r.status}`);
      assert.ok(!r.body.toString().includes(SECRET), p);
    }
  }
});

test('route rules apply to a static site: a deny rule answers 403, logged', async () => {
  const r = await request('plain.test', '/private/report.txt');
  assert.equal(r.status, 403);
  assert.match(r.body.toString(), /Forbidden/);
  assert.equal(r.entry.status, 403);
  assert.equal(r.entry.path, '/private/report.txt');
  assert.equal((await request('spa.test', '/private/report')).status, 200, 'another project without the rule: SPA index');
});

test('an upgrade request to a static site answers a 400 page and closes', async () => {
  const n = countRequest('plain');
  const sock = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write('GET /socket HTTP/1.1\r\nHost: plain.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  let text = '';
  sock.on('data', (d) => (text += d));
  await new Promise<void>((r) => sock.once('close', () => r()));
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.match(text, /content-type: text\/html/i);
  assert.match(text, /static site/);
  const entry = await entryOf('plain', n);
  assert.equal(entry.status, 400);
  assert.equal(entry.path, '/socket');
  assert.equal(edge.openConnections('plain'), 0);
});

test('a file being sent counts as an open request; a client that goes away ends it, logged with the bytes sent', async () => {
  const n = countRequest('plain');
  await new Promise<void>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/big.bin', headers: { host: 'plain.test' }, agent: false }, (res) => {
      assert.equal(res.headers['content-length'], String(BIG));
      res.once('data', () => {
        res.pause();
        setTimeout(() => {
          try {
            assert.equal(edge.openConnections('plain'), 1, 'open while the body is sent');
            req.destroy();
            resolve();
          } catch (e) {
            reject(e);
          }
        }, 30);
      });
    });
    req.on('error', () => {});
  });
  const entry = await entryOf('plain', n);
  assert.equal(entry.status, 200);
  assert.ok(entry.bytes > 0 && entry.bytes < BIG, `bytes sent: ${entry.bytes}`);
  for (let i = 0; i < 100 && edge.openConnections('plain') > 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(edge.openConnections('plain'), 0);
});
