/**
 * The build cache's own rules (contract section 21) on real files: where each package manager is
 * pointed, the cap (BERTH_BUILD_CACHE_MB) cutting least recently used files first without following a
 * link, and what a preview's first build starts from. The builds themselves: test/deployments/build-cache.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config.js';
import { cacheEnv, closeBuildCache, environmentCacheDir, mb, openBuildCache, pruneCache } from '../../src/runtime/build-cache.js';
import { tempDir } from '../support/harness.js';

let root: string;
before(() => {
  root = tempDir('berth-cache-unit-');
});
after(() => rmSync(root, { recursive: true, force: true }));

function file(p: string, bytes: number, usedAt: string): string {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, Buffer.alloc(bytes, 7));
  utimesSync(p, new Date(usedAt), new Date(usedAt));
  return p;
}

describe('build cache', () => {
  it('is 2048 MB per project by default; BERTH_BUILD_CACHE_MB takes a whole number of MB (0: no cache)', () => {
    const load = (env: Record<string, string>) => loadConfig({ dataDir: '/tmp/berth-config-test' }, env);
    assert.equal(load({}).buildCacheMb, 2048);
    assert.equal(load({ BERTH_BUILD_CACHE_MB: '0' }).buildCacheMb, 0);
    for (const bad of ['-1', '1.5', 'lots']) {
      assert.throws(() => load({ BERTH_BUILD_CACHE_MB: bad }), (e: Error) => e instanceof ConfigError && e.message.includes('BERTH_BUILD_CACHE_MB'), bad);
    }
  });

  it("points each runtime's package managers at their folder of the cache, pnpm and yarn only when the plan uses them", () => {
    assert.deepEqual(cacheEnv('/cache', 'node'), { npm_config_cache: '/cache/npm' });
    assert.equal(cacheEnv('/cache', 'node', [{ name: 'pnpm' }]).npm_config_store_dir, '/cache/pnpm');
    assert.equal(cacheEnv('/cache', 'node', [{ name: 'yarn', version: '1.22.22' }]).YARN_CACHE_FOLDER, '/cache/yarn');
    assert.deepEqual(Object.keys(cacheEnv('/cache', 'node', [{ name: 'yarn', version: '4.5.0' }])), ['npm_config_cache', 'YARN_GLOBAL_FOLDER']);
    assert.equal(cacheEnv('/cache', 'bun').BUN_INSTALL_CACHE_DIR, '/cache/bun');
    assert.deepEqual(cacheEnv('/cache', 'python'), { npm_config_cache: '/cache/npm', PIP_CACHE_DIR: '/cache/pip', UV_CACHE_DIR: '/cache/uv', POETRY_CACHE_DIR: '/cache/poetry' });
    assert.deepEqual(cacheEnv('/cache', 'go'), { npm_config_cache: '/cache/npm', GOMODCACHE: '/cache/go/mod', GOCACHE: '/cache/go/build' });
    assert.equal(cacheEnv('/cache', 'rust').CARGO_HOME, '/cache/cargo');
    assert.equal(cacheEnv('/cache', 'ruby').BUNDLE_USER_CACHE, '/cache/bundler');
    assert.equal(cacheEnv('/cache', 'php').COMPOSER_CACHE_DIR, '/cache/composer');
  });

  it('cuts a project back to its cap least recently used first, across its environments, and removes a planted link without following it', async () => {
    const proj = path.join(root, 'prune');
    const outside = file(path.join(root, 'outside', 'keep-me'), 1024, '2000-01-01');
    const oldest = file(path.join(proj, 'feat', 'npm', 'oldest'), 300 * 1024, '2001-01-01');
    mkdirSync(path.join(proj, 'production', 'npm'), { recursive: true });
    symlinkSync(outside, path.join(proj, 'production', 'npm', 'link'));
    const older = file(path.join(proj, 'production', 'pip', 'older'), 300 * 1024, '2002-01-01');
    const recent = file(path.join(proj, 'production', 'npm', 'recent'), 300 * 1024, '2030-01-01');
    const removed = await pruneCache(proj, 400 * 1024);
    assert.equal(removed.files, 2);
    assert.ok(!existsSync(oldest) && !existsSync(older));
    assert.ok(existsSync(recent));
    // A link counts as a file of its own (its own times, its own blocks): what it points at is never measured or removed.
    assert.ok(lstatSync(path.join(proj, 'production', 'npm', 'link')).isSymbolicLink());
    assert.equal(readFileSync(outside).length, 1024);
    assert.equal((await pruneCache(proj, 0)).files, 2);
    assert.equal(readFileSync(outside).length, 1024);
    assert.deepEqual(await pruneCache(proj, 0), { files: 0, bytes: 0 });
  });

  it("starts a preview's first build from a copy of production's cache, then keeps the preview's own; says what it restored and saved", async () => {
    const dataDir = path.join(root, 'data');
    const spec = { dataDir, projectId: 'prj_a', identity: null, capMb: 10 };
    const lines: string[] = [];
    const note = (l: string) => lines.push(l);
    const prod = await openBuildCache({ ...spec, environment: 'production' }, note);
    assert.deepEqual(lines, ['cache: nothing to restore yet']);
    file(path.join(prod!.dir, 'npm', '_cacache', 'content'), 2 * 1024 * 1024, '2020-01-01');
    await closeBuildCache(prod, { ...spec, environment: 'production' }, note);
    assert.equal(lines.at(-1), 'cache: npm 2 MB saved');
    lines.length = 0;
    const preview = await openBuildCache({ ...spec, environment: 'feat' }, note);
    assert.deepEqual(lines, ['cache: npm 2 MB restored (from production)']);
    assert.equal(preview!.dir, environmentCacheDir(dataDir, 'prj_a', 'feat'));
    writeFileSync(path.join(preview!.dir, 'npm', 'own'), 'x');
    assert.ok(!existsSync(path.join(prod!.dir, 'npm', 'own')));
    assert.ok(lstatSync(path.join(preview!.dir, 'npm', '_cacache', 'content')).isFile());
    lines.length = 0;
    assert.equal(await openBuildCache({ ...spec, environment: 'feat', noCache: true }, note), null);
    assert.equal(await openBuildCache({ ...spec, environment: 'feat', capMb: 0 }, note), null);
    assert.deepEqual(lines, ['cache: not used (noCache): nothing restored, nothing saved', 'cache: off (BERTH_BUILD_CACHE_MB=0)']);
  });

  it('writes sizes as the log shows them', () => {
    assert.equal(mb(182 * 1024 * 1024), '182 MB');
    assert.equal(mb(4.24 * 1024 * 1024), '4.2 MB');
    assert.equal(mb(30 * 1024), '0.03 MB');
  });
});
