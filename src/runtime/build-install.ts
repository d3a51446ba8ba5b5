/** What a build's install step needs: whether it runs at all (`npmInstallIsNoop`), and a way out to its registry (`checkRegistry`). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readTenantFile } from '../lib/tenant-file.js';
import { BuildError } from './build-error.js';
import type { Box, RuntimeDriver } from './driver.js';
import { checkInstallEgress, registryOf } from './egress.js';

/** Fields of package.json that give `npm install` something to install or link. */
const INSTALLS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'bundledDependencies', 'workspaces', 'overrides'];
/** Scripts `npm install` runs in the package itself. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare', 'dependencies'];
/** Files and folders next to package.json that `npm install` would read or change. */
const NPM_STATE = ['package-lock.json', 'npm-shrinkwrap.json', 'node_modules'];

const empty = (v: unknown) => v === undefined || v === null || (Array.isArray(v) ? v.length === 0 : typeof v === 'object' && Object.keys(v as object).length === 0);

/**
 * Whether the planned `npm install` in `appDir` would do nothing but write a lockfile: its package.json
 * (read as a tenant's file) names no dependency of any kind, no workspaces or overrides, and no script
 * npm runs on install; no lockfile or node_modules lies beside it; and no folder between the source
 * root and the app folder has a package.json of its own (a workspace root npm would install instead).
 * Such a build skips the step, its box and the registry pre-check (a hello-world app's build: docs/builds.md).
 * Anything unreadable or unexpected answers false (the install runs).
 */
export async function npmInstallIsNoop(srcDir: string, appDir: string): Promise<boolean> {
  const rel = path.relative(srcDir, appDir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return false;
  for (let dir = path.dirname(appDir); rel && dir.length >= srcDir.length && dir.startsWith(srcDir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return false;
    if (dir === srcDir) break;
  }
  if (NPM_STATE.some((n) => existsSync(path.join(appDir, n)))) return false;
  const file = await readTenantFile(srcDir, path.join(rel, 'package.json'));
  if (file.text === null) return false;
  let pkg: Record<string, unknown>;
  try {
    const v = JSON.parse(file.text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
    pkg = v as Record<string, unknown>;
  } catch {
    return false;
  }
  if (!INSTALLS.every((k) => empty(pkg[k]))) return false;
  const scripts = pkg.scripts;
  if (scripts !== undefined && (typeof scripts !== 'object' || scripts === null || Array.isArray(scripts))) return false;
  return !INSTALL_SCRIPTS.some((s) => (scripts as Record<string, unknown> | undefined)?.[s] !== undefined);
}

/** Fails the build at once, naming the host and the likely cause, when the box cannot reach its registry. */
export async function checkRegistry(box: Box, runtime: string, env: Record<string, string>, appDir: string, boxPath: string, driver: RuntimeDriver, note: (line: string) => void): Promise<void> {
  // The app folder's .npmrc may name another registry (read as a tenant's file: no links, no blocking).
  const npmrc = runtime === 'node' || runtime === 'bun' ? (await readTenantFile(appDir, '.npmrc')).text : null;
  const target = registryOf(runtime, env, npmrc);
  if (!target) return;
  let resolvConf = '';
  try {
    resolvConf = readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    /* none */
  }
  const why = await checkInstallEgress(box, target, { cwd: appDir, path: boxPath, node: driver.boxPath === undefined ? process.execPath : null, resolvConf }, note);
  if (why) throw new BuildError(why);
}
