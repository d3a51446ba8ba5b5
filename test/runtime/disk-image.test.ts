import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diskLimitMode, ensureImage, grow, imageOf, imagesUsable, isMounted, removeImage, unmountBelow, usage } from '../../src/runtime/disk-image.js';

/** Writes 1 MiB blocks to `file` until `mb` MiB are written or the disk refuses; answers the error code. */
function fill(file: string, mb: number): string | null {
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(1024 * 1024, 7);
  try {
    for (let i = 0; i < mb; i++) writeSync(fd, block);
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'unknown';
  } finally {
    closeSync(fd);
  }
}

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-disk-image-'));
let skip: string | false = false;

before(async () => {
  const u = await imagesUsable(root);
  if (!u.ok) skip = `filesystem images are not usable here: ${u.reason}`;
});

after(async () => {
  // Every mount these tests made goes (their loop devices with them), then the folder.
  await unmountBelow(root);
  rmSync(root, { recursive: true, force: true });
});

test('BERTH_DISK_LIMITS is auto by default, images or off when set, and anything else is refused by name', () => {
  assert.equal(diskLimitMode({}), 'auto');
  assert.equal(diskLimitMode({ BERTH_DISK_LIMITS: 'off' }), 'off');
  assert.equal(diskLimitMode({ BERTH_DISK_LIMITS: 'images' }), 'images');
  assert.throws(() => diskLimitMode({ BERTH_DISK_LIMITS: 'quota' }), /BERTH_DISK_LIMITS/);
});

test('a folder on its image refuses writes past the size with ENOSPC, and the owner given owns its root', async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(root, 'vol-a', 'data');
  await ensureImage(dir, 32, { uid: 4321, gid: 4321 });
  assert.equal(isMounted(dir), true);
  assert.equal(statSync(dir).uid, 4321);
  assert.equal(fill(path.join(dir, 'big'), 64), 'ENOSPC');
  const u = await usage(dir);
  assert.ok(u.sizeMb <= 32 && u.usedMb >= u.sizeMb - 2, JSON.stringify(u));
  // The image file itself is sparse: only what was written takes room on the host.
  assert.ok(statSync(imageOf(dir)).blocks * 512 < 64 * 1024 * 1024);
  rmSync(path.join(dir, 'big'));
  await removeImage(dir);
  assert.equal(isMounted(dir), false);
  assert.equal(existsSync(imageOf(dir)), false);
});

test('a mounted image grows to a larger size and keeps its files; a smaller size leaves it as it is', async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(root, 'vol-b', 'data');
  await ensureImage(dir, 32);
  writeFileSync(path.join(dir, 'keep.txt'), 'kept');
  assert.equal(fill(path.join(dir, 'a'), 48), 'ENOSPC');
  rmSync(path.join(dir, 'a'));
  assert.equal(await grow(dir, 96), 'grown');
  assert.ok((await usage(dir)).sizeMb > 80);
  assert.equal(fill(path.join(dir, 'a'), 48), null);
  assert.equal(await grow(dir, 32), 'unchanged');
  // ensureImage on a mounted folder grows it too.
  await ensureImage(dir, 128);
  assert.ok((await usage(dir)).sizeMb > 110);
  assert.equal(readFileSync(path.join(dir, 'keep.txt'), 'utf8'), 'kept');
  await removeImage(dir);
});

test('a plain folder with files is migrated onto its image with every file, owner and mode, and mounted again after an unmount', async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(root, 'vol-c', 'data');
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  writeFileSync(path.join(dir, 'sub', 'note.txt'), 'hello');
  writeFileSync(path.join(dir, 'secret'), 'x', { mode: 0o600 });
  const { chownSync, symlinkSync } = await import('node:fs');
  chownSync(path.join(dir, 'sub', 'note.txt'), 5555, 5555);
  symlinkSync('sub/note.txt', path.join(dir, 'link'));
  assert.deepEqual(await ensureImage(dir, 32), { migrated: true });
  assert.equal(isMounted(dir), true);
  assert.equal(readFileSync(path.join(dir, 'link'), 'utf8'), 'hello');
  assert.equal(statSync(path.join(dir, 'sub', 'note.txt')).uid, 5555);
  assert.equal(statSync(path.join(dir, 'secret')).mode & 0o777, 0o600);
  assert.equal(existsSync(`${dir}.premigrate`), false);
  assert.equal(existsSync(`${dir}.migrating`), false);
  // A restart finds the image and mounts it again (the folder under it is empty).
  await unmountBelow(path.dirname(dir));
  assert.equal(isMounted(dir), false);
  assert.deepEqual(await ensureImage(dir, 32), { migrated: false });
  assert.equal(readFileSync(path.join(dir, 'sub', 'note.txt'), 'utf8'), 'hello');
  await removeImage(dir);
});

test('a migration a crash cut short after the image was whole finishes without losing the files', async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(root, 'vol-d', 'data');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'f'), 'one');
  await ensureImage(dir, 32);
  // The crash: the image is in place, the old folder was never moved aside (its files are still there).
  await unmountBelow(path.dirname(dir));
  writeFileSync(path.join(dir, 'f'), 'one');
  await ensureImage(dir, 32);
  assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'one');
  assert.equal(existsSync(`${dir}.premigrate`), false);
  await removeImage(dir);
});
