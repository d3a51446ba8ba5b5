import { lstat, lchown, mkdir, readlink, rmdir, symlink, unlink } from 'node:fs/promises';
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { readTenantFile } from '../lib/tenant-file.js';
import type { Identity } from './driver.js';

/**
 * A framework's own build cache kept with the project's package-manager caches (contract section 21 in
 * spirit; issue 39): Next.js writes its compiler's cache to `.next/cache` in the app folder, and `next
 * build` starts from it (it clears `.next` but that folder). For a build whose app depends on `next`, has a
 * build step and runs with its cache, `.next/cache` is a link to the `next` folder of the environment's
 * cache (`/cache/next` in the build box), made before any step of the project's runs and taken away after
 * the box is gone: the cache has the isolation rules of the others (the project's own uid and folder,
 * never another project's; a preview starts from a copy of production's and writes its own; capped and
 * removed with them), and the release holds no `.next/cache`. A source that brings its own `.next` is
 * left as it is.
 */

/** The folder of the environment's cache that holds Next.js's. */
export const NEXT_CACHE = 'next';

/**
 * Links the app folder's `.next/cache` to the environment's cache; answers what takes the link away after
 * the build (null: not a Next.js build, or one with its own `.next`). `hostCache` is the cache folder as the
 * server sees it, `insideCache` as the build's steps see it.
 */
export async function linkNextCache(o: { srcDir: string; appDir: string; hostCache: string; insideCache: string; identity: Identity | null }): Promise<(() => Promise<void>) | null> {
  if (!(await dependsOnNext(o.srcDir, o.appDir))) return null;
  const dotNext = path.join(o.appDir, '.next');
  if (lstatSync(dotNext, { throwIfNoEntry: false })) return null;
  const own = async (p: string) => {
    if (o.identity && process.getuid?.() === 0) await lchown(p, o.identity.uid, o.identity.gid);
  };
  const kept = path.join(o.hostCache, NEXT_CACHE);
  if (!lstatSync(kept, { throwIfNoEntry: false })?.isDirectory()) {
    await mkdir(kept, { mode: 0o700 });
    await own(kept);
  }
  const target = path.posix.join(o.insideCache, NEXT_CACHE);
  const link = path.join(dotNext, 'cache');
  await mkdir(dotNext, { mode: 0o755 });
  await own(dotNext);
  await symlink(target, link);
  await own(link);
  return async () => {
    // Only the link this made: a build that put something else there keeps it.
    const st = await lstat(link).catch(() => null);
    if (st?.isSymbolicLink() && (await readlink(link).catch(() => null)) === target) await unlink(link);
    await rmdir(dotNext).catch(() => {});
  };
}

/** Whether the app's package.json (read as a tenant's file: no link followed) names `next` among its dependencies. */
async function dependsOnNext(srcDir: string, appDir: string): Promise<boolean> {
  const rel = path.relative(srcDir, appDir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return false;
  const file = await readTenantFile(srcDir, path.join(rel, 'package.json'));
  if (file.text === null) return false;
  try {
    const pkg = JSON.parse(file.text) as Record<string, unknown>;
    return ['dependencies', 'devDependencies'].some((f) => {
      const deps = pkg?.[f];
      return !!deps && typeof deps === 'object' && Object.hasOwn(deps, 'next');
    });
  } catch {
    return false;
  }
}
