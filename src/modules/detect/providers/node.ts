/**
 * The node provider: a folder with a package.json (npm, pnpm, yarn, bun), planned as Railpack's node
 * provider plans it (core/providers/node):
 *
 * - the package manager: the `packageManager` field, then lockfiles (pnpm, bun, yarn berry, yarn),
 *   then `engines`, else npm; pnpm and yarn come through corepack and bun from the registry (`tools`);
 * - the Node version: mise.toml / .tool-versions, then `.node-version`, `.nvmrc`, then `engines.node`;
 * - the install: a frozen install only where the lockfile can satisfy it (`npm ci` needs a v2+
 *   lockfile whose root entry declares what package.json declares);
 * - build: the `build` script, else an Nx app's target (`nx build <project>`, node-apps.ts); start:
 *   the `start` script, else `main`, else index.js / index.ts, else the framework's own server
 *   (node-frameworks.ts), else a usual entry file, but never the page script of browser code
 *   (`src/main.js` of a Vite app): a front-end folder with nothing to start is a static site when it
 *   has an `index.html`, else a plan with no start command;
 * - a framework that builds a static site (Vite, CRA, Angular, Astro, Next export, ...) and has no
 *   start script of its own is served as files, with no start command.
 *
 * A start script whose tool listens on its own port whatever $PORT says (`vite preview`, `ng serve`,
 * ...) gets the tool's port flag (PORT_FLAGS); a script that pins a literal port keeps it.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { NODE_FRAMEWORKS, literalPort, portFallback, portFlagRow, readsPort, type NodeFramework } from './node-frameworks.js';
import { isFrontEnd, nxBuild } from './node-apps.js';
import { staticfileOf } from './static.js';
import { BUN_COMMAND, engine, installCommand, nodePackageManager, toolsOf, type NodePm } from './node-package-manager.js';
import { fileVersion, toolVersion, type Pin } from './versions.js';

/** The Node version the folder pins: mise.toml / .tool-versions, then `.node-version`, `.nvmrc`, then `engines.node` (Railpack's order: mise's files win over package.json). */
export function nodeVersion(f: Facts): Pin | null {
  const pin = toolVersion(f, ['node', 'nodejs']) ?? fileVersion(f, '.node-version') ?? fileVersion(f, '.nvmrc');
  if (pin) return pin;
  const engines = engine(f, 'node');
  return engines ? { value: engines, source: 'package.json engines' } : null;
}

function matchFramework(f: Facts): NodeFramework | null {
  return NODE_FRAMEWORKS.find((r) => r.match(f)) ?? null;
}

/** Start scripts that only run a framework's own dev server: they do not make a static site a server (as in Railpack). */
export const DEFAULT_STARTS = new Set(['ng serve', 'react-scripts start', 'expo start', 'next start', 'react-router-serve ./build/server/index.js', 'gatsby develop']);

/** Files a framework-less app is started from when package.json names none (Railpack looks at index.js / index.ts only; the rest is Berth's). */
const ENTRY_FILES = ['server.js', 'app.js', 'main.js', 'server.mjs', 'index.mjs', 'app.mjs', 'src/index.js', 'src/server.js', 'src/main.js', 'src/app.js', 'src/index.mjs'];

interface Start {
  command: string;
  port: number;
  /** The text the start runs (the script's body, or the command itself), to tell whether bun runs it. */
  runs: string;
}

/** The server's start: the start script (with the port flag its tool needs), `main`, index.js / index.ts, the framework's server, a usual entry file. */
export function serverStart(f: Facts, pm: NodePm, fw: NodeFramework | null): Start | null {
  const script = f.script('start');
  if (script) {
    const pinned = literalPort(script);
    const row = pinned === null && !readsPort(script) ? portFlagRow(script) : null;
    const flags = row ? (pm.id === 'npm' ? ` -- ${row.flags}` : ` ${row.flags}`) : '';
    return { command: `${pm.run} start${flags}`, port: pinned ?? portFallback(script) ?? row?.port ?? fw?.port ?? 3000, runs: script };
  }
  const runner = pm.id === 'bun' ? 'bun' : 'node';
  const port = fw?.port ?? 3000;
  const main = typeof f.pkg?.main === 'string' ? f.pkg.main.trim().replace(/^\.\//, '') : '';
  if (main) return { command: `${runner} ${main}`, port, runs: `${runner} ${main}` };
  const index = ['index.js', 'index.ts'].find((x) => f.hasFile(x));
  if (index) return { command: `${runner} ${index}`, port, runs: `${runner} ${index}` };
  const own = fw?.start?.(f);
  if (own) {
    const command = own.replace('{exec} ', `${pm.exec} `);
    return { command, port, runs: command };
  }
  const all = pm.id === 'bun' ? [...ENTRY_FILES, 'src/index.ts', 'server.ts', 'app.ts'] : ENTRY_FILES;
  // Browser code's `main.js` or `src/index.js` is the page's script: only a file named server may run there.
  const entries = isFrontEnd(f) ? all.filter((x) => /^server\.[mc]?[jt]s$/.test(x)) : all;
  const entry = entries.find((x) => f.read(x) !== null);
  return entry ? { command: `${runner} ${entry}`, port, runs: `${runner} ${entry}` } : null;
}

export const nodeProvider: Provider = {
  name: 'node',
  detect: (f) => !!f.pkg,
  plan(f): Detection {
    const pm = nodePackageManager(f);
    const fw = matchFramework(f);
    const buildScript = f.script('build');
    const startScript = f.script('start');
    const customStart = !!startScript && !DEFAULT_STARTS.has(startScript.trim());
    const d = detection('node', { framework: fw?.id ?? null, packageManager: pm.id, tools: toolsOf(f, pm) });
    const version = nodeVersion(f);
    if (version) d.version = version;
    d.install = [installCommand(f, pm)];
    if (buildScript) d.build = [`${pm.run} build`];
    else {
      const nx = nxBuild(f);
      if (nx) d.build = [nx];
    }

    // A framework that builds files, with no server of the package's own: a static site.
    const site = !customStart && fw?.staticSite && (buildScript || fw.build) ? fw.staticSite(f) : null;
    if (site) {
      if (!buildScript && fw?.build) d.build = [fw.build.replace('{exec} ', `${pm.exec} `)];
      const spa = staticfileOf(f)?.indexFallback ?? site.spa;
      d.static = { outputDirectory: site.outputDirectory, spa };
      d.outputDirectory = site.outputDirectory;
      d.programs = pm.id === 'npm' ? ['node', 'npm'] : ['node'];
      return d;
    }

    const start = serverStart(f, pm, fw);
    if (start) {
      d.start = start.command;
      d.port = start.port;
      d.outputDirectory = fw?.output ?? null;
      const vars = fw?.variables?.(f);
      if (vars) d.variables = vars;
      if (BUN_COMMAND.test(start.runs) || /^bunx?\s/.test(start.runs)) d.runtime = 'bun';
    } else if (!fw || isFrontEnd(f)) {
      // A package.json around a static site (tooling, or a front-end with no build): its files are the site.
      const staticfile = staticfileOf(f);
      const root = staticfile?.root ?? (f.hasFile('index.html') ? '.' : null);
      if (root) {
        d.static = { outputDirectory: root, spa: staticfile?.indexFallback ?? false };
        d.outputDirectory = root;
        if (!buildScript) {
          return detection('static', { outputDirectory: root, static: d.static });
        }
      }
    }
    d.programs = d.runtime === 'bun' ? [] : pm.id === 'npm' ? ['node', 'npm'] : ['node'];
    if (d.runtime === 'bun' && !d.tools?.some((t) => t.name === 'bun')) d.tools = [...(d.tools ?? []), { name: 'bun' }];
    return d;
  },
};
