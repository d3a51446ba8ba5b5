/**
 * The node provider's package managers: which one a folder uses (the `packageManager` field, then
 * lockfiles of the app or the workspace root, then `engines`, else npm), its install command (frozen
 * only where the lockfile can satisfy it), and the tools to provide (pnpm and yarn through corepack,
 * bun from the npm registry) with the versions the folder pins.
 */
import path from 'node:path';
import { readTenantFileSync, type TenantReadOptions } from '../../../lib/tenant-file.js';
import type { Facts } from '../facts.js';
import type { Tool } from '../plan.js';
import { fileVersion, toolVersion } from './versions.js';

export interface NodePm {
  id: 'npm' | 'pnpm' | 'yarn' | 'bun';
  /** `npm run`, `pnpm run`, ... (followed by a script name). */
  run: string;
  /** `npx`, `pnpm exec`, `yarn`, `bunx` (followed by a package binary). */
  exec: string;
  lockfiles: string[];
  /** Yarn 2+ (berry). */
  berry?: boolean;
}

const PMS: Record<NodePm['id'], NodePm> = {
  npm: { id: 'npm', run: 'npm run', exec: 'npx', lockfiles: ['npm-shrinkwrap.json', 'package-lock.json'] },
  pnpm: { id: 'pnpm', run: 'pnpm run', exec: 'pnpm exec', lockfiles: ['pnpm-lock.yaml'] },
  yarn: { id: 'yarn', run: 'yarn run', exec: 'yarn', lockfiles: ['yarn.lock'] },
  bun: { id: 'bun', run: 'bun run', exec: 'bunx', lockfiles: ['bun.lock', 'bun.lockb'] },
};

/** A file of a folder read as a tenant's file (never through a link, never blocking); one that is there but ignored is told to the Facts' listener. */
function readOf(f: Facts, name: string, opts: TenantReadOptions): string | null {
  if (!f.hasFile(name)) return null;
  const rel = path.join(f.rel, name);
  const file = readTenantFileSync(f.root, rel, opts);
  if (file.text === null && file.problem !== 'missing') f.onIgnored?.(rel, file.problem);
  return file.text;
}

/** The first bytes of a file of a folder (lockfiles can be megabytes; their heads say what we need), or null. */
function head(f: Facts, name: string, bytes = 4096): string | null {
  return readOf(f, name, { head: bytes });
}

/**
 * A whole file of a folder up to `max` bytes, or null. npm lockfiles often pass the 1 MiB other
 * tenant files are held to; this read is bounded all the same (a regular file, at most `max` bytes).
 */
function readUpTo(f: Facts, name: string, max = 32 * 1024 * 1024): string | null {
  return readOf(f, name, { max });
}

/** The folder (the app's, else the workspace root's) that holds the first of `names`, with the name found. */
function holderOf(f: Facts, names: string[]): { at: Facts; name: string } | null {
  for (const at of f.top === f ? [f] : [f, f.top]) {
    const name = names.find((n) => at.hasFile(n));
    if (name) return { at, name };
  }
  return null;
}

const isYarnBerryLock = (f: Facts): boolean => {
  const lock = holderOf(f, ['yarn.lock']);
  return !!lock && /^__metadata:/m.test(head(lock.at, lock.name) ?? '');
};

/** An `engines` entry (`pnpm`, `yarn`, `bun`, `node`) of the app, else of the workspace root. */
export function engine(f: Facts, name: string): string | null {
  for (const at of [f, f.top]) {
    const v = at.pkg?.engines?.[name];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return null;
}

/** An exact or caret/tilde `engines` version as a tool version (`9.12.0`, `^8.15` -> `8`); ranges give nothing. */
function engineToolVersion(f: Facts, name: string): string | undefined {
  const v = engine(f, name);
  if (!v) return undefined;
  const exact = /^v?(\d+(?:\.\d+){0,2})$/.exec(v);
  if (exact) return exact[1];
  const caret = /^[\^~]\s*(\d+)(?:\.[\dx*]+){0,2}$/.exec(v);
  return caret ? caret[1] : undefined;
}

/** The app's package manager: the `packageManager` field, then lockfiles (of the app, then of the workspace root), then `engines`, else npm. */
export function nodePackageManager(f: Facts): NodePm {
  const field = f.packageManagerField();
  if (field && field.name in PMS) {
    const pm = PMS[field.name as NodePm['id']];
    return pm.id === 'yarn' ? { ...pm, berry: field.major >= 2 } : pm;
  }
  for (const at of f.top === f ? [f] : [f, f.top]) {
    if (at.hasFile('pnpm-lock.yaml')) return PMS.pnpm;
    if (at.hasFile('bun.lockb') || at.hasFile('bun.lock')) return PMS.bun;
    if (at.hasFile('.yarnrc.yml') || at.hasFile('.yarnrc.yaml')) return { ...PMS.yarn, berry: true };
    if (at.hasFile('yarn.lock')) return { ...PMS.yarn, berry: isYarnBerryLock(f) };
    if (at.hasFile('package-lock.json') || at.hasFile('npm-shrinkwrap.json')) return PMS.npm;
  }
  if (engine(f, 'pnpm')) return PMS.pnpm;
  if (engine(f, 'bun')) return PMS.bun;
  const yarn = engine(f, 'yarn');
  if (yarn) return { ...PMS.yarn, berry: !/^[\^~=v\s]*1(\.|$)/.test(yarn) };
  return PMS.npm;
}

/** The dependencies a package entry declares (name -> spec), from dependencies, optionalDependencies and devDependencies. */
function declared(entry: any): Map<string, string> | null {
  if (!entry || typeof entry !== 'object') return null;
  const out = new Map<string, string>();
  for (const k of ['dependencies', 'optionalDependencies', 'devDependencies']) {
    const deps = entry[k];
    if (deps && typeof deps === 'object') for (const [name, spec] of Object.entries(deps)) out.set(name, String(spec));
  }
  return out;
}

const sameDeclared = (a: Map<string, string> | null, b: Map<string, string> | null): boolean =>
  !!a && !!b && a.size === b.size && [...a].every(([name, spec]) => b.get(name) === spec);

/** The object that follows `"key":` inside the lockfile's `"packages"` (found by text, parsed alone), or undefined. */
function lockEntry(text: string, key: string): any {
  const start = text.indexOf('"packages"');
  if (start < 0) return undefined;
  const re = new RegExp(`${JSON.stringify(key).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s*:\\s*\\{`, 'g');
  re.lastIndex = start;
  const m = re.exec(text);
  if (!m) return undefined;
  const open = m.index + m[0].length - 1;
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      try {
        return JSON.parse(text.slice(open, i + 1));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * Whether `npm ci` will succeed on the lockfile: it is lockfileVersion 2 or later, and its root entry
 * (`packages[""]`) declares exactly the dependencies (names and specs) package.json declares; for an
 * app of a workspace whose lockfile is the root's, the app's own entry must match the app too.
 */
export function npmLockInSync(f: Facts): boolean {
  const lock = holderOf(f, PMS.npm.lockfiles);
  if (!lock) return false;
  const text = readUpTo(lock.at, lock.name);
  if (!text) return false;
  const version = Number(/"lockfileVersion"\s*:\s*(\d+)/.exec(text.slice(0, 8192))?.[1]);
  if (!(version >= 2)) return false;
  if (!sameDeclared(declared(lockEntry(text, '')), declared(lock.at.pkg))) return false;
  if (lock.at !== f && !sameDeclared(declared(lockEntry(text, f.rel)), declared(f.pkg))) return false;
  return true;
}

/** The install command: frozen only where the lockfile is there (and, for npm, in step with package.json). */
export function installCommand(f: Facts, pm: NodePm): string {
  const locked = !!holderOf(f, pm.lockfiles);
  switch (pm.id) {
    case 'pnpm':
      return locked ? 'pnpm install --frozen-lockfile' : 'pnpm install';
    case 'yarn':
      return locked ? (pm.berry ? 'yarn install --immutable' : 'yarn install --frozen-lockfile') : 'yarn install';
    case 'bun':
      return locked ? 'bun install --frozen-lockfile' : 'bun install';
    default:
      return npmLockInSync(f) ? 'npm ci' : 'npm install';
  }
}

/** pnpm's major from its lockfile (`lockfileVersion: 5.3` -> 6, `5.4` -> 7, `6.x` -> 8, `9.0` -> 9), as Railpack reads it. */
function pnpmLockMajor(f: Facts): string | undefined {
  const lock = holderOf(f, ['pnpm-lock.yaml']);
  const m = lock ? /^lockfileVersion:\s*['"]?(\d+)\.(\d+)/m.exec(head(lock.at, lock.name) ?? '') : null;
  if (!m) return undefined;
  const v = `${m[1]}.${m[2]}`;
  return v === '5.3' ? '6' : v === '5.4' ? '7' : m[1] === '6' ? '8' : m[1] === '9' ? '9' : undefined;
}

/** Yarn berry's major from a committed release (`yarnPath: .yarn/releases/yarn-4.1.0.cjs`) or the lockfile's `__metadata.version`. */
function berryVersion(f: Facts): string | undefined {
  for (const at of [f, f.top]) {
    const rc = at.read('.yarnrc.yml') ?? at.read('.yarnrc.yaml') ?? '';
    const m = /^yarnPath:\s*['"]?\S*?yarn-(\d+\.\d+\.\d+)\.c?js/m.exec(rc);
    if (m) return m[1];
  }
  const lock = holderOf(f, ['yarn.lock']);
  const meta = lock ? /^__metadata:\s*\n\s+version:\s*(\d+)/m.exec(head(lock.at, lock.name) ?? '') : null;
  const v = meta ? Number(meta[1]) : 0;
  return v >= 8 ? '4' : v >= 6 ? '3' : v === 4 ? '2' : undefined;
}

/** The version a `packageManager` field pins for `name`, or undefined. */
function fieldVersion(f: Facts, name: string): string | undefined {
  const field = f.packageManagerField();
  return field?.name === name ? field.version : undefined;
}

export const BUN_COMMAND = /(?:^|\s|;|&|\|)bunx?\s/;

/** The programs the package manager (and bun-run scripts) need beyond Node: pnpm and yarn through corepack, bun from the npm registry. */
export function toolsOf(f: Facts, pm: NodePm): Tool[] {
  const tools: Tool[] = [];
  const add = (name: Tool['name'], version: string | undefined) => tools.push(version ? { name, version } : { name });
  if (pm.id === 'pnpm') add('pnpm', fieldVersion(f, 'pnpm') ?? engineToolVersion(f, 'pnpm') ?? pnpmLockMajor(f));
  if (pm.id === 'yarn') add('yarn', fieldVersion(f, 'yarn') ?? (pm.berry ? berryVersion(f) : undefined) ?? engineToolVersion(f, 'yarn') ?? (pm.berry ? undefined : '1'));
  const scripts = f.pkg?.scripts && typeof f.pkg.scripts === 'object' ? Object.values(f.pkg.scripts as Record<string, unknown>) : [];
  if (pm.id === 'bun' || scripts.some((s) => typeof s === 'string' && BUN_COMMAND.test(s))) {
    const pin = fieldVersion(f, 'bun') ?? engineToolVersion(f, 'bun') ?? fileVersion(f, '.bun-version')?.value ?? toolVersion(f, ['bun'])?.value;
    add('bun', pin);
  }
  return tools;
}
