// @store-independent: files and hashes only, no database.
/**
 * Reused installs (contract section 21, issue 39 point 2) on real files: what the key of an install
 * depends on, which folders are never reused, what a kept install holds, and how the cache's cap treats
 * it (whole, before any cached file). The builds themselves: test/deployments/build-cache.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pruneCache } from '../../src/runtime/build-cache.js';
import { requirementPaths } from '../../src/runtime/build-reuse-kinds.js';
import { findKeptInstall, installKey, installKeyOf, installsDir, keepInstall, laterStepsTouchInstall, restoreInstall, type InstallKeyInput } from '../../src/runtime/build-reuse.js';
import { tempDir } from '../support/harness.js';

let root: string;
before(() => {
  root = tempDir('berth-reuse-unit-');
});
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A source folder with an app (package.json, lockfile) at `rel`; answers the key input. */
function app(files: Record<string, string> = {}, rel = ''): InstallKeyInput {
  const srcDir = path.join(root, `src-${++n}`);
  const appDir = path.join(srcDir, rel);
  const all = { 'package.json': JSON.stringify({ name: 'a', dependencies: { 'is-number': '7.0.0' } }), 'package-lock.json': '{"lockfileVersion":3}', ...files };
  for (const [name, text] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(appDir, name)), { recursive: true });
    writeFileSync(path.join(appDir, name), text);
  }
  return { srcDir, appDir, runtime: 'node', install: 'npm ci', runtimeVersion: '/usr/bin/node 1 2', tools: [], env: { NODE_ENV: 'production' } };
}

describe('reused installs: the key', () => {
  it('is the same for the same lockfile, package.json, command, runtime and variables, in another folder', async () => {
    assert.equal(await installKey(app()), await installKey(app()));
  });

  it('changes with the lockfile, the dependencies, the install command, the runtime, a tool version or a variable', async () => {
    const base = await installKey(app());
    const others = [
      await installKey(app({ 'package-lock.json': '{"lockfileVersion":3,"x":1}' })),
      await installKey(app({ 'package.json': JSON.stringify({ name: 'a', dependencies: { 'is-number': '7.0.1' } }) })),
      await installKey({ ...app(), install: 'npm install' }),
      await installKey({ ...app(), runtimeVersion: '/usr/bin/node 1 3' }),
      await installKey({ ...app(), tools: [{ name: 'pnpm', version: '9' }] }),
      await installKey({ ...app(), env: { NODE_ENV: 'development' } }),
    ];
    for (const k of others) assert.ok(k && k !== base);
    assert.equal(new Set(others).size, others.length);
  });

  it('is null (the install runs) without a lockfile, for a workspace, with node_modules or pnpm-workspace.yaml in the source, or for another runtime', async () => {
    const noLock = app();
    rmSync(path.join(noLock.appDir, 'package-lock.json'));
    assert.equal(await installKey(noLock), null);
    assert.equal(await installKey(app({ 'package.json': JSON.stringify({ name: 'a', workspaces: ['pkgs/*'] }) })), null);
    assert.equal(await installKey(app({ 'node_modules/x/index.js': '' })), null);
    assert.equal(await installKey(app({ 'pnpm-workspace.yaml': 'packages: []' })), null);
    assert.equal(await installKey({ ...app(), runtime: 'python' }), null);
    // An app below a folder with a package.json of its own (a workspace root installs for it).
    const nested = app({}, 'apps/web');
    writeFileSync(path.join(nested.srcDir, 'package.json'), '{}');
    assert.equal(await installKey(nested), null);
  });

  it('never follows a lockfile that is a link out of the source', async () => {
    const a = app();
    const outside = path.join(root, 'secret.json');
    writeFileSync(outside, '{"secret":true}');
    rmSync(path.join(a.appDir, 'package-lock.json'));
    symlinkSync(outside, path.join(a.appDir, 'package-lock.json'));
    assert.equal(await installKey(a), null);
  });
});

describe('reused installs: the kept copy', () => {
  it("keeps node_modules without .cache and with links as links, finds it by key (a preview: production's too) and copies it into a fresh app folder", async () => {
    const cacheDir = path.join(root, 'cache', 'p1', 'production');
    const a = app({ 'node_modules/is-number/index.js': 'module.exports = 1', 'node_modules/.cache/big': 'x', 'node_modules/.bin/.keep': '' });
    symlinkSync('../is-number/index.js', path.join(a.appDir, 'node_modules', '.bin', 'is-number'));
    assert.ok(await keepInstall(cacheDir, 'k1', a.appDir, null, undefined, 'dpl_1'));
    const kept = installsDir(cacheDir);
    assert.equal(readFileSync(path.join(kept, 'key'), 'utf8'), 'k1');
    assert.ok(!existsSync(path.join(kept, 'node_modules', '.cache')));
    assert.equal(await findKeptInstall(cacheDir, 'other'), null);
    assert.deepEqual(await findKeptInstall(cacheDir, 'k1'), { dir: kept, from: 'production', deployment: 'dpl_1' });
    assert.deepEqual(await findKeptInstall(path.join(root, 'cache', 'p1', 'feat'), 'k1'), { dir: kept, from: 'production', deployment: 'dpl_1' });

    const b = app();
    await restoreInstall(kept, b.appDir, null);
    assert.equal(readFileSync(path.join(b.appDir, 'node_modules', 'is-number', 'index.js'), 'utf8'), 'module.exports = 1');
    assert.equal(readFileSync(path.join(b.appDir, 'node_modules', '.bin', 'is-number'), 'utf8'), 'module.exports = 1');
    assert.equal(readlinkSync(path.join(b.appDir, 'node_modules', '.bin', 'is-number')), '../is-number/index.js', 'a link is copied as the link');
    await assert.rejects(restoreInstall(kept, b.appDir, null), /node_modules already/);
  });

  it("the cache's cap takes kept installs whole, least recently kept first, before any cached file", async () => {
    const project = path.join(root, 'cache', 'p2');
    const big = (p: string, mb: number) => {
      mkdirSync(path.dirname(p), { recursive: true });
      writeFileSync(p, Buffer.alloc(mb * 1024 * 1024, 1));
      utimesSync(p, new Date('2001-01-01'), new Date('2001-01-01'));
    };
    big(path.join(project, 'production', 'npm', 'old'), 1);
    big(path.join(project, '.installed', 'feat', 'node_modules', 'a', 'x'), 1);
    big(path.join(project, '.installed', 'feat', 'node_modules', 'b', 'y'), 1);
    big(path.join(project, '.installed', 'production', 'node_modules', 'a', 'x'), 1);
    utimesSync(path.join(project, '.installed', 'feat'), new Date('2010-01-01'), new Date('2010-01-01'));
    const removed = await pruneCache(project, 2.5 * 1024 * 1024);
    assert.equal(removed.files, 2);
    assert.ok(!existsSync(path.join(project, '.installed', 'feat')), 'the older kept install went whole');
    assert.ok(existsSync(path.join(project, '.installed', 'production', 'node_modules', 'a', 'x')));
    assert.ok(existsSync(path.join(project, 'production', 'npm', 'old')), 'the cached file stays: the cap holds without it');
  });
});

describe('reused installs: mounted or copied', () => {
  it('a later step that names node_modules or runs an install gets a copy (a mount point cannot be removed); a plain build is mounted', () => {
    for (const c of ['rm -rf node_modules && vite build', 'npm ci && npm run build', 'npm install', 'pnpm install --frozen-lockfile', 'yarn install', 'bun install', 'npm i -D sharp', 'yarn && yarn build']) {
      assert.equal(laterStepsTouchInstall(['tsc', c]), true, c);
    }
    for (const c of ['npm run build', 'rimraf dist && tsc', 'vite build', 'next build', 'yarn build', 'pnpm run build', 'bun run build']) {
      assert.equal(laterStepsTouchInstall([c]), false, c);
    }
  });
});

describe('reused installs: Python, Ruby and PHP', () => {
  /** A folder of `runtime` with `files`; answers the key input. */
  function other(runtime: string, files: Record<string, string>, install: string): InstallKeyInput {
    const srcDir = path.join(root, `src-${++n}`);
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(srcDir, name)), { recursive: true });
      writeFileSync(path.join(srcDir, name), text);
    }
    return { srcDir, appDir: srcDir, runtime, install, runtimeVersion: '/usr/bin/x 1 2', tools: [], env: {} };
  }
  const py = (files: Record<string, string> = {}) => other('python', { 'requirements.txt': './pkg\n', 'pkg/setup.py': 'v1', ...files }, 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt');

  it('the local paths a requirements.txt installs from, and none for one naming a path outside the source', () => {
    assert.deepEqual(requirementPaths('flask==3.0\n./pkg\n-e ../lib  # editable\n-r more.txt\nx @ file:./w.whl\ndist/a-1.0-py3-none-any.whl\nhttps://example.com/x.whl\n'), ['./pkg', '../lib', 'more.txt', './w.whl', 'dist/a-1.0-py3-none-any.whl']);
    assert.equal(requirementPaths('/opt/pkg\n'), null);
  });

  it("a venv's key changes with a local package's content; the folders are .venv; a process driver's build is not reused, said why", async () => {
    const a = await installKeyOf(py());
    assert.ok('key' in a && a.key === (await installKey(py())));
    assert.deepEqual('key' in a && a.folders, ['.venv']);
    assert.notEqual(await installKey(py({ 'pkg/setup.py': 'v2' })), 'key' in a && a.key);
    assert.match(String((await installKeyOf({ ...py(), samePathEachBuild: false }) as { why: string }).why), /path it was made at/);
    assert.match(String((await installKeyOf(py({ '.venv/x': '' })) as { why: string }).why), /\.venv is in the source/);
    const outside = py({ 'requirements.txt': '../../elsewhere\n' });
    assert.match(String((await installKeyOf(outside) as { why: string }).why), /cannot be hashed/);
  });

  it('Ruby keeps vendor/bundle and .bundle from Gemfile.lock; PHP keeps vendor and dumps the autoloader after a reuse', async () => {
    const rb = await installKeyOf(other('ruby', { Gemfile: "gem 'x'", 'Gemfile.lock': 'GEM\n' }, 'bundle install'));
    assert.deepEqual('key' in rb && rb.folders, ['vendor/bundle', '.bundle']);
    const php = await installKeyOf(other('php', { 'composer.json': '{}', 'composer.lock': '{"packages":[]}' }, 'composer install --no-dev --optimize-autoloader --no-interaction'));
    assert.ok('key' in php);
    assert.deepEqual(php.folders, ['vendor']);
    assert.equal(php.afterReuse, 'composer dump-autoload --no-interaction --no-dev --optimize');
    const noLock = await installKeyOf(other('php', { 'composer.json': '{}' }, 'composer install'));
    assert.match(String((noLock as { why: string }).why), /no lockfile \(composer\.lock\)/);
    const assets = await installKeyOf(other('ruby', { Gemfile: '', 'Gemfile.lock': '', 'package.json': '{}' }, 'bundle install && npm ci'));
    assert.match(String((assets as { why: string }).why), /package\.json/);
  });
});
