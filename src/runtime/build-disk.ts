import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { copyContents, ensureImage, freshImageOnto, imageOf, isMounted, removeImage, usage } from './disk-image.js';
import { BuildError } from './build-error.js';
import { releaseKeptInstall } from './build-overlay.js';
import { copyOutLinkingInstall } from './build-release-links.js';
import { timed } from '../lib/spans.js';

/**
 * A build's writable folders under `build.diskMb` (contract 18): while a build runs, its working folder
 * (`<data-dir>/builds/<project>/<deployment>`: the source it builds in and the build's HOME) is the
 * mount point of its own image (`<deployment>.img`), so a step writing past the limit gets ENOSPC.
 * A git or local source is fetched onto the image; an upload's source (bounded by its upload) is
 * copied to the plain folder and moved onto the image right before the first step of the project's
 * runs (`moveBuildFolders`), so a build that runs none (no dependencies, no build script) makes no image. When
 * the build succeeds, the release (`src`) is copied out to a plain folder at the same path and the image
 * is removed: kept releases (rollbacks) hold no loop device, and an app never writes into its release
 * (it is read-only at `/app`). A failed build's image is removed with its folder's contents.
 */

/** Puts `workDir` on a fresh image of `diskMb`; false without a limit (the server enforces none). */
export async function limitBuildFolders(workDir: string, diskMb: number | undefined): Promise<boolean> {
  if (!diskMb) return false;
  await dropBuildImage(workDir);
  await rm(workDir, { recursive: true, force: true });
  await ensureImage(workDir, diskMb);
  return true;
}

/**
 * Puts `workDir`, which holds the build's source already (an upload's: bounded by the upload), onto a
 * fresh image of `diskMb`, its contents copied in, right before the first
 * step of the project's runs.
 */
export async function moveBuildFolders(workDir: string, diskMb: number): Promise<void> {
  try {
    // The build's folder is its own and fresh: no crash-safe staging (ensureImage's), which cost two more mounts.
    await freshImageOnto(workDir, diskMb);
  } catch (e) {
    if (!/No space left/i.test((e as Error).message)) throw e;
    throw new BuildError(`the build's folders are full: the source alone does not fit the ${diskMb} MB build.diskMb allows (raise resources.build.diskMb)`);
  }
}

/** The build-log line of a build that failed because its folders are full, or null. */
export async function fullFoldersLine(workDir: string, diskMb: number): Promise<string | null> {
  if (!isMounted(workDir)) return null;
  const u = await usage(workDir).catch(() => null);
  // ext4 refuses a write with a few MB still counted free (metadata, delayed allocation).
  if (!u || u.sizeMb - u.usedMb > Math.max(8, u.sizeMb * 0.05)) return null;
  return `the build's folders are full: it wrote ${u.usedMb} MB of the ${diskMb} MB build.diskMb allows (raise resources.build.diskMb)`;
}

/**
 * After a successful build: the release copied out of the image to a plain folder at the same path;
 * `only` (a static site's output folder, relative to `src`): just that folder, the rest (its
 * dependencies, its sources) is not the release.
 */
export async function keepRelease(workDir: string, only?: string): Promise<void> {
  if (!isMounted(workDir)) return;
  const out = `${workDir}.release`;
  await rm(out, { recursive: true, force: true });
  const part = only && !only.startsWith('..') && !path.isAbsolute(only) ? only : '';
  await mkdir(path.join(out, 'src', part), { recursive: true, mode: 0o755 });
  const from = path.join(workDir, 'src', part);
  // A kept install mounted into the build (build-overlay.ts) goes out as links to its snapshot
  // (build-release-links.ts); without one, or for a static site's output, everything is copied.
  if (existsSync(from) && !(part === '' && (await copyOutLinkingInstall(workDir, from, path.join(out, 'src'), copyContents)))) {
    await timed('release.copy-out', () => copyContents(from, path.join(out, 'src', part)));
  }
  await timed('release.unmount-install', () => releaseKeptInstall(workDir, undefined, true));
  await timed('release.remove-image', () => removeImage(workDir));
  await rm(workDir, { recursive: true, force: true });
  await rename(out, workDir);
}

/** A failed or cancelled build's image: unmounted and removed (the folder stays, empty). */
export async function dropBuildImage(workDir: string): Promise<void> {
  await releaseKeptInstall(workDir);
  if (isMounted(workDir) || existsSync(imageOf(workDir))) await removeImage(workDir);
  await rm(`${workDir}.release`, { recursive: true, force: true });
}
