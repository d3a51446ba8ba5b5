import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat, statfs, truncate } from 'node:fs/promises';
import path from 'node:path';

/**
 * Disk limits by filesystem image (contract 18, issue 33 point 4; docs/runtime.md "Disk limits"): a
 * folder whose writes must stop at `sizeMb` becomes the mount point of a sparse ext4 image next to it
 * (`<dir>.img`), loop-mounted `nosuid,nodev,noatime`. A write past the size fails with ENOSPC. The image
 * grows when the limit rises (`grow`); it never shrinks (ext4 cannot shrink mounted).
 *
 * Every program is spawned with an argument array (no shell) and a timeout. Everything here needs root
 * and a kernel with loop devices; `imagesUsable()` says whether this host has them.
 */

export type DiskLimitMode = 'auto' | 'images' | 'off';

/** BERTH_DISK_LIMITS: `auto` (default: images when usable), `images` (required), `off` (measure only). */
export function diskLimitMode(env: NodeJS.ProcessEnv = process.env): DiskLimitMode {
  const v = (env.BERTH_DISK_LIMITS ?? '').trim() || 'auto';
  if (v === 'auto' || v === 'images' || v === 'off') return v;
  throw new Error(`BERTH_DISK_LIMITS must be "auto", "images" or "off" (got "${v}")`);
}

const RUN_TIMEOUT_MS = 120_000;

/** Runs a program (argument array, no shell) and answers its stdout; fails with its stderr unless its exit code is in `ok`. */
export function run(file: string, args: string[], timeoutMs = RUN_TIMEOUT_MS, ok: number[] = [0]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 * 1024 * 1024, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } }, (err, stdout, stderr) => {
      const code = err && typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : err ? -1 : 0;
      if (err && !ok.includes(code)) reject(new Error(`${path.basename(file)} ${args[0] ?? ''} failed: ${(stderr || err.message).trim().split('\n').slice(-3).join(' ')}`));
      else resolve(stdout);
    });
  });
}

let usable: Promise<{ ok: boolean; reason?: string }> | null = null;

/** Can this host make and mount images (root, mkfs.ext4, a loop device)? Probed once with a 16 MB image. */
export function imagesUsable(probeDir: string): Promise<{ ok: boolean; reason?: string }> {
  usable ??= (async () => {
    if (process.platform !== 'linux') return { ok: false, reason: 'filesystem images need Linux' };
    if (process.getuid?.() !== 0) return { ok: false, reason: 'filesystem images need the server to run as root' };
    const dir = path.join(probeDir, `.disk-probe-${process.pid}`);
    try {
      await mkdir(dir, { recursive: true });
      await ensureImage(dir, 16);
      return { ok: true };
    } catch (e) {
      return { ok: false, reason: (e as Error).message };
    } finally {
      await removeImage(dir).catch(() => {});
    }
  })();
  return usable;
}

/** The mount points of this mount namespace and what is mounted there (`/proc/self/mountinfo`). */
export function mounts(): Map<string, { source: string; fstype: string }> {
  const out = new Map<string, { source: string; fstype: string }>();
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return out;
  }
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const f = left.split(' ');
    const r = right.split(' ');
    if (f[4]) out.set(unescape(f[4]), { source: unescape(r[1] ?? ''), fstype: r[0] ?? '' });
  }
  return out;
}

export const imageOf = (dir: string) => `${dir}.img`;

/** Is `dir` the mount point of its image? */
export function isMounted(dir: string): boolean {
  return mounts().has(path.resolve(dir));
}

/** Makes a sparse ext4 image of `sizeMb` (root owned by `owner` when given). */
async function makeImage(img: string, sizeMb: number, owner?: { uid: number; gid: number }): Promise<void> {
  await rm(img, { force: true });
  const fh = await open(img, 'wx', 0o600);
  await fh.close();
  await truncate(img, sizeMb * 1024 * 1024);
  const ext = ['nodiscard', 'lazy_itable_init=1', ...(owner ? [`root_owner=${owner.uid}:${owner.gid}`] : [])].join(',');
  // -m 0: no blocks reserved for root (the app gets the whole size); small inode ratio left to mke2fs' defaults.
  await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', ext, '-L', 'berth', img]);
}

/**
 * The loop device the image is attached to, or null. Attached while any mount namespace still has it
 * mounted (an app's box or container keeps it after the server's own mount went): such an image is
 * mounted again through that device (never a second, independent mount of one filesystem) and is never
 * resized offline.
 */
async function attachedLoop(img: string): Promise<string | null> {
  const out = await run('losetup', ['-n', '-O', 'NAME', '-j', img]);
  return out.trim().split('\n')[0]?.trim() || null;
}

async function mountImage(img: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const loop = await attachedLoop(img);
  if (loop) await run('mount', ['-t', 'ext4', '-o', 'nosuid,nodev,noatime', loop, dir]);
  else await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', img, dir]);
}

/**
 * Unmounts `dir` (its loop device goes with it: mount's loop devices are autoclear). `lazy`: when a
 * process still has a file open there, detach now and let the kernel finish when it is closed.
 */
export async function unmount(dir: string, lazy = true): Promise<void> {
  if (!isMounted(dir)) return;
  try {
    await run('umount', [dir], 60_000);
  } catch (e) {
    if (!lazy) throw e;
    await run('umount', ['-l', dir], 60_000).catch(() => {
      throw e;
    });
  }
}

/** Size of the mounted image's filesystem and what it holds, in MB (statfs). */
export async function usage(dir: string): Promise<{ sizeMb: number; usedMb: number }> {
  const s = await statfs(dir);
  const mb = (blocks: number) => Math.round((blocks * s.bsize) / 1024 ** 2);
  return { sizeMb: mb(s.blocks), usedMb: mb(s.blocks - s.bfree) };
}

/** Waits up to `ms` for the image's loop device to be released; answers whether it was. */
async function waitDetached(img: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (!(await attachedLoop(img))) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Grows an image that is not mounted (checked first, as resize2fs asks). */
async function growOffline(img: string, sizeMb: number): Promise<boolean> {
  if ((await stat(img)).size >= sizeMb * 1024 * 1024) return false;
  if (await attachedLoop(img)) return false;
  await truncate(img, sizeMb * 1024 * 1024);
  // e2fsck: 0 clean, 1 errors corrected.
  await run('e2fsck', ['-f', '-p', img], RUN_TIMEOUT_MS, [0, 1]);
  await run('resize2fs', [img]);
  return true;
}

/**
 * Grows the image under `dir` to `sizeMb`: `grown`, `unchanged` (it is that large already; a smaller
 * size is left as it is), or `pending`. Online first (`resize2fs` on the mounted loop device, which
 * needs CAP_SYS_RESOURCE); else offline when nothing uses the filesystem (unmounted, grown, mounted
 * again); else `pending`: the next `ensureImage` while the app is stopped grows it.
 */
export async function grow(dir: string, sizeMb: number): Promise<'grown' | 'unchanged' | 'pending'> {
  const img = imageOf(dir);
  if (!isMounted(dir)) return (await growOffline(img, sizeMb)) ? 'grown' : 'unchanged';
  const want = sizeMb * 1024 * 1024;
  const had = (await stat(img)).size;
  if (had >= want) return 'unchanged';
  const src = mounts().get(path.resolve(dir))?.source;
  if (src?.startsWith('/dev/loop')) {
    await truncate(img, want);
    try {
      await run('losetup', ['-c', src]);
      await run('resize2fs', [src]);
      return 'grown';
    } catch {
      // The filesystem did not grow: the file goes back to its size, which stays the truth.
      await truncate(img, had);
      await run('losetup', ['-c', src]).catch(() => {});
    }
  }
  // Offline: only when no process has a file open here and no other mount namespace (a running app's
  // box or container) still holds the filesystem; else it is mounted again as it was.
  try {
    await unmount(dir, false);
  } catch {
    return 'pending';
  }
  let grown = false;
  try {
    // The loop device detaches after the last mount of it goes, and a stopped app's mount namespace
    // goes a moment after its processes: both are asynchronous in the kernel, so wait for it (bounded:
    // 15 s, as a loaded machine can take seconds; a grow still pending is done at the next start).
    await waitDetached(img, 15_000);
    grown = await growOffline(img, sizeMb);
  } finally {
    await mountImage(img, dir);
  }
  return grown ? 'grown' : 'pending';
}

async function isEmpty(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch {
    return true;
  }
}

/** Copies the contents of `from` into `to` keeping owners, modes, times and links (`cp -a`). */
export async function copyContents(from: string, to: string): Promise<void> {
  await run('cp', ['-a', '--', `${from}/.`, to], 24 * 3600_000);
}

/**
 * Makes `dir` the mount point of its image of `sizeMb` (made, migrated, mounted, grown as needed).
 * A plain folder with contents is migrated without losing them: copied into a new image mounted
 * aside (`<dir>.migrating`), the image renamed into place only once the copy is whole, then the old
 * folder moved aside (`<dir>.premigrate`) and removed after the mount. A crash at any point leaves
 * either the old folder whole (the next call starts over) or the image whole.
 */
export async function ensureImage(dir: string, sizeMb: number, owner?: { uid: number; gid: number }): Promise<{ migrated: boolean }> {
  const img = imageOf(dir);
  const staged = `${img}.new`;
  const aside = `${dir}.migrating`;
  const old = `${dir}.premigrate`;
  if (isMounted(aside)) await unmount(aside);
  await rm(staged, { force: true });
  await rmdir(aside).catch(() => {});
  if (isMounted(dir)) {
    await grow(dir, sizeMb);
    return { migrated: false };
  }
  let migrated = false;
  if (!existsSync(img)) {
    await mkdir(path.dirname(dir), { recursive: true });
    if (!(await isEmpty(dir))) {
      await makeImage(staged, sizeMb, owner);
      await mountImage(staged, aside);
      try {
        await copyContents(dir, aside);
      } catch (e) {
        await unmount(aside);
        await rm(staged, { force: true });
        throw new Error(`the folder could not be copied onto its ${sizeMb} MB image: ${(e as Error).message}`);
      } finally {
        await unmount(aside);
        await rmdir(aside).catch(() => {});
      }
      await rename(staged, img);
      migrated = true;
    } else await makeImage(img, sizeMb, owner);
  }
  // The image is whole: a folder's contents here are the ones it was made from (a crash after the rename).
  if (!(await isEmpty(dir))) {
    await rm(old, { recursive: true, force: true });
    await rename(dir, old);
  }
  await growOffline(img, sizeMb);
  await mountImage(img, dir);
  await rm(old, { recursive: true, force: true });
  return { migrated };
}

/**
 * A throwaway folder (a build's) onto a fresh image of `sizeMb`: the folder moved aside, the image made and
 * mounted in its place, the contents copied in, the old folder removed. Three programs (mkfs, mount, cp)
 * where `ensureImage`'s crash-safe migration runs seven: a crash midway leaves a folder its owner drops
 * anyway (a build that did not finish is failed and its folders removed).
 */
export async function freshImageOnto(dir: string, sizeMb: number): Promise<void> {
  const img = imageOf(dir);
  const old = `${dir}.premigrate`;
  if (isMounted(dir)) throw new Error(`${dir} is mounted already`);
  await rm(old, { recursive: true, force: true });
  const had = existsSync(dir) && !(await isEmpty(dir));
  if (had) await rename(dir, old);
  try {
    await makeImage(img, sizeMb);
    await mkdir(dir, { recursive: true });
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', img, dir]);
    if (had) await copyContents(old, dir);
  } catch (e) {
    await unmount(dir).catch(() => {});
    await rm(img, { force: true });
    if (had) {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      await rename(old, dir).catch(() => {});
    }
    throw e;
  }
  await rm(old, { recursive: true, force: true });
}

/** Unmounts `dir` and removes its image (the folder stays, empty). */
export async function removeImage(dir: string): Promise<void> {
  await unmount(dir);
  await rm(imageOf(dir), { force: true });
  await rm(`${imageOf(dir)}.new`, { force: true });
}

/** Unmounts every image mounted at or below `root` (deepest first); answers the folders unmounted. */
export async function unmountBelow(root: string): Promise<string[]> {
  const base = path.resolve(root);
  const below = [...mounts().keys()].filter((m) => m === base || m.startsWith(base + path.sep)).sort((a, b) => b.length - a.length);
  for (const m of below) await unmount(m);
  return below;
}
