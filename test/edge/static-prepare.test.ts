/**
 * `prepareStaticSite` (contract section 17): a build output copied into a site folder with regular
 * files and folders only (no symlinks, FIFOs or dotfiles but /.well-known/), with brotli and gzip
 * variants of what is worth it, refusing what it cannot copy safely, bounded in files and depth. The
 * site is made by test/support/static-site.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync } from 'node:fs';
import { mkdir, readFile, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { prepareStaticSite } from '../../src/edge/static-site.js';
import { useStaticSite } from '../support/static-site.js';

const st = useStaticSite();

test('prepareStaticSite copies regular files and folders only, and precompresses what is worth it', async () => {
  const { build, site, prepared, hasFifo } = st;
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

test('prepareStaticSite refuses a missing folder, a file, a symlinked folder, a non-empty or overlapping destination', async () => {
  const { tmp, build, site } = st;
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
  const { tmp, build } = st;
  await assert.rejects(prepareStaticSite(build, path.join(tmp, 'out-few'), { maxFiles: 3 }), /more than 3 files/);
  assert.ok(!existsSync(path.join(tmp, 'out-few')));
  const deep = path.join(tmp, 'deep');
  await mkdir(path.join(deep, 'a', 'b', 'c'), { recursive: true });
  await assert.rejects(prepareStaticSite(deep, path.join(tmp, 'out-deep'), { maxDepth: 2 }), /deeper than 2/);
  assert.ok(!existsSync(path.join(tmp, 'out-deep')));
});

function lstatSafe(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
