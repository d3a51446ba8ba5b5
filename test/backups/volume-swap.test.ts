import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repairVolume, stagingFor, swapIn } from '../../src/modules/backups/volume-archive.js';
import { ensureImage, imagesUsable, isMounted, unmountBelow } from '../../src/runtime/disk-image.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-swap-'));

after(async () => {
  await unmountBelow(root);
  rmSync(root, { recursive: true, force: true });
});

/** A volume folder with `files` and a staged restore beside it with `staged`. */
function setup(name: string, files: Record<string, string>, staged: Record<string, string>) {
  const target = path.join(root, name, 'data');
  const stagedDir = `${target}.restore-r1`;
  for (const [dir, set] of [[target, files], [stagedDir, staged]] as const) {
    mkdirSync(dir, { recursive: true });
    for (const [f, text] of Object.entries(set)) {
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      writeFileSync(path.join(dir, f), text);
    }
  }
  return { target, stagedDir };
}

const contents = (dir: string) => readdirSync(dir, { recursive: true }).map(String).filter((n) => !statSync(path.join(dir, n)).isDirectory()).sort();

test('a staged restore swaps its contents in: the volume folder itself stays (same inode), the old contents are kept aside until removed', async () => {
  const { target, stagedDir } = setup('plain', { 'old.txt': 'old', 'sub/a': 'a' }, { 'new.txt': 'new', 'sub/b': 'b' });
  const ino = statSync(target).ino;
  const { old } = await swapIn(stagedDir, target, 'r1');
  assert.equal(statSync(target).ino, ino);
  assert.equal(old, `${target}.old-r1`);
  assert.deepEqual(contents(old!), ['old.txt', 'sub/a']);
  rmSync(old!, { recursive: true });
  assert.deepEqual(contents(target), ['new.txt', 'sub/b']);
  assert.equal(existsSync(stagedDir), false);
});

test('a swap a crash cut short while the old contents were moved aside goes back to the old contents', async () => {
  const { target, stagedDir } = setup('crash-early', { 'one.txt': '1', 'two.txt': '2' }, { 'new.txt': 'new' });
  // The state after step 1 and half of step 2: the new contents inside, one old entry moved aside, no mark.
  renameSync(stagedDir, path.join(target, '.berth-new-r1'));
  mkdirSync(path.join(target, '.berth-old-r1'));
  renameSync(path.join(target, 'one.txt'), path.join(target, '.berth-old-r1', 'one.txt'));
  await repairVolume(target);
  assert.deepEqual(contents(target), ['one.txt', 'two.txt']);
  assert.equal(readFileSync(path.join(target, 'one.txt'), 'utf8'), '1');
});

test('a swap a crash cut short after every old entry was aside finishes with the new contents', async () => {
  const { target, stagedDir } = setup('crash-late', { 'one.txt': '1' }, { 'a.txt': 'a', 'b.txt': 'b' });
  renameSync(stagedDir, path.join(target, '.berth-new-r1'));
  mkdirSync(path.join(target, '.berth-old-r1'));
  renameSync(path.join(target, 'one.txt'), path.join(target, '.berth-old-r1', 'one.txt'));
  writeFileSync(path.join(target, '.berth-old-r1', '.moved'), '');
  renameSync(path.join(target, '.berth-new-r1', 'a.txt'), path.join(target, 'a.txt'));
  await repairVolume(target);
  assert.deepEqual(contents(target), ['a.txt', 'b.txt']);
});

test('leftovers of an older Berth that renamed the folder are still repaired: the old folder is put back when the volume is missing', async () => {
  const target = path.join(root, 'legacy', 'data');
  mkdirSync(`${target}.old-r9`, { recursive: true });
  writeFileSync(path.join(`${target}.old-r9`, 'kept'), 'k');
  mkdirSync(`${target}.restore-r9`);
  await repairVolume(target);
  assert.deepEqual(contents(target), ['kept']);
  assert.equal(existsSync(`${target}.restore-r9`), false);
});

test('a volume on its own filesystem image (a mount point) gets the staged contents copied in with their owners, its lost+found left alone', async (t) => {
  const u = await imagesUsable(root);
  if (!u.ok) return t.skip(`filesystem images are not usable here: ${u.reason}`);
  const { target, stagedDir } = setup('image', {}, { 'new.txt': 'new', 'lost+found/x': 'from the backup' });
  writeFileSync(path.join(target, 'old.txt'), 'old');
  await ensureImage(target, 32);
  assert.equal(isMounted(target), true);
  const { chownSync } = await import('node:fs');
  chownSync(path.join(stagedDir, 'new.txt'), 7777, 7777);
  const { old } = await swapIn(stagedDir, target, 'r1');
  assert.equal(isMounted(target), true);
  rmSync(old!, { recursive: true });
  assert.deepEqual(contents(target), ['new.txt']);
  assert.equal(statSync(path.join(target, 'new.txt')).uid, 7777);
  assert.equal(readdirSync(path.join(target, 'lost+found')).length, 0);
});

test('a restore that does not fit on the image fails with ENOSPC and leaves the old contents whole', async (t) => {
  const u = await imagesUsable(root);
  if (!u.ok) return t.skip(`filesystem images are not usable here: ${u.reason}`);
  const { target, stagedDir } = setup('full', { 'old.txt': 'old' }, {});
  writeFileSync(path.join(stagedDir, 'huge'), Buffer.alloc(40 * 1024 * 1024, 1));
  await ensureImage(target, 32);
  await assert.rejects(swapIn(stagedDir, target, 'r1'), /No space left on device/);
  assert.deepEqual(readdirSync(target).sort(), ['lost+found', 'old.txt']);
});

test('a restore of a volume on its image unpacks inside it (0700) and swaps by renames: the files keep their inodes', async (t) => {
  const u = await imagesUsable(root);
  if (!u.ok) return t.skip(`filesystem images are not usable here: ${u.reason}`);
  const target = path.join(root, 'in-place', 'data');
  mkdirSync(target, { recursive: true });
  writeFileSync(path.join(target, 'old.txt'), 'old');
  await ensureImage(target, 32);
  const staging = await stagingFor(target, 'r2');
  assert.equal(staging, path.join(target, '.berth-new-r2'));
  assert.equal(statSync(staging).mode & 0o777, 0o700);
  writeFileSync(path.join(staging, 'new.txt'), 'new');
  const inode = statSync(path.join(staging, 'new.txt')).ino;
  const { old } = await swapIn(staging, target, 'r2');
  assert.equal(isMounted(target), true);
  assert.equal(statSync(path.join(target, 'new.txt')).ino, inode);
  assert.equal(readFileSync(path.join(old!, 'old.txt'), 'utf8'), 'old');
  rmSync(old!, { recursive: true });
  assert.deepEqual(contents(target), ['new.txt']);
});

test('a restore of a plain volume folder unpacks beside it', async () => {
  const target = path.join(root, 'plain-staging', 'data');
  mkdirSync(target, { recursive: true });
  assert.equal(await stagingFor(target, 'r3'), `${target}.restore-r3`);
});
