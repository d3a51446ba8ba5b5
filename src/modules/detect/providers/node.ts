/**
 * The node provider: a folder with a package.json (npm, pnpm, yarn, bun). Frameworks come from
 * node-frameworks.ts; a package.json script of the same name always wins over a framework's
 * default command. Static frameworks (Vite, CRA, Angular, Astro static, ...) plan a static site.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider, type Tool } from '../plan.js';
import { NODE_FRAMEWORKS, type NodeFramework } from './node-frameworks.js';
import { pinned } from './versions.js';

interface NodePm {
  id: 'npm' | 'pnpm' | 'yarn' | 'bun';
  lockfiles: string[];
  run: string;
  exec: string;
}

const PMS: NodePm[] = [
  { id: 'pnpm', lockfiles: ['pnpm-lock.yaml'], run: 'pnpm run', exec: 'pnpm exec' },
  { id: 'yarn', lockfiles: ['yarn.lock'], run: 'yarn run', exec: 'yarn' },
  { id: 'bun', lockfiles: ['bun.lock', 'bun.lockb'], run: 'bun run', exec: 'bunx' },
  { id: 'npm', lockfiles: ['package-lock.json', 'npm-shrinkwrap.json'], run: 'npm run', exec: 'npx' },
];

/** The app's package manager: the `packageManager` field, then lockfiles (of the app or the workspace root), else npm. */
export function nodePackageManager(f: Facts): NodePm {
  const field = f.packageManagerField();
  if (field) {
    const pm = PMS.find((p) => p.id === field.name);
    if (pm) return pm;
  }
  for (const pm of PMS) if (pm.lockfiles.some((l) => f.hasFile(l) || f.top.hasFile(l))) return pm;
  return PMS.find((p) => p.id === 'npm')!;
}

function installCommand(f: Facts, pm: NodePm): string {
  switch (pm.id) {
    case 'pnpm':
      return 'pnpm install --frozen-lockfile';
    case 'yarn':
      return f.yarnBerry() ? 'yarn install --immutable' : 'yarn install --frozen-lockfile';
    case 'bun':
      return 'bun install --frozen-lockfile';
    default:
      return f.hasRootFile('package-lock.json') || f.hasRootFile('npm-shrinkwrap.json') ? 'npm ci' : 'npm install';
  }
}

function matchFramework(f: Facts): NodeFramework | null {
  for (const rule of NODE_FRAMEWORKS) {
    const hit = (rule.deps ?? []).some((d) => f.deps.has(d)) || (rule.files ?? []).some((x) => f.hasFile(x));
    if (hit && (!rule.when || rule.when(f))) return rule;
  }
  return null;
}

function value<T>(v: T | ((f: Facts) => T) | undefined, f: Facts): T | undefined {
  return typeof v === 'function' ? (v as (f: Facts) => T)(f) : v;
}

/** A port written into a start script (`--port 4000`, `-p 4000`, `PORT=4000`). */
export function portFrom(script: string | null): number | null {
  if (!script) return null;
  const m = /(?:--port[= ]|-p\s+|PORT=)(\d{2,5})\b/.exec(script);
  const n = m ? Number(m[1]) : NaN;
  return n >= 1 && n <= 65535 ? n : null;
}

/** The tools the package manager needs beyond Node itself (pnpm and yarn through corepack, bun from the npm registry). */
function toolsOf(f: Facts, pm: NodePm): Tool[] {
  if (pm.id === 'npm') return [];
  const field = f.packageManagerField();
  const version = field?.name === pm.id ? field.version : undefined;
  return [{ name: pm.id, ...(version ? { version } : {}) }];
}

/** Start scripts that only run a static framework's dev server (`ng serve`): the site is still static. */
const DEFAULT_STARTS = new Set(['ng serve', 'react-scripts start', 'next start']);

export const nodeProvider: Provider = {
  name: 'node',
  detect: (f) => !!f.pkg,
  plan(f): Detection {
    const pm = nodePackageManager(f);
    const rule = matchFramework(f);
    const sub = (cmd: string | null | undefined): string | null => (cmd ? cmd.replace('{pm} ', `${pm.exec} `) : null);
    const buildScript = f.script('build');
    const startScript = f.script('start');
    // A framework's own dev-server start script does not make a static site a server (as in Railpack).
    const customStart = !!startScript && !DEFAULT_STARTS.has(startScript.trim());
    const d = detection('node', {
      framework: rule?.id ?? null,
      packageManager: pm.id,
      programs: ['node'],
      tools: toolsOf(f, pm),
    });
    const version = pinned(f, ['.nvmrc', '.node-version'], ['node', 'nodejs']);
    const engines = typeof f.pkg?.engines?.node === 'string' ? f.pkg.engines.node.trim() : null;
    if (version) d.version = version;
    else if (engines) d.version = { value: engines, source: 'package.json engines' };
    d.install = [installCommand(f, pm)];
    const build = buildScript ? `${pm.run} build` : sub(rule?.build ?? null);
    if (build) d.build = [build];
    if (!rule || rule.kind === 'server') {
      d.start = startScript ? `${pm.run} start` : (sub(value(rule?.start, f) ?? null) ?? (rule ? null : f.nodeEntryStart()));
      d.port = d.start ? (portFrom(startScript) ?? rule?.port ?? 3000) : null;
    }
    d.outputDirectory = value(rule?.output, f) ?? null;
    if (rule?.kind === 'static' && !customStart) d.static = { outputDirectory: d.outputDirectory ?? 'dist', spa: rule.spa ?? false };
    else if (rule?.kind === 'static' && customStart) {
      d.start = `${pm.run} start`;
      d.port = portFrom(startScript) ?? 3000;
    }
    if (/^bun\s/.test(startScript ?? '') || (pm.id === 'bun' && !rule && !startScript)) d.runtime = 'bun';
    if (!rule && !d.start && f.hasFile('index.html')) {
      // A package.json that only carries tooling around a static site.
      d.runtime = 'static';
      d.outputDirectory = buildScript ? 'dist' : '.';
      d.static = { outputDirectory: d.outputDirectory, spa: false };
    }
    if (pm.id === 'bun') d.programs = [];
    return d;
  },
};
