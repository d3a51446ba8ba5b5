// @store-independent: files only, no database.
/**
 * The Server Actions key a Next.js build gets (docs/builds.md "Next.js's build cache"): kept in the
 * environment's `next` cache folder as Next.js keeps it outside containers (`.rscinfo`, 14 days), so a
 * build under the docker runtime (where Next.js would make a new key every build, and with it a new
 * webpack cache version) finds its compiler cache valid. Broken or expired files get a new key; a link
 * planted at the file's name is never followed.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { linkNextCache, NEXT_KEY_VARIABLE } from '../../src/runtime/build-framework-cache.js';
import { tempDir } from '../support/harness.js';

const root = tempDir('berth-next-key-');
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh app folder depending on `next` and a cache folder; links `.next/cache` and answers the key and the unlinker. */
async function link(cache: string): Promise<{ key: string; unlink: () => Promise<void> }> {
  const src = path.join(root, `src-${n++}`);
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, 'package.json'), JSON.stringify({ dependencies: { next: '15.5.0' } }));
  const r = await linkNextCache({ srcDir: src, appDir: src, hostCache: cache, insideCache: '/cache', identity: null });
  assert.ok(r, 'a Next.js app is linked');
  return { key: r.env[NEXT_KEY_VARIABLE]!, unlink: r.unlink };
}

const info = (cache: string) => JSON.parse(readFileSync(path.join(cache, 'next', '.rscinfo'), 'utf8')) as Record<string, unknown>;

test("a Next.js build gets the environment's kept key: made once (32 bytes, base64, 14 days) and the same for the next build", async () => {
  const cache = path.join(root, 'kept');
  mkdirSync(cache);
  const first = await link(cache);
  assert.match(first.key, /^[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(first.key, 'base64').length, 32);
  const kept = info(cache);
  assert.equal(kept['encryption.key'], first.key);
  const days = ((kept['encryption.expire_at'] as number) - Date.now()) / 86_400_000;
  assert.ok(days > 13.9 && days <= 14, `kept for 14 days (${days})`);
  await first.unlink();
  const second = await link(cache);
  assert.equal(second.key, first.key);
  await second.unlink();
  const other = path.join(root, 'other');
  mkdirSync(other);
  assert.notEqual((await link(other)).key, first.key, "another environment's cache has a key of its own");
});

test('an expired or broken key file gets a new key', async () => {
  const cache = path.join(root, 'expired');
  mkdirSync(path.join(cache, 'next'), { recursive: true });
  const old = Buffer.alloc(32, 7).toString('base64');
  writeFileSync(path.join(cache, 'next', '.rscinfo'), JSON.stringify({ 'encryption.key': old, 'encryption.expire_at': Date.now() - 1000 }));
  const fresh = (await link(cache)).key;
  assert.notEqual(fresh, old);
  assert.equal(info(cache)['encryption.key'], fresh);
  writeFileSync(path.join(cache, 'next', '.rscinfo'), '{not json');
  const again = (await link(cache)).key;
  assert.notEqual(again, fresh);
  assert.equal(info(cache)['encryption.key'], again);
});

test('a link at the key file is neither read nor written through: it is replaced by a file of its own', async () => {
  const cache = path.join(root, 'linked');
  mkdirSync(path.join(cache, 'next'), { recursive: true });
  const outside = path.join(root, 'outside.json');
  const planted = JSON.stringify({ 'encryption.key': Buffer.alloc(32, 1).toString('base64'), 'encryption.expire_at': Date.now() + 86_400_000 });
  writeFileSync(outside, planted);
  symlinkSync(outside, path.join(cache, 'next', '.rscinfo'));
  const key = (await link(cache)).key;
  assert.notEqual(key, Buffer.alloc(32, 1).toString('base64'), 'the linked file is not read');
  assert.equal(readFileSync(outside, 'utf8'), planted, 'nor written');
  assert.ok(lstatSync(path.join(cache, 'next', '.rscinfo')).isFile());
  assert.equal(info(cache)['encryption.key'], key);
});
