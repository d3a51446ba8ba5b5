import { existsSync, lstatSync } from 'node:fs';
import { chmod, constants as fsConstants, cp, lstat, mkdir, readdir, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Identity } from './driver.js';
import { chownTree } from './identity.js';

/**
 * Per-project build caches (contract section 21): the package managers' download caches, kept between
 * a project's builds and never shared with another project.
 *
 * `<data-dir>/build-cache/<project>/<environment>/<manager>` (npm, pnpm, yarn, bun, pip, uv, poetry, go,
 * cargo, bundler, composer) is owned by the project's uid and is the only folder of the data dir its build
 * boxes see (at `/cache` in a sandbox or container), read-write; the managers are pointed at it through
 * their environment variables (`cacheEnv`). A preview environment's first build starts from a copy of
 * production's cache (read, never written: production's folder is not in the preview's box), then keeps its
 * own. After a build the project's caches (all its environments) are cut back to `BERTH_BUILD_CACHE_MB`,
 * least recently used files first. Nothing here follows a link: a cache holds what the project's builds
 * wrote, and a link it planted is copied, measured and removed as a link.
 */

/** The managers whose caches a build may fill, in the order the build log names them. */
export const CACHE_MANAGERS = ['npm', 'pnpm', 'yarn', 'bun', 'pip', 'uv', 'poetry', 'go', 'cargo', 'cargo-target', 'bundler', 'composer', 'next'] as const;

/** The whole build cache of a project (every environment's). */
export function projectCacheRoot(dataDir: string, projectId: string): string {
  return path.join(dataDir, 'build-cache', path.basename(projectId));
}

/** One environment's build cache. */
export function environmentCacheDir(dataDir: string, projectId: string, environment: string): string {
  return path.join(projectCacheRoot(dataDir, projectId), path.basename(environment));
}

export interface BuildCacheSpec {
  dataDir: string;
  projectId: string;
  environment: string;
  /** The project's uid/gid: the cache is theirs (null: the server's own, without root). */
  identity: Identity | null;
  /** BERTH_BUILD_CACHE_MB (0: no cache). */
  capMb: number;
  /** The deployment asked to build without the cache. */
  noCache?: boolean;
}

/** What a tool in the build writes where: `inside` is the cache folder as the build's box shows it. */
export function cacheEnv(inside: string, runtime: string, tools: { name: string; version?: string }[] = []): Record<string, string> {
  const at = (name: string) => path.posix.join(inside, name);
  const env: Record<string, string> = { npm_config_cache: at('npm') };
  for (const t of tools) {
    // Set only for the manager in use: npm warns about a pnpm setting it does not know.
    if (t.name === 'pnpm') Object.assign(env, { npm_config_store_dir: at('pnpm'), pnpm_config_store_dir: at('pnpm') });
    // Yarn 2+ keeps its shared cache below its global folder; YARN_CACHE_FOLDER there would move a project's own (zero-install) cache.
    if (t.name === 'yarn') Object.assign(env, /^[2-9]|^\d{2,}/.test(t.version ?? '') ? { YARN_GLOBAL_FOLDER: at('yarn') } : { YARN_CACHE_FOLDER: at('yarn') });
    if (t.name === 'bun') env.BUN_INSTALL_CACHE_DIR = at('bun');
  }
  if (runtime === 'bun') env.BUN_INSTALL_CACHE_DIR = at('bun');
  if (runtime === 'python') Object.assign(env, { PIP_CACHE_DIR: at('pip'), UV_CACHE_DIR: at('uv'), POETRY_CACHE_DIR: at('poetry') });
  if (runtime === 'go') Object.assign(env, { GOMODCACHE: at('go/mod'), GOCACHE: at('go/build') });
  if (runtime === 'rust') env.CARGO_HOME = at('cargo');
  if (runtime === 'ruby') Object.assign(env, { BUNDLE_USER_CACHE: at('bundler'), BUNDLE_GLOBAL_GEM_CACHE: 'true' });
  if (runtime === 'php') env.COMPOSER_CACHE_DIR = at('composer');
  return env;
}

/** A build's cache folder, once opened (null: the build runs without one). */
export interface OpenCache {
  dir: string;
}

/**
 * Opens the environment's cache for a build and writes what it restored into the log
 * (`cache: npm 182 MB restored`); null, said in the log, when the build runs without it.
 */
export async function openBuildCache(spec: BuildCacheSpec, note: (line: string) => void): Promise<OpenCache | null> {
  if (spec.noCache) {
    note('cache: not used (noCache): nothing restored, nothing saved');
    return null;
  }
  if (spec.capMb <= 0) {
    note('cache: off (BERTH_BUILD_CACHE_MB=0)');
    return null;
  }
  const root = projectCacheRoot(spec.dataDir, spec.projectId);
  const dir = environmentCacheDir(spec.dataDir, spec.projectId, spec.environment);
  await mkdir(root, { recursive: true, mode: 0o700 });
  let from = '';
  const production = environmentCacheDir(spec.dataDir, spec.projectId, 'production');
  if (spec.environment !== 'production' && !existsSync(dir) && existsSync(production)) {
    // A preview reads production's cache: a copy (links copied as links, blocks shared where the filesystem can).
    await cp(production, dir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true, mode: fsConstants.COPYFILE_FICLONE });
    from = ' (from production)';
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (spec.identity && process.getuid?.() === 0 && (from || lstatSync(dir).uid !== spec.identity.uid)) await chownTree(dir, spec.identity);
  const sizes = await managerSizes(dir);
  if (!sizes.length) note('cache: nothing to restore yet');
  for (const [name, bytes] of sizes) note(`cache: ${name} ${mb(bytes)} restored${from}`);
  return { dir };
}

/**
 * After a build (its box gone): the project's caches cut back to the cap, least recently used files
 * first, then what the environment's cache holds written into the log (`cache: npm 190 MB saved`).
 */
export async function closeBuildCache(cache: OpenCache | null, spec: BuildCacheSpec, note: (line: string) => void): Promise<void> {
  if (!cache) return;
  const removed = await pruneCache(projectCacheRoot(spec.dataDir, spec.projectId), spec.capMb * 1024 * 1024);
  if (removed.files) note(`cache: over BERTH_BUILD_CACHE_MB (${spec.capMb} MB): ${removed.files} least recently used files removed (${mb(removed.bytes)})`);
  const sizes = await managerSizes(cache.dir);
  if (!sizes.length) note('cache: nothing saved');
  for (const [name, bytes] of sizes) note(`cache: ${name} ${mb(bytes)} saved`);
}

/** `182 MB`, `4.2 MB`, `0.03 MB`. */
export function mb(bytes: number): string {
  const n = bytes / (1024 * 1024);
  return `${n >= 10 ? Math.round(n) : n >= 1 ? Math.round(n * 10) / 10 : Math.round(n * 100) / 100} MB`;
}

interface CachedFile {
  path: string;
  bytes: number;
  /** When last read or written (ms): the later of the access and modification times. */
  used: number;
}

/** Every file below `dir` (links count as files; nothing is followed), but in the folder `skip`. */
async function filesBelow(dir: string, out: CachedFile[] = [], skip?: string): Promise<CachedFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const p = path.join(dir, name);
    const st = await lstat(p).catch(() => null);
    if (!st) continue;
    if (st.isDirectory()) {
      if (p !== skip) await filesBelow(p, out, skip);
    }
    else out.push({ path: p, bytes: st.blocks * 512, used: Math.max(st.atimeMs, st.mtimeMs) });
  }
  return out;
}

/** The disk space of each manager's folder that holds anything, in CACHE_MANAGERS order. */
export async function managerSizes(dir: string): Promise<[string, number][]> {
  const out: [string, number][] = [];
  for (const name of CACHE_MANAGERS) {
    const files = await filesBelow(path.join(dir, name));
    const bytes = files.reduce((n, f) => n + f.bytes, 0);
    if (files.length) out.push([name, bytes]);
  }
  return out;
}

/** Removes the least recently used files below `root` until it holds at most `capBytes`. */
export async function pruneCache(root: string, capBytes: number): Promise<{ files: number; bytes: number }> {
  // Kept installs (build-reuse.ts, `.installed/<environment>`) count, and go whole, before any cached file:
  // a file taken out of one would be a broken node_modules the next build copies in.
  const keptRoot = path.join(root, '.installed');
  const kept = await keptInstalls(keptRoot);
  // The kept installs were walked just now (tens of thousands of files for Next.js's): not walked again.
  const files = await filesBelow(root, [], keptRoot);
  let total = files.reduce((n, f) => n + f.bytes, 0) + kept.reduce((n, k) => n + k.bytes, 0);
  const removed = { files: 0, bytes: 0 };
  for (const k of kept) {
    if (total <= capBytes) return removed;
    await rm(k.dir, { recursive: true, force: true });
    total -= k.bytes;
    removed.files += k.files;
    removed.bytes += k.bytes;
  }
  if (total <= capBytes) return removed;
  files.sort((a, b) => a.used - b.used);
  for (const f of files) {
    if (total <= capBytes) break;
    if (!(await removeFile(f.path))) continue;
    total -= f.bytes;
    removed.files++;
    removed.bytes += f.bytes;
  }
  return removed;
}

/** The kept installs below `dir`, least recently kept first. */
async function keptInstalls(dir: string): Promise<{ dir: string; bytes: number; files: number; used: number }[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const out = [];
  for (const name of names) {
    const p = path.join(dir, name);
    const files = await filesBelow(p);
    const used = (await lstat(p).catch(() => null))?.mtimeMs ?? 0;
    out.push({ dir: p, bytes: files.reduce((n, f) => n + f.bytes, 0), files: files.length, used });
  }
  return out.sort((a, b) => a.used - b.used);
}

/** Unlinks a cached file; a read-only folder (Go's module cache) is made writable first when the server is not root. */
async function removeFile(p: string): Promise<boolean> {
  try {
    await unlink(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EACCES') return false;
  }
  try {
    await chmod(path.dirname(p), 0o700);
    await unlink(p);
    return true;
  } catch {
    return false;
  }
}
