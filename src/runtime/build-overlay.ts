import { lstatSync } from 'node:fs';
import { chown, chmod, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Identity } from './driver.js';
import { chownTree } from './identity.js';
import { isMounted, mounts, run, unmount } from './disk-image.js';
import { timed } from '../lib/spans.js';

/**
 * A kept install shown in a build's app folder without copying it (issue 39 point 5): an overlay mount
 * at `<app folder>/node_modules` whose read-only lower layer is a hard-linked snapshot of the kept copy
 * and whose upper layer (what the build writes there) lies on the build's own disk image.
 *
 * - The snapshot (`<workDir>.lower`, `cp -al`: one link per file, no data copied) is on the data dir's
 *   filesystem beside the kept copy, so a concurrent build that replaces the kept copy, or the cache's cap
 *   removing it, never pulls files from under this build's mount.
 * - Nothing the build does reaches the lower layer: a write copies the file up into the upper layer first
 *   (overlayfs), so the kept copy stays what its install made it (the no-poisoning rule). The snapshot
 *   shares the kept copy's inodes, which are owned by the project's uid (the build box's identity) and
 *   reachable only through this mount; neither folder is inside any box.
 * - The upper and work folders (`<workDir>/.berth-overlay`) are on the build's image, beside `src` and
 *   `home` and not shown in the box, so the build's writes count against `build.diskMb`.
 * - Only for a build whose folders are on their own image (the release is copied out of it afterwards, so
 *   no mount outlives the build): `releaseKeptInstall` unmounts it and removes the snapshot.
 *
 * Needs root (mount) and the kept copy on the same filesystem as the builds' folders (hard links);
 * `mountKeptInstall` answers false when it does not apply, and the caller copies instead.
 */

/** Characters overlayfs' mount options cannot carry in a path. */
const UNSAFE = /[,:\\\s]/;

export async function mountKeptInstall(kept: string, appDir: string, workDir: string, identity: Identity | null): Promise<boolean> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0 || !isMounted(workDir)) return false;
  const target = path.join(appDir, 'node_modules');
  const lower = `${workDir}.lower`;
  const base = path.join(workDir, '.berth-overlay');
  const upper = path.join(base, 'upper');
  const work = path.join(base, 'work');
  if ([lower, upper, work, target].some((p) => UNSAFE.test(p)) || lstatSync(target, { throwIfNoEntry: false })) return false;
  const from = path.join(kept, 'node_modules');
  const top = lstatSync(from, { throwIfNoEntry: false });
  if (!top?.isDirectory()) return false;
  // A kept copy made before kept installs were the project's (root's): made the project's once.
  if (identity && (top.uid !== identity.uid || top.gid !== identity.gid)) await chownTree(from, identity);
  try {
    await rm(lower, { recursive: true, force: true });
    await timed('build.install-snapshot', () => run('cp', ['-al', '--', from, lower], 3600_000));
    await rm(base, { recursive: true, force: true });
    await mkdir(work, { recursive: true, mode: 0o700 });
    await mkdir(upper, { mode: 0o755 });
    // The merged folder's own owner and mode are the upper folder's: the project's, as the kept one.
    await chmod(upper, top.mode & 0o7777);
    if (identity) await chown(upper, identity.uid, identity.gid);
    await mkdir(target, { mode: 0o755 });
    await timed('build.install-mount', () => run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work},redirect_dir=off,metacopy=off,nosuid,nodev`, target]));
    return true;
  } catch {
    await releaseKeptInstall(workDir, target).catch(() => {});
    return false;
  }
}

/**
 * Unmounts whatever is mounted below the build's folder (a kept install's overlay) and removes its
 * snapshot; `alsoRemove`: a mount point left empty; `background`: the snapshot's removal not awaited. The
 * build's image itself stays mounted.
 */
export async function releaseKeptInstall(workDir: string, alsoRemove?: string, background = false): Promise<void> {
  const root = path.resolve(workDir);
  // Only the mounts strictly below the folder, deepest first (the folder's own image is the caller's).
  const below = [...mounts().keys()].filter((m) => m.startsWith(root + path.sep)).sort((a, b) => b.length - a.length);
  await timed('release.overlay-umount', async () => {
    for (const m of below) await unmount(m);
  });
  if (alsoRemove) await rm(alsoRemove, { recursive: true, force: true }).catch(() => {});
  // The snapshot (links only: nothing of it is in the release) is removed off the build's path: renamed
  // aside at once, removed meanwhile (a Next.js install's tens of thousands of links took 2.3 s under load).
  // A stop before it is gone leaves it to the start-up sweep (`*.lower`, disk-limits.ts).
  const lower = `${workDir}.lower`;
  const aside = `${workDir}.${process.pid}-${Date.now().toString(36)}.lower`;
  if (!(await rename(lower, aside).then(() => true, () => false))) return;
  if (background) void rm(aside, { recursive: true, force: true }).catch(() => {});
  else await rm(aside, { recursive: true, force: true });
}

