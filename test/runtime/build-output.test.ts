// @store-independent: files and hashes only, no database.
/**
 * Reused outputs (issue 39): what the key of a build's output depends on (the source tree, the plan),
 * what the environment's record must name to be reused, and the linked copy a reused release is. The
 * builds themselves: test/deployments/build-cache.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findKeptOutput, keptOutputFor, linkTree, rememberOutput, sourceTreeHash } from '../../src/runtime/build-output.js';
import { tempDir } from '../support/harness.js';

let root: string;
before(() => {
  root = tempDir('berth-output-unit-');
});
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function tree(files: Record<string, string> = {}): string {
  const dir = path.join(root, `t-${++n}`);
  for (const [name, text] of Object.entries({ 'package.json': '{}', 'src/a.js': 'a', ...files })) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('reused outputs: the source tree hash', () => {
  it('is the same for the same files in another folder, and changes with a file, a name, an added file, a mode or a link target', async () => {
    const base = await sourceTreeHash(tree());
    assert.equal(await sourceTreeHash(tree()), base);
    assert.notEqual(await sourceTreeHash(tree({ 'src/a.js': 'b' })), base);
    assert.notEqual(await sourceTreeHash(tree({ 'src/b.js': '' })), base);
    const exec = tree();
    chmodSync(path.join(exec, 'src/a.js'), 0o755);
    assert.notEqual(await sourceTreeHash(exec), base);
    const l1 = tree();
    symlinkSync('a.js', path.join(l1, 'src/l'));
    const l2 = tree();
    symlinkSync('/etc/passwd', path.join(l2, 'src/l'));
    assert.notEqual(await sourceTreeHash(l1), await sourceTreeHash(l2));
  });

  it('leaves out the top-level folders it is told to (a git source: .git)', async () => {
    const withGit = tree({ '.git/HEAD': 'x' });
    assert.equal(await sourceTreeHash(withGit, ['.git']), await sourceTreeHash(tree()));
    assert.notEqual(await sourceTreeHash(withGit), await sourceTreeHash(tree()));
  });
});

describe("reused outputs: the environment's record", () => {
  it('finds the last ready output only for the same key and while its folder is there; a preview has its own', async () => {
    const cacheDir = path.join(root, 'build-cache', 'p1', 'production');
    mkdirSync(cacheDir, { recursive: true });
    const release = tree();
    const hash = (await sourceTreeHash(release))!;
    const first = (await keptOutputFor(cacheDir, hash, { start: 'node a.js' }))!;
    assert.equal(first.kept, null);
    await rememberOutput(cacheDir, { key: first.key, deploymentId: 'd1', kind: 'folder', dir: release });
    assert.equal((await keptOutputFor(cacheDir, hash, { start: 'node a.js' }))!.kept?.deploymentId, 'd1');
    assert.equal((await keptOutputFor(cacheDir, hash, { start: 'node b.js' }))!.kept, null, 'another plan');
    assert.equal(await keptOutputFor(null, hash, {}), null, 'no cache (noCache): nothing reused');
    assert.equal(await keptOutputFor(cacheDir, null, {}), null, 'no tree hash: nothing reused');
    assert.equal(await findKeptOutput(path.join(root, 'build-cache', 'p1', 'feat'), first.key), null);
    rmSync(release, { recursive: true });
    assert.equal(await findKeptOutput(cacheDir, first.key), null, 'a pruned release is not reused');
  });
});

describe('reused outputs: the linked release', () => {
  it('links files (same inode), copies links as links and keeps folder modes; the target must not exist', async () => {
    const from = tree({ 'node_modules/x/index.js': 'x' });
    symlinkSync('../src/a.js', path.join(from, 'node_modules', 'l'));
    chmodSync(path.join(from, 'src'), 0o750);
    const to = path.join(root, 'linked');
    assert.equal(await linkTree(from, to), 'linked');
    assert.equal(statSync(path.join(to, 'node_modules/x/index.js')).ino, statSync(path.join(from, 'node_modules/x/index.js')).ino);
    assert.equal(readlinkSync(path.join(to, 'node_modules', 'l')), '../src/a.js');
    assert.equal(statSync(path.join(to, 'src')).mode & 0o777, 0o750);
    assert.equal(readFileSync(path.join(to, 'src/a.js'), 'utf8'), 'a');
    await assert.rejects(linkTree(from, to));
  });
});
