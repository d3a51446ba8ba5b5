import { lstatSync } from 'node:fs';
import { chmod, copyFile, lchown, lstat, lutimes, mkdir, readdir, readlink, rm, rmdir, symlink, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { mounts, run, unmount } from './disk-image.js';
import { timed } from '../lib/spans.js';

/**
 * A release whose build had its kept install mounted (build-overlay.ts) gets its `node_modules` as hard
 * links to the install's snapshot instead of a copy read through the overlay (issue 39 point 5: 15 s of a
 * Next.js one-line change's release step). The rest of the source is copied out as before.
 *
 * Why the release stays immutable and its own:
 * - The snapshot's files are the kept copy's inodes, and nothing ever writes into those: a build sees them
 *   only as an overlay's read-only lower layer (a write copies the file up first), the kept copy is
 *   replaced by a new folder (new inodes) and removed by unlinking, never rewritten in place; a build whose
 *   later steps touch `node_modules` gets a copy of it. The release is read-only to its app (`/app`).
 * - What the build wrote into `node_modules` (the overlay's upper layer: new and changed files, removals)
 *   is applied on top: each changed path is unlinked in the release first and written anew, so a changed
 *   file never writes through a link into the kept copy. Removals (whiteouts, opaque folders) are read
 *   from the merged view: a release folder holds exactly the names the build saw.
 * - The overlay is mounted with `redirect_dir=off,metacopy=off`, so every file the upper layer holds is
 *   whole (no metadata-only copy-up) and no folder's content comes from another path of the lower layer.
 */

interface Overlay {
  target: string;
  lower: string;
  upper: string;
}

/** The build's one kept-install overlay below `from` (the folder being released), or null. */
function overlayBelow(workDir: string, from: string): Overlay | null {
  const root = path.resolve(workDir);
  const below = [...mounts().entries()].filter(([m]) => m.startsWith(root + path.sep));
  if (below.length !== 1) return null;
  const [target, info] = below[0]!;
  if (info.fstype !== 'overlay' || !target.startsWith(path.resolve(from) + path.sep)) return null;
  const lower = `${root}.lower`;
  const upper = path.join(root, '.berth-overlay', 'upper');
  if (!lstatSync(lower, { throwIfNoEntry: false })?.isDirectory() || !lstatSync(upper, { throwIfNoEntry: false })?.isDirectory()) return null;
  return { target, lower, upper };
}

/** Each folder the upper layer holds (relative, parents first) with the names the merged view showed in it. */
async function mergedFolders(o: Overlay): Promise<{ rel: string; names: Set<string> }[]> {
  const out: { rel: string; names: Set<string> }[] = [];
  const walk = async (rel: string): Promise<void> => {
    out.push({ rel, names: new Set(await readdir(path.join(o.target, rel))) });
    for (const e of await readdir(path.join(o.upper, rel), { withFileTypes: true })) if (e.isDirectory()) await walk(path.join(rel, e.name));
  };
  await walk('');
  return out;
}

/** Copies one non-folder entry of the upper layer to `to` (unlinked first: never written through a link). */
async function copyEntry(from: string, to: string): Promise<void> {
  await rm(to, { recursive: true, force: true });
  const st = await lstat(from);
  if (st.isSymbolicLink()) {
    await symlink(await readlink(from), to);
    await lchown(to, st.uid, st.gid);
    await lutimes(to, st.atime, st.mtime);
  } else if (st.isFile()) {
    await copyFile(from, to);
    await lchown(to, st.uid, st.gid);
    await chmod(to, st.mode & 0o7777);
    await utimes(to, st.atime, st.mtime);
  }
  // Anything else (a whiteout, a device, a socket) is not carried into a release.
}

/** Gives `to` the upper folder's owner, mode and times (the merged folder's). */
async function sameFolderMeta(from: string, to: string): Promise<void> {
  const st = await lstat(from);
  await lchown(to, st.uid, st.gid);
  await chmod(to, st.mode & 0o7777);
  await utimes(to, st.atime, st.mtime);
}

/**
 * Copies `from` (a folder on the build's image) to `to` (on the data dir's filesystem) with the kept
 * install's overlay below it released as links; answers false (nothing done) when there is no such overlay,
 * and the caller copies through the mount as before. The overlay is unmounted on return either way.
 */
export async function copyOutLinkingInstall(workDir: string, from: string, to: string, copyContents: (a: string, b: string) => Promise<void>): Promise<boolean> {
  const o = overlayBelow(workDir, from);
  if (!o) return false;
  const folders = await timed('release.overlay-read', () => mergedFolders(o));
  await timed('release.overlay-umount', () => unmount(o.target, false));
  // The rest of the source (the mount point is an empty folder on the image now).
  await timed('release.copy-out', () => copyContents(from, to));
  const dest = path.join(to, path.relative(from, o.target));
  await rmdir(dest);
  await timed('release.link-install', () =>
    run('cp', ['-al', '--', o.lower, dest], 3600_000).catch(async () => {
      // A file at its filesystem's link limit (EMLINK): the snapshot copied instead, the same files.
      await rm(dest, { recursive: true, force: true });
      await run('cp', ['-a', '--', o.lower, dest], 3600_000);
    }),
  );
  await timed('release.apply-upper', async () => {
    for (const { rel, names } of folders) {
      const d = path.join(dest, rel);
      if (!lstatSync(d, { throwIfNoEntry: false })?.isDirectory()) {
        await rm(d, { recursive: true, force: true });
        await mkdir(d);
      }
      // Names the build removed (whiteouts, a folder made anew: opaque) are not in the merged view.
      for (const name of await readdir(d)) if (!names.has(name)) await rm(path.join(d, name), { recursive: true, force: true });
      for (const e of await readdir(path.join(o.upper, rel), { withFileTypes: true })) {
        if (!names.has(e.name) || e.isDirectory()) continue;
        await copyEntry(path.join(o.upper, rel, e.name), path.join(d, e.name));
      }
    }
    // Folders' own owner, mode and times last, deepest first (adding names moved their times).
    for (const { rel } of [...folders].reverse()) await sameFolderMeta(path.join(o.upper, rel), path.join(dest, rel));
  });
  return true;
}
