import { createHash } from 'node:crypto';
import { existsSync, lstatSync, realpathSync, statSync } from 'node:fs';
import { lstat, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readTenantFile } from '../lib/tenant-file.js';
import type { Identity } from './driver.js';
import { chownTree } from './identity.js';
import { copyContents, run } from './disk-image.js';
import { findProgram } from './toolchains.js';
import { mountKeptInstall } from './build-overlay.js';
import { INSTALL_KINDS, localPathsHash } from './build-reuse-kinds.js';

/**
 * Reused installs (contract section 21, issue 39 point 2): when the lockfile, the install command and the
 * runtime are unchanged since the environment's last build whose steps succeeded, the install step is
 * skipped and the folders that build's install filled are copied in instead.
 *
 * After such a build, its app folder's install folders (Node.js: `node_modules` without `.cache`; Python:
 * `.venv`; Ruby: `vendor/bundle` and `.bundle`; PHP: `vendor`: build-reuse-kinds.ts) are copied to
 * `<data-dir>/build-cache/<project>/.installed/<environment>/` beside a `key` file (the sha256 of what the
 * install depends on: `installKeyOf`) and a `from` file (the deployment). That folder is not inside any
 * box (a build sees only its environment's cache folder), so a build can neither read another's nor
 * change the kept copy. The next build computes its key before its box opens; when it matches the
 * environment's kept key (a preview's first build also tries production's), the kept copy (owned by the
 * project's uid) is shown in the app folder and the install step is left out with a log line (or the log
 * says why not): a node_modules is mounted beneath the build's writes (build-overlay.ts) when the build's
 * folders are on their own image and the server runs as root; anything else is copied (reflinks where the
 * filesystem can, else plain copies; links inside are copied as links, never followed). Only installs with
 * a lockfile in the app folder and no workspace are reused; anything else installs as before.
 */

/** Lockfiles, in the order a folder's is looked for. */
const LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb'];
/** Fields of package.json an install reads. */
const INSTALL_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'bundledDependencies', 'overrides', 'resolutions', 'pnpm', 'packageManager', 'engines', 'scripts'];
const LOCKFILE_MAX = 64 * 1024 * 1024;
/** What a Node.js install leaves in the app folder. */
const NODE_FOLDERS = ['node_modules'];

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
  /** Whether the box shows the app folder at the same path every build (false: the process driver). */
  samePathEachBuild?: boolean;
}

/** Where an environment's kept install lies. */
export function installsDir(cacheDir: string, environment = path.basename(cacheDir)): string {
  return path.join(path.dirname(cacheDir), '.installed', environment);
}

/** An install's key and what it leaves in the app folder, or why it is not reused (null: nothing to say). */
export type InstallKeyResult = { key: string; folders: string[]; afterReuse: string | null } | { why: string | null };

/**
 * The key of an install: null when the folder is not one whose install is reused (a runtime without a
 * kept install, no lockfile, a workspace, node_modules in the source, a file that cannot be read safely).
 */
export async function installKey(k: InstallKeyInput): Promise<string | null> {
  const r = await installKeyOf(k);
  return 'key' in r ? r.key : null;
}

export async function installKeyOf(k: InstallKeyInput): Promise<InstallKeyResult> {
  const rel = path.relative(k.srcDir, k.appDir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return { why: null };
  if (k.runtime === 'node' || k.runtime === 'bun') return nodeKey(k, rel);
  const kind = INSTALL_KINDS[k.runtime];
  if (!kind) return { why: null };
  if (kind.fixedPath && k.samePathEachBuild === false) return { why: `${kind.folders.join(', ')} names the path it was made at, and this runtime driver shows each build's folder at a path of its own` };
  if (k.runtime !== 'python' && lstatExists(path.join(k.appDir, 'package.json'))) return { why: 'the install includes the package.json beside it (Node.js assets)' };
  for (const f of kind.folders) {
    const parts = f.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const st = lstatSync(path.join(k.appDir, ...parts.slice(0, i)), { throwIfNoEntry: false });
      if (st && (i === parts.length || !st.isDirectory())) return { why: `${parts.slice(0, i).join('/')} is in the source` };
    }
  }
  const lockName = kind.lockfiles.find((n) => lstatExists(path.join(k.appDir, n)));
  if (!lockName) return { why: `no lockfile (${kind.lockfiles.join(', ')})` };
  const lock = await readTenantFile(k.srcDir, path.join(rel, lockName), { max: LOCKFILE_MAX });
  if (lock.text === null) return { why: `${lockName}: ${lock.problem}` };
  const hash = createHash('sha256');
  const manifests: [string, string | null][] = [];
  for (const m of kind.manifests) {
    const f = await readTenantFile(k.srcDir, path.join(rel, m), { max: LOCKFILE_MAX });
    if (f.text === null && f.problem !== 'missing') return { why: `${m}: ${f.problem}` };
    manifests.push([m, f.text]);
  }
  const locals = kind.localPaths ? kind.localPaths(lockName, lock.text) : [];
  if (!locals) return { why: `${lockName} names a local package outside the source` };
  const localHash = locals.length ? await localPathsHash(k.srcDir, k.appDir, locals).catch(() => null) : '';
  if (localHash === null) return { why: `${lockName} names a local package that cannot be hashed (outside the source, a link, or too large)` };
  hash.update(JSON.stringify({ v: 1, ...common(k, rel), lockName, manifests, localHash }));
  hash.update('\0');
  hash.update(lock.text);
  return { key: hash.digest('hex'), folders: kind.folders, afterReuse: kind.afterReuse?.(k.install) ?? null };
}

/** What every key depends on besides the files. */
const common = (k: InstallKeyInput, rel: string) => ({
  rel,
  runtime: k.runtime,
  runtimeVersion: k.runtimeVersion,
  install: k.install,
  tools: k.tools.map((t) => `${t.name}@${t.version ?? ''}`),
  env: Object.keys(k.env).sort().map((n) => `${n}=${k.env[n]}`),
});

async function nodeKey(k: InstallKeyInput, rel: string): Promise<InstallKeyResult> {
  // A workspace root above the app folder installs for all of them: not reused.
  for (let dir = path.dirname(k.appDir); rel && dir.startsWith(k.srcDir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return { why: 'the app folder is part of a workspace' };
    if (dir === k.srcDir) break;
  }
  const there = ['node_modules', 'pnpm-workspace.yaml', '.pnp.cjs'].find((n) => lstatExists(path.join(k.appDir, n)));
  if (there) return { why: `${there} is in the source` };
  const pkgFile = await readTenantFile(k.srcDir, path.join(rel, 'package.json'));
  if (pkgFile.text === null) return { why: `package.json: ${pkgFile.problem}` };
  let pkg: Record<string, unknown>;
  try {
    pkg = JSON.parse(pkgFile.text) as Record<string, unknown>;
  } catch {
    return { why: 'package.json is not JSON' };
  }
  if (!pkg || typeof pkg !== 'object' || Array.isArray(pkg)) return { why: 'package.json is not an object' };
  if (pkg.workspaces !== undefined) return { why: 'package.json names workspaces' };
  const lockName = LOCKFILES.find((n) => lstatExists(path.join(k.appDir, n)));
  if (!lockName) return { why: `no lockfile (${LOCKFILES.join(', ')})` };
  const lock = await readTenantFile(k.srcDir, path.join(rel, lockName), { max: LOCKFILE_MAX });
  if (lock.text === null) return { why: `${lockName}: ${lock.problem}` };
  const hash = createHash('sha256');
  const c = common(k, rel);
  // The same fields in the same order as before other runtimes were reused: a kept node_modules stays valid.
  hash.update(JSON.stringify({ v: 1, rel, runtime: c.runtime, runtimeVersion: c.runtimeVersion, install: c.install, tools: c.tools, lockName, pkg: INSTALL_FIELDS.map((f) => [f, pkg[f] ?? null]), env: c.env }));
  hash.update('\0');
  hash.update(lock.text);
  return { key: hash.digest('hex'), folders: NODE_FOLDERS, afterReuse: null };
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

/**
 * What names the runtime an install ran on, from the host: Node.js's and Bun's program, as before; another
 * runtime's every program the plan names (python3 and uv, ruby and bundle, php and composer).
 */
export function hostRuntimeVersion(runtime: string, programs: string[], hostPath: string): string {
  if (runtime === 'node' || runtime === 'bun' || !programs.length) return hostProgramVersion(runtime === 'bun' ? 'bun' : 'node', hostPath);
  return programs.map((p) => hostProgramVersion(p, hostPath)).join('; ');
}

/** The kept install whose key is `key`: the environment's own, else (a preview) production's; null: none. */
export async function findKeptInstall(cacheDir: string, key: string, folders: string[] = NODE_FOLDERS): Promise<{ dir: string; from: string; deployment: string | null } | null> {
  const env = path.basename(cacheDir);
  for (const from of env === 'production' ? [env] : [env, 'production']) {
    const dir = installsDir(cacheDir, from);
    const kept = await readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
    if (kept === key && folders.every((f) => existsSync(path.join(dir, f)))) return { dir, from, deployment: await keptBy(dir) };
  }
  return null;
}

/** The deployment whose build kept the install in `dir` (null: unknown, kept before it was written). */
async function keptBy(dir: string): Promise<string | null> {
  const id = (await readFile(path.join(dir, 'from'), 'utf8').catch(() => '')).trim();
  return /^[\w-]{1,100}$/.test(id) ? id : null;
}

/**
 * Shows a kept install in the app folder (no box runs: nothing of the tenant's moves meanwhile), the
 * project's own: a node_modules mounted (build-overlay.ts) when `workDir`, the build's folder, is on its
 * own image and the server is root; anything else copied (reflinks where the filesystem can).
 */
export async function restoreInstall(kept: string, appDir: string, identity: Identity | null, workDir?: string, folders: string[] = NODE_FOLDERS): Promise<'mounted' | 'copied'> {
  const app = realpathSync(appDir);
  for (const f of folders) if (lstatExists(path.join(app, f))) throw new Error(`the app folder has a ${f} already`);
  if (workDir && folders.length === 1 && folders[0] === 'node_modules' && (await mountKeptInstall(kept, app, workDir, identity))) return 'mounted';
  // coreutils' cp (reflinks where the filesystem can, links as links, modes and times kept): 3-5 times
  // faster than node's fs.cp on a node_modules of thousands of files, and this copy is on the path of
  // every build that reuses its install. The kept copy holds only files, folders and links (keepInstall).
  for (const f of folders) {
    const target = path.join(app, f);
    // A parent the install made (`vendor` of vendor/bundle) is the project's, as the install would have left it.
    const made = await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
    await mkdir(target, { mode: 0o755 });
    await copyContents(path.join(kept, f), target);
    if (identity && process.getuid?.() === 0) await chownTree(made ? [made, target] : [target], identity);
  }
  return 'copied';
}

/**
 * Copies an install folder to be kept (`to`, new) with coreutils' cp: links as links (never followed),
 * modes and times kept to the nanosecond (node's fs.cp keeps milliseconds: the docker runtime's image
 * build compares a context's files by size and time, so a release made of the kept copy would send every
 * file of node_modules again: docker/build-context.ts), reflinks where the filesystem has them; `skip`, a
 * top-level name left out (tools' caches, node_modules/.cache, are not the install). Anything but files,
 * folders and links (a FIFO or socket a build left) is removed from the copy.
 */
async function keepFolder(from: string, to: string, skip: string | null): Promise<void> {
  // A nested install folder (Ruby's `vendor/bundle`) needs its parents in the copy first.
  await mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
  await mkdir(to, { mode: (await lstat(from)).mode & 0o7777 });
  const names = (await readdir(from)).filter((n) => n !== skip).map((n) => path.join(from, n));
  if (names.length) await run('cp', ['-a', '--reflink=auto', '-t', to, '--', ...names], 24 * 3600_000);
  await run('find', [to, '(', '-type', 'p', '-o', '-type', 's', '-o', '-type', 'b', '-o', '-type', 'c', ')', '-delete'], 3600_000);
}

/**
 * Keeps the app folder's installed dependencies (`folders`, all of them, else nothing) for the next build
 * (after its box is gone), replacing the environment's kept one; answers the bytes kept, or null when
 * there was nothing to keep. `deployment`: the build's, named in the next build's log.
 */
export async function keepInstall(cacheDir: string, key: string, appDir: string, identity: Identity | null = null, folders: string[] = NODE_FOLDERS, deployment?: string): Promise<number | null> {
  for (const f of folders) {
    const st = await lstat(path.join(appDir, f)).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  const dir = installsDir(cacheDir);
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true, mode: 0o700 });
  try {
    for (const f of folders) {
      await keepFolder(path.join(appDir, f), path.join(tmp, f), f === 'node_modules' ? '.cache' : null);
      // The project's, as its build left it: a build that mounts it (build-overlay.ts) writes beside it as that uid.
      if (identity && process.getuid?.() === 0) await chownTree(path.join(tmp, f), identity);
    }
    await writeFile(path.join(tmp, 'key'), key, { mode: 0o600 });
    if (deployment) await writeFile(path.join(tmp, 'from'), deployment, { mode: 0o600 });
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
  let bytes = 0;
  for (const f of folders) bytes += await dirBytes(path.join(dir, f));
  return bytes;
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

/**
 * A build's reuse of its install: its key and folders, whether the kept install was copied in (the step is
 * left out), and what runs in the step's place (`then`: `composer dump-autoload`).
 */
export interface InstallReuse {
  key: string;
  reused: boolean;
  folders: string[];
  then: string | null;
}

/**
 * Before a build's box opens: the kept install is copied in when its key matches (`prepare` runs first:
 * the build's folders move onto their disk image), said in the log, or why not; null when the build's
 * install is not one that is reused (or the build runs without its cache).
 */
export async function reuseInstall(cacheDir: string | null | undefined, k: InstallKeyInput, identity: Identity | null, prepare: () => Promise<void>, note: (line: string) => void, workDir?: string): Promise<InstallReuse | null> {
  if (!cacheDir) return null;
  const r = await installKeyOf(k).catch((): InstallKeyResult => ({ why: 'its files could not be read' }));
  if (!('key' in r)) {
    if (r.why) note(`install: not reused: ${r.why}`);
    return null;
  }
  const base = { key: r.key, folders: r.folders, then: r.afterReuse };
  const kept = await findKeptInstall(cacheDir, r.key, r.folders);
  if (!kept) {
    note(`install: not reused: ${await whyNotKept(cacheDir)}`);
    return { ...base, reused: false };
  }
  try {
    await prepare();
    await restoreInstall(kept.dir, k.appDir, identity, workDir, r.folders);
  } catch (e) {
    for (const f of r.folders) await rm(path.join(k.appDir, f), { recursive: true, force: true }).catch(() => {});
    note(`install: the kept dependencies could not be copied in (${(e as NodeJS.ErrnoException).code ?? 'an error'}): installing`);
    return { ...base, reused: false };
  }
  const of = kept.from === path.basename(cacheDir) ? 'the last build' : `${kept.from}'s last build`;
  const by = kept.deployment ? ` (${kept.deployment})` : '';
  note(`install: reused the dependencies ${of}${by} installed (lockfile, install command and runtime unchanged): ${k.install} skipped${r.afterReuse ? `; then ${r.afterReuse}` : ''}`);
  return { ...base, reused: true };
}

/** Why no kept install matched: none yet, or the environment's (or production's) was made for another key. */
async function whyNotKept(cacheDir: string): Promise<string> {
  const env = path.basename(cacheDir);
  for (const from of env === 'production' ? [env] : [env, 'production']) {
    const dir = installsDir(cacheDir, from);
    if (!existsSync(path.join(dir, 'key'))) continue;
    const by = await keptBy(dir);
    return `the lockfile, install command or runtime changed since ${by ? `${by}'s install` : `${from}'s last kept install`}`;
  }
  return 'no install kept yet';
}

/** After a build whose steps succeeded: its install kept for the next one (a reused one is kept already). */
export async function keepInstallAfter(cacheDir: string | null | undefined, reuse: InstallReuse | null, appDir: string, note: (line: string) => void, identity: Identity | null = null, deployment?: string): Promise<void> {
  if (!cacheDir || !reuse || reuse.reused) return;
  try {
    const bytes = await keepInstall(cacheDir, reuse.key, appDir, identity, reuse.folders, deployment);
    if (bytes !== null) note(`cache: installed dependencies kept for the next build (${(bytes / 1048576).toFixed(1)} MB)`);
  } catch (e) {
    note(`cache: the installed dependencies could not be kept (${(e as NodeJS.ErrnoException).code ?? 'an error'})`);
  }
}
