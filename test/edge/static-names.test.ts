// @store-independent: a pure function of file names, no database.
/**
 * Which static files are fingerprinted (immutable for a year) and the Cache-Control each gets
 * (contract section 17): the name heuristic over the common bundlers' outputs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheControlFor, isFingerprinted, looksLikeHash } from '../../src/edge/static-site.js';

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
