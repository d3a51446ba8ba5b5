/**
 * A folder's `railpack.json` (read by railpack-config-file.ts), applied after the provider and the
 * Procfile, as Railpack merges its config over what it detected:
 *
 * - `provider` (matched case-insensitively; Railpack's `golang` and `staticfile` are Berth's `go` and
 *   `static`) plans the folder with that provider instead of the detected one (the Procfile then
 *   applies again). Unknown names are ignored.
 * - `packages` pins the runtime's version (`{ "node": "22" }` for a node app).
 * - `steps.install.commands` and `steps.build.commands` replace the plan's install and build
 *   commands; a `"..."` entry stands for the detected commands at that place (Railpack's array
 *   extending). A command is a string (`"npm run build"`, or `"RUN:npm run build"`) or an object with
 *   `cmd`; Railpack's `PATH:`/`COPY:`/`ENV:`/`FILE:` strings and copy/path/file objects are image
 *   operations with no meaning for a host build and are skipped.
 * - `deploy.startCommand` is the start command; `deploy.variables` (string values) become the plan's
 *   `variables`.
 * A Dockerfile's plan is left alone.
 */
import type { Facts } from '../facts.js';
import type { Detection, Provider, Runtime } from '../plan.js';
import { cppProvider } from './cpp.js';
import { denoProvider } from './deno.js';
import { dotnetProvider } from './dotnet.js';
import { elixirProvider } from './elixir.js';
import { gleamProvider } from './gleam.js';
import { goProvider } from './go.js';
import { javaProvider } from './java.js';
import { nodeProvider } from './node.js';
import { phpProvider } from './php.js';
import { applyProcfile } from './procfile.js';
import { pythonProvider } from './python.js';
import { readRailpackConfig } from './railpack-config-file.js';
import { rubyProvider } from './ruby.js';
import { rustProvider } from './rust.js';
import { shellProvider } from './shell.js';
import { staticProvider } from './static.js';

/** Railpack's provider names (lowercase) and the Berth provider each means. */
const BY_NAME: Record<string, Provider> = {
  php: phpProvider,
  golang: goProvider,
  go: goProvider,
  java: javaProvider,
  rust: rustProvider,
  ruby: rubyProvider,
  elixir: elixirProvider,
  python: pythonProvider,
  deno: denoProvider,
  dotnet: dotnetProvider,
  node: nodeProvider,
  gleam: gleamProvider,
  cpp: cppProvider,
  staticfile: staticProvider,
  static: staticProvider,
  shell: shellProvider,
};

/** The `packages` key that pins each runtime (mise's tool names). */
const TOOL: Partial<Record<Runtime, string>> = {
  node: 'node', bun: 'bun', deno: 'deno', python: 'python', go: 'go', rust: 'rust', ruby: 'ruby', php: 'php',
  java: 'java', elixir: 'elixir', dotnet: 'dotnet', gleam: 'gleam',
};

/** The command a railpack.json command entry runs, or null for entries that are not commands to run. */
function execOf(entry: unknown): string | null {
  let cmd: unknown = null;
  if (typeof entry === 'string') {
    const m = /^(RUN|PATH|COPY|ENV|FILE)(?:#[^:]*)?:([\s\S]*)$/.exec(entry);
    cmd = m ? (m[1] === 'RUN' ? m[2] : null) : entry;
  } else if (entry && typeof entry === 'object' && !Array.isArray(entry)) cmd = (entry as { cmd?: unknown }).cmd;
  return typeof cmd === 'string' && cmd.trim() ? cmd.trim() : null;
}

/** A step's commands with `"..."` standing for the detected ones; null when the step sets none. */
export function stepCommands(list: unknown, detected: string[]): string[] | null {
  if (!Array.isArray(list)) return null;
  const out: string[] = [];
  for (const entry of list) {
    if (entry === '...') out.push(...detected);
    else {
      const cmd = execOf(entry);
      if (cmd) out.push(cmd);
    }
  }
  return out;
}

export function applyRailpackConfig(f: Facts, detected: Detection): Detection {
  if (detected.runtime === 'docker') return detected;
  const config = readRailpackConfig(f);
  if (!config) return detected;
  let d = detected;
  const forced = typeof config.provider === 'string' ? BY_NAME[config.provider.trim().toLowerCase()] : undefined;
  if (forced) d = applyProcfile(f, forced.plan(f));
  d = { ...d, install: [...d.install], build: [...d.build], programs: [...d.programs] };

  const packages = config.packages && typeof config.packages === 'object' ? (config.packages as Record<string, unknown>) : {};
  const tool = TOOL[d.runtime];
  const pin = tool ? packages[tool] : undefined;
  if (typeof pin === 'string' && pin.trim()) d.version = { value: pin.trim(), source: 'railpack.json' };

  const steps = config.steps && typeof config.steps === 'object' ? config.steps : {};
  const install = stepCommands(steps.install?.commands, d.install);
  if (install) d.install = install;
  const build = stepCommands(steps.build?.commands, d.build);
  if (build) d.build = build;

  const deploy = config.deploy && typeof config.deploy === 'object' ? config.deploy : {};
  if (typeof deploy.startCommand === 'string' && deploy.startCommand.trim()) d.start = deploy.startCommand.trim();
  const vars = deploy.variables && typeof deploy.variables === 'object' && !Array.isArray(deploy.variables) ? (deploy.variables as Record<string, unknown>) : {};
  const strings = Object.entries(vars).filter((e): e is [string, string] => typeof e[1] === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(e[0]));
  if (strings.length) d.variables = { ...(d.variables ?? {}), ...Object.fromEntries(strings) };
  return d;
}
