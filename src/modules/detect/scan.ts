/**
 * Scanning a project folder: the app at its root, or each app of a monorepo workspace (npm, pnpm,
 * yarn, bun workspaces, + turbo), found by expanding the workspace globs its manifests name, or the
 * folder the root's berth.json names (`rootDirectory`). A scan of a large tree costs a few dozen
 * file reads.
 */
import path from 'node:path';
import { detectApp, type DetectedApp } from './detect.js';
import { berthRootDirectory, nodePackageManager } from './providers/index.js';
import { globFolders } from './folders.js';
import { Facts, listDir } from './facts.js';

export interface ScanResult extends DetectedApp {
  /** `npm`, `pnpm`, `yarn`, `bun` (+ `turbo`) workspaces, or null for a single app. */
  monorepo: string | null;
  /** The deployable apps of a workspace (the top-level fields describe the first one). */
  apps: DetectedApp[];
}

/** Expands workspace globs (`apps/*`, `packages/**`, `services/api`) into folders holding a package.json. */
function expandWorkspaces(root: string, patterns: string[]): string[] {
  const neg = patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1).replace(/\/+$/, ''));
  const out = new Set<string>();
  for (const p of patterns) {
    if (p.startsWith('!')) continue;
    for (const d of globFolders(root, p)) if (listDir(path.join(root, d)).files.has('package.json')) out.add(d);
  }
  return [...out].filter((d) => !neg.some((n) => n === d || (n.includes('*') && new RegExp('^' + n.replace(/\*\*/g, '.+').replace(/\*/g, '[^/]+') + '$').test(d)))).sort();
}

/** Workspace patterns from package.json `workspaces` or pnpm-workspace.yaml. */
function workspacePatterns(f: Facts): string[] {
  const ws = f.pkg?.workspaces;
  const fromPkg = Array.isArray(ws) ? ws : Array.isArray(ws?.packages) ? ws.packages : [];
  const yaml = f.read('pnpm-workspace.yaml') ?? '';
  const fromPnpm: string[] = [];
  const block = /^packages:\s*\n((?:\s+-.*\n?|\s*#.*\n?|\s*\n)*)/m.exec(yaml);
  if (block) for (const m of block[1]!.matchAll(/^\s+-\s*['"]?([^'"#\n]+?)['"]?\s*$/gm)) fromPnpm.push(m[1]!);
  return [...fromPkg, ...fromPnpm].filter((p): p is string => typeof p === 'string' && p.length < 200).slice(0, 100);
}

/** Whether `rel` is a folder below `root`, each step a real folder (a link on the way is not one). */
function folderBelow(root: string, rel: string): boolean {
  let at = '';
  for (const seg of rel.split('/')) {
    if (!listDir(path.join(root, at)).dirs.includes(seg)) return false;
    at = at ? `${at}/${seg}` : seg;
  }
  return true;
}

/** Names of the packages the workspace's packages (and its root) depend on: those are libraries. */
function dependedOn(facts: Facts[]): Set<string> {
  const out = new Set<string>();
  for (const f of facts) for (const d of f.deps) out.add(d);
  return out;
}

/**
 * Scans a project folder: the app at its root, or the apps of its workspace. For a workspace, the
 * top-level answer is the root itself when the root package has a start script, or when no member
 * is an app (as Railpack plans a workspace: install, the root's build script and the root's start,
 * all at the root: a bun workspace whose root runs `index.ts`); otherwise it is the main app of the
 * workspace, planned in its own folder. A berth.json at the root naming a `rootDirectory` makes
 * that folder the app.
 */
export function scanProject(root: string): ScanResult {
  const top = new Facts(root, '', null);
  const patterns = top.pkg ? workspacePatterns(top) : [];
  const monorepoOf = () => (top.hasFile('turbo.json') || top.deps.has('turbo') ? 'turbo' : nodePackageManager(top).id);
  const configured = berthRootDirectory(top);
  if (configured && folderBelow(root, configured)) {
    const app = detectApp(new Facts(root, configured, top));
    return { ...app, monorepo: patterns.length ? monorepoOf() : null, apps: [app] };
  }
  const result = scanFolders(root, top, patterns, monorepoOf);
  if (configured) {
    const note = `berth.json: rootDirectory ${configured} is not a folder of the source; the scan looked at the root`;
    result.plan = { ...result.plan, notes: [...(result.plan.notes ?? []), note] };
  }
  return result;
}

/** The scan without a berth.json rootDirectory: the workspace's apps, or the root's. */
function scanFolders(root: string, top: Facts, patterns: string[], monorepoOf: () => string): ScanResult {
  if (patterns.length) {
    const members = expandWorkspaces(root, patterns).map((rel) => new Facts(root, rel, top));
    const libraries = dependedOn([top, ...members]);
    const apps: DetectedApp[] = [];
    for (const f of members) {
      const app = detectApp(f);
      // A workspace package is an app when it is something to run or serve; a package others depend on
      // is a library unless it has a start script of its own.
      const library = typeof f.pkg?.name === 'string' && libraries.has(f.pkg.name) && !f.script('start');
      if (!library && (app.framework || app.startCommand || app.plan.static || app.runtime === 'docker')) apps.push(app);
    }
    const monorepo = monorepoOf();
    apps.sort((a, b) => rank(a) - rank(b) || a.rootDirectory.localeCompare(b.rootDirectory));
    if (apps.length && !top.script('start')) return { ...apps[0]!, monorepo, apps };
    return { ...detectApp(top), monorepo, apps };
  }
  const app = detectApp(top);
  return { ...app, monorepo: null, apps: [app] };
}

/** Which workspace app is the main one: web front-ends in apps/ first. */
function rank(a: DetectedApp): number {
  let r = 10;
  if (a.rootDirectory.startsWith('apps/')) r -= 4;
  if (/(^|\/)(web|www|site|frontend|app)$/.test(a.rootDirectory)) r -= 3;
  if (a.framework) r -= 1;
  return r;
}
