import { randomBytes } from 'node:crypto';
import { chmod, copyFile, lstat, lchown, mkdir, readdir, readlink, rename, rmdir, symlink, unlink, writeFile } from 'node:fs/promises';
import { constants as fsConstants, lstatSync } from 'node:fs';
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

/** Gives a path to the project's uid (as root; the server's own otherwise). */
function owner(identity: Identity | null): (p: string) => Promise<void> {
  return async (p) => {
    if (identity && process.getuid?.() === 0) await lchown(p, identity.uid, identity.gid);
  };
}

/** The cache's folder `name` (made, the project's, when missing). */
async function keptFolder(hostCache: string, name: string, own: (p: string) => Promise<void>): Promise<string> {
  const kept = path.join(hostCache, name);
  if (!lstatSync(kept, { throwIfNoEntry: false })?.isDirectory()) {
    await mkdir(kept, { mode: 0o700 });
    await own(kept);
  }
  return kept;
}

/** The folder of the environment's cache that holds Next.js's. */
export const NEXT_CACHE = 'next';

/** The variable that gives `next build` its Server Actions key (Next.js 14+; the project's own wins). */
export const NEXT_KEY_VARIABLE = 'NEXT_SERVER_ACTIONS_ENCRYPTION_KEY';
/** Next.js's own file of that key in `.next/cache`, and how long it keeps one (its 14 days). */
const KEY_FILE = '.rscinfo';
const KEY_DAYS_MS = 14 * 24 * 3600 * 1000;

/**
 * The Server Actions key `next build` uses, kept as Next.js keeps it where its cache persists: in
 * `.next/cache/.rscinfo` (`{"encryption.key", "encryption.expire_at"}`), for 14 days, then a new one.
 * Next.js does that itself except in a container: there (`/.dockerenv`) it takes its storage for
 * ephemeral and makes a new key at every build, and the key is part of its webpack cache's version, so
 * under the docker runtime every build found the kept compiler cache stale and compiled everything again
 * (docs/builds.md). Berth reads the file (as a tenant's: no link followed) and, when it is missing, broken
 * or expired, writes a new one (32 random bytes, base64, as Next.js makes them) through a new file renamed
 * over the old, the project's; the build's steps get the key as NEXT_SERVER_ACTIONS_ENCRYPTION_KEY.
 */
async function nextKey(kept: string, own: (p: string) => Promise<void>): Promise<string> {
  const file = await readTenantFile(kept, KEY_FILE);
  try {
    const info = file.text === null ? null : (JSON.parse(file.text) as Record<string, unknown>);
    const key = info?.['encryption.key'];
    const until = info?.['encryption.expire_at'];
    if (typeof key === 'string' && /^[A-Za-z0-9+/]{43}=$/.test(key) && typeof until === 'number' && until > Date.now()) return key;
  } catch {
    /* broken: a new key */
  }
  const key = randomBytes(32).toString('base64');
  const tmp = path.join(kept, `${KEY_FILE}.berth-${process.pid}`);
  await unlink(tmp).catch(() => {});
  // `wx`: a new file (a link planted there fails it); the rename replaces whatever the name was.
  await writeFile(tmp, JSON.stringify({ 'encryption.key': key, 'encryption.expire_at': Date.now() + KEY_DAYS_MS }), { flag: 'wx', mode: 0o600 });
  await own(tmp);
  await rename(tmp, path.join(kept, KEY_FILE));
  return key;
}

/**
 * Links the app folder's `.next/cache` to the environment's cache; answers what takes the link away after
 * the build and the variables its steps get (the kept Server Actions key: `nextKey`), or null (not a
 * Next.js build, or one with its own `.next`). `hostCache` is the cache folder as the server sees it,
 * `insideCache` as the build's steps see it.
 */
export async function linkNextCache(o: { srcDir: string; appDir: string; hostCache: string; insideCache: string; identity: Identity | null }): Promise<{ unlink: () => Promise<void>; env: Record<string, string> } | null> {
  if (!(await dependsOnNext(o.srcDir, o.appDir))) return null;
  const dotNext = path.join(o.appDir, '.next');
  if (lstatSync(dotNext, { throwIfNoEntry: false })) return null;
  const own = owner(o.identity);
  const kept = await keptFolder(o.hostCache, NEXT_CACHE, own);
  const env = { [NEXT_KEY_VARIABLE]: await nextKey(kept, own) };
  const target = path.posix.join(o.insideCache, NEXT_CACHE);
  const link = path.join(dotNext, 'cache');
  await mkdir(dotNext, { mode: 0o755 });
  await own(dotNext);
  await symlink(target, link);
  await own(link);
  const unlinkCache = async () => {
    // Only the link this made: a build that put something else there keeps it.
    const st = await lstat(link).catch(() => null);
    if (st?.isSymbolicLink() && (await readlink(link).catch(() => null)) === target) await unlink(link);
    await rmdir(dotNext).catch(() => {});
  };
  return { unlink: unlinkCache, env };
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

/** The folder of the environment's cache that holds Cargo's `target` (compiled dependencies). */
export const CARGO_TARGET = 'cargo-target';

/**
 * Cargo's `target` kept with the project's caches (contract section 21: "Cargo (registry and target)"):
 * for a Rust build with a build step, the app folder's `target` is a link to the `cargo-target` folder of
 * the environment's cache (`/cache/cargo-target` in the build box), so `cargo build` finds the
 * dependencies it compiled last time (the registry is cached through CARGO_HOME). After the build (its
 * box gone) the link goes, and the release gets, as its own files, what Cargo leaves at the top of each
 * profile folder (`target/release/<bin>`: what the start command runs); the compiled dependencies stay
 * in the cache. Regular files only: nothing the cache holds is followed. A source with its own `target`
 * is left as it is. Answers what takes the link away (null: nothing linked).
 */
export async function linkCargoTarget(o: { appDir: string; hostCache: string; insideCache: string; identity: Identity | null }): Promise<(() => Promise<void>) | null> {
  if (!lstatSync(path.join(o.appDir, 'Cargo.toml'), { throwIfNoEntry: false })?.isFile()) return null;
  const target = path.join(o.appDir, 'target');
  if (lstatSync(target, { throwIfNoEntry: false })) return null;
  const own = owner(o.identity);
  const kept = await keptFolder(o.hostCache, CARGO_TARGET, own);
  const inside = path.posix.join(o.insideCache, CARGO_TARGET);
  await symlink(inside, target);
  await own(target);
  return async () => {
    // Only the link this made: a build that put its own `target` there keeps it.
    const st = await lstat(target).catch(() => null);
    if (!st?.isSymbolicLink() || (await readlink(target).catch(() => null)) !== inside) return;
    await unlink(target);
    await mkdir(target, { mode: 0o755 });
    await own(target);
    for (const profile of await readdir(kept)) {
      const from = path.join(kept, profile);
      // A profile folder (release, debug, a custom one) is where Cargo keeps its fingerprints.
      if (!(await lstat(from)).isDirectory() || !lstatSync(path.join(from, '.fingerprint'), { throwIfNoEntry: false })?.isDirectory()) continue;
      const to = path.join(target, profile);
      await mkdir(to, { mode: 0o755 });
      await own(to);
      for (const name of await readdir(from)) {
        const f = await lstat(path.join(from, name));
        if (!f.isFile()) continue;
        await copyFile(path.join(from, name), path.join(to, name), fsConstants.COPYFILE_FICLONE);
        await chmod(path.join(to, name), f.mode & 0o777);
        await own(path.join(to, name));
      }
    }
  };
}
