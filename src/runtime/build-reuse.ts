import { createHash } from 'node:crypto';
import { existsSync, lstatSync, realpathSync, statSync } from 'node:fs';
import { cp, lstat, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import path from 'node:path';
import { readTenantFile } from '../lib/tenant-file.js';
import type { Identity } from './driver.js';
import { chownTree } from './identity.js';
import { copyContents } from './disk-image.js';
import { findProgram } from './toolchains.js';
import { mountKeptInstall } from './build-overlay.js';

/**
 * Reused installs (contract section 21, issue 39 point 2): when the lockfile, the install command and the
 * runtime are unchanged since the environment's last build whose steps succeeded, the install step is
 * skipped and that build's `node_modules` is copied in instead.
 *
 * After such a build, its app folder's `node_modules` (without `.cache`) is copied to
 * `<data-dir>/build-cache/<project>/.installed/<environment>/` beside a `key` file: the sha256 of what the
 * install depends on (`installKey`). That folder is not inside any box (a build sees only its
 * environment's cache folder), so a build can neither read another's nor change the kept copy. The next
 * build computes its key before its box opens; when it matches the environment's kept key (a preview's first
 * build also tries production's), the kept copy (owned by the project's uid) is shown in the app folder and
 * the install step is left out with a log line: mounted beneath the build's writes (build-overlay.ts) when
 * the build's folders are on their own image and the server runs as root, else copied (reflinks where the
 * filesystem can, else plain copies; links inside are copied as links, never followed). Only Node.js installs (npm, pnpm, yarn with
 * node_modules, bun) with a lockfile in the app folder and no workspace are reused; anything else installs
 * as before.
 */

/** Lockfiles, in the order a folder's is looked for. */
const LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb'];
/** Fields of package.json an install reads. */
const INSTALL_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'bundledDependencies', 'overrides', 'resolutions', 'pnpm', 'packageManager', 'engines', 'scripts'];
const LOCKFILE_MAX = 64 * 1024 * 1024;

export interface InstallKeyInput {
  srcDir: string;
  appDir: string;
  runtime: string;
  /** The install command as the log shows it. */
  install: string;
  /** What names the runtime the install runs on: a base image, or the host's node program. */
  runtimeVersion: string;
  tools: { name: string; version?: string }[];
  /** The variables the install sees (the project's and the plan's). */
  env: Record<string, string>;
}

/** Where an environment's kept install lies. */
export function installsDir(cacheDir: string, environment = path.basename(cacheDir)): string {
  return path.join(path.dirname(cacheDir), '.installed', environment);
}

/**
 * The key of an install: null when the folder is not one whose install is reused (not Node.js, no
 * lockfile, a workspace, node_modules in the source, a file that cannot be read safely).
 */
export async function installKey(k: InstallKeyInput): Promise<string | null> {
  if (k.runtime !== 'node' && k.runtime !== 'bun') return null;
  const rel = path.relative(k.srcDir, k.appDir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  // A workspace root above the app folder installs for all of them: not reused.
  for (let dir = path.dirname(k.appDir); rel && dir.startsWith(k.srcDir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return null;
    if (dir === k.srcDir) break;
  }
  if (['node_modules', 'pnpm-workspace.yaml', '.pnp.cjs'].some((n) => lstatExists(path.join(k.appDir, n)))) return null;
  const pkgFile = await readTenantFile(k.srcDir, path.join(rel, 'package.json'));
  if (pkgFile.text === null) return null;
  let pkg: Record<string, unknown>;
  try {
    pkg = JSON.parse(pkgFile.text) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!pkg || typeof pkg !== 'object' || Array.isArray(pkg) || pkg.workspaces !== undefined) return null;
  const lockName = LOCKFILES.find((n) => lstatExists(path.join(k.appDir, n)));
  if (!lockName) return null;
  const lock = await readTenantFile(k.srcDir, path.join(rel, lockName), { max: LOCKFILE_MAX });
  if (lock.text === null) return null;
  const hash = createHash('sha256');
  hash.update(JSON.stringify({
    v: 1,
    rel,
    runtime: k.runtime,
    runtimeVersion: k.runtimeVersion,
    install: k.install,
    tools: k.tools.map((t) => `${t.name}@${t.version ?? ''}`),
    lockName,
    pkg: INSTALL_FIELDS.map((f) => [f, pkg[f] ?? null]),
    env: Object.keys(k.env).sort().map((n) => `${n}=${k.env[n]}`),
  }));
  hash.update('\0');
  hash.update(lock.text);
  return hash.digest('hex');
}

/** The host's program a sandboxed install runs (`node`): its real path, size and time, so an upgrade changes the key. */
export function hostProgramVersion(program: string, hostPath: string): string {
  const found = findProgram(program, hostPath);
  if (!found) return `${program}: none`;
  try {
    const real = realpathSync(found);
    const st = statSync(real);
    return `${real} ${st.size} ${Math.round(st.mtimeMs)}`;
  } catch {
    return found;
  }
}

/** The kept install whose key is `key`: the environment's own, else (a preview) production's; null: none. */
export async function findKeptInstall(cacheDir: string, key: string): Promise<{ dir: string; from: string } | null> {
  const env = path.basename(cacheDir);
  for (const from of env === 'production' ? [env] : [env, 'production']) {
    const dir = installsDir(cacheDir, from);
    const kept = await readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
    if (kept === key && existsSync(path.join(dir, 'node_modules'))) return { dir, from };
  }
  return null;
}

/**
 * Shows a kept install in the app folder (no box runs: nothing of the tenant's moves meanwhile), the
 * project's own: mounted (build-overlay.ts) when `workDir`, the build's folder, is on its own image and
 * the server is root; else copied.
 */
export async function restoreInstall(kept: string, appDir: string, identity: Identity | null, workDir?: string): Promise<'mounted' | 'copied'> {
  const target = path.join(realpathSync(appDir), 'node_modules');
  if (lstatExists(target)) throw new Error('the app folder has a node_modules already');
  if (workDir && (await mountKeptInstall(kept, realpathSync(appDir), workDir, identity))) return 'mounted';
  // coreutils' cp (reflinks where the filesystem can, links as links, modes and times kept): 3-5 times
  // faster than node's fs.cp on a node_modules of thousands of files, and this copy is on the path of
  // every build that reuses its install. The kept copy holds only files, folders and links (keepInstall).
  await mkdir(target, { mode: 0o755 });
  await copyContents(path.join(kept, 'node_modules'), target);
  if (identity && process.getuid?.() === 0) await chownTree(target, identity);
  return 'copied';
}

/**
 * Keeps the app folder's installed dependencies for the next build (after its box is gone), replacing the
 * environment's kept one; answers the bytes kept, or null when there was nothing to keep.
 */
export async function keepInstall(cacheDir: string, key: string, appDir: string, identity: Identity | null = null): Promise<number | null> {
  const from = path.join(appDir, 'node_modules');
  const st = await lstat(from).catch(() => null);
  if (!st?.isDirectory()) return null;
  const dir = installsDir(cacheDir);
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true, mode: 0o700 });
  try {
    await cp(from, path.join(tmp, 'node_modules'), {
      recursive: true,
      verbatimSymlinks: true,
      preserveTimestamps: true,
      mode: fsConstants.COPYFILE_FICLONE,
      // Tools' caches (.cache) are not the install; anything but files, folders and links is left out.
      filter: (src) => {
        if (src === path.join(from, '.cache')) return false;
        const s = lstatSync(src, { throwIfNoEntry: false });
        return !!s && (s.isFile() || s.isDirectory() || s.isSymbolicLink());
      },
    });
    // The project's, as its build left it: a build that mounts it (build-overlay.ts) writes beside it as that uid.
    if (identity && process.getuid?.() === 0) await chownTree(path.join(tmp, 'node_modules'), identity);
    await writeFile(path.join(tmp, 'key'), key, { mode: 0o600 });
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
  return dirBytes(path.join(dir, 'node_modules'));
}

function lstatExists(p: string): boolean {
  return !!lstatSync(p, { throwIfNoEntry: false });
}

export async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else total += ((await lstat(p).catch(() => null))?.blocks ?? 0) * 512;
    }
  };
  await walk(dir);
  return total;
}

/**
 * Whether a later step's command may remove or reinstall `node_modules` (`rm -rf node_modules`, `npm ci`,
 * any package manager's install): it cannot remove a mount point (EBUSY), so such a build gets the kept
 * install copied, as before mounting, never mounted. A plain word match: a false positive only costs the copy.
 */
export function laterStepsTouchInstall(commands: string[]): boolean {
  return commands.some((c) => /\bnode_modules\b|\b(npm|pnpm|yarn|bun)\s+(ci|clean-install|install-clean|i|install|add)\b|\byarn\s*(&&|;|\|\||$)/.test(c));
}

/** A build's reuse of its install: its key, and whether the kept install was copied in (the step is left out). */
export interface InstallReuse {
  key: string;
  reused: boolean;
}

/**
 * Before a build's box opens: the kept install is copied in when its key matches (`prepare` runs first:
 * the build's folders move onto their disk image), said in the log; null when the build's install is not
 * one that is reused (or the build runs without its cache).
 */
export async function reuseInstall(cacheDir: string | null | undefined, k: InstallKeyInput, identity: Identity | null, prepare: () => Promise<void>, note: (line: string) => void, workDir?: string): Promise<InstallReuse | null> {
  if (!cacheDir) return null;
  const key = await installKey(k).catch(() => null);
  if (!key) return null;
  const kept = await findKeptInstall(cacheDir, key);
  if (!kept) return { key, reused: false };
  try {
    await prepare();
    await restoreInstall(kept.dir, k.appDir, identity, workDir);
  } catch (e) {
    await rm(path.join(k.appDir, 'node_modules'), { recursive: true, force: true }).catch(() => {});
    note(`install: the kept dependencies could not be copied in (${(e as NodeJS.ErrnoException).code ?? 'an error'}): installing`);
    return { key, reused: false };
  }
  const of = kept.from === path.basename(cacheDir) ? 'the last build' : `${kept.from}'s last build`;
  note(`install: reused the dependencies ${of} installed (lockfile, install command and runtime unchanged): ${k.install} skipped`);
  return { key, reused: true };
}

/** After a build whose steps succeeded: its install kept for the next one (a reused one is kept already). */
export async function keepInstallAfter(cacheDir: string | null | undefined, reuse: InstallReuse | null, appDir: string, note: (line: string) => void, identity: Identity | null = null): Promise<void> {
  if (!cacheDir || !reuse || reuse.reused) return;
  try {
    const bytes = await keepInstall(cacheDir, reuse.key, appDir, identity);
    if (bytes !== null) note(`cache: installed dependencies kept for the next build (${(bytes / 1048576).toFixed(1)} MB)`);
  } catch (e) {
    note(`cache: the installed dependencies could not be kept (${(e as NodeJS.ErrnoException).code ?? 'an error'})`);
  }
}
