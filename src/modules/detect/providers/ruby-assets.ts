/**
 * The Node steps a non-Node app runs for its assets, as Railpack does for Ruby, PHP and Elixir apps
 * that carry a package.json: the node provider's install and build commands (`npm ci`,
 * `npm run build`), its programs and tools. Shared by ruby.ts, php.ts and elixir.ts.
 */
import type { Facts } from '../facts.js';
import type { Detection, Tool } from '../plan.js';
import { nodeProvider } from './node.js';

export interface AssetSteps {
  install: string[];
  build: string[];
  programs: string[];
  tools: Tool[];
}

/** The node steps of the folder's package.json, or null when it has none (or it does not parse). */
export function nodeAssetSteps(f: Facts): AssetSteps | null {
  if (!f.pkg || typeof f.pkg !== 'object') return null;
  const node = nodeProvider.plan(f);
  return { install: [...node.install], build: [...node.build], programs: [...node.programs], tools: [...(node.tools ?? [])] };
}

/**
 * The install command of a package.json in a sub-folder (Phoenix's `assets/`), run from the app
 * folder: `npm ci --prefix assets`, `pnpm install --dir assets`, ... (null when the folder has none).
 */
export function subfolderInstall(f: Facts, sub: string): { command: string; program: string | null; tool: Tool | null } | null {
  if (f.read(`${sub}/package.json`) === null) return null;
  const files = f.list(sub).files;
  const has = (name: string) => files.has(name);
  if (has('pnpm-lock.yaml')) return { command: `pnpm install --frozen-lockfile --dir ${sub}`, program: 'node', tool: { name: 'pnpm' } };
  if (has('yarn.lock')) return { command: `yarn install --frozen-lockfile --cwd ${sub}`, program: 'node', tool: { name: 'yarn' } };
  if (has('bun.lock') || has('bun.lockb')) return { command: `bun install --cwd ${sub}`, program: null, tool: { name: 'bun' } };
  const ci = has('package-lock.json') || has('npm-shrinkwrap.json');
  return { command: `npm ${ci ? 'ci' : 'install'} --prefix ${sub}`, program: 'node', tool: null };
}

/** Adds asset steps' programs and tools to a detection (no duplicates). */
export function addAssetTools(d: Detection, programs: (string | null)[], tools: (Tool | null)[]): void {
  for (const p of programs) if (p && !d.programs.includes(p)) d.programs.push(p);
  for (const t of tools) {
    if (!t) continue;
    d.tools ??= [];
    if (!d.tools.some((x) => x.name === t.name)) d.tools.push(t);
  }
}
