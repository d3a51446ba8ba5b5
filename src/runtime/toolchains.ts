/**
 * Toolchains a build plan needs beyond the host's programs, and the checks made before anything of
 * a build runs:
 *
 * - pnpm and yarn come through corepack (shipped with Node 20), pinned by the `packageManager`
 *   field; their shims and downloads live in the release (`<source>/.berth-toolchain`), so the app
 *   finds the same version at run time. Node 20's corepack carries signing keys older than the
 *   registry's current ones, so its signature check is turned off (`COREPACK_INTEGRITY_KEYS=0`);
 *   the tarballs still come from the npm registry over HTTPS with their integrity hashes.
 * - bun and deno come from the npm registry (`npm install bun@<version>`), into the same folder.
 * - Every other runtime is the host's: a program the plan needs and the host lacks fails the build at
 *   once, naming the runtime, the program and the Debian package that provides it.
 * - Node itself is the host's: `offeredNodeVersions()` is what a `nodeVersion` may ask for.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type SemverModule from 'semver';

/** semver, loaded on first use, not at start (docs/decisions.md, "Memory and authenticated reads again"). */
const requireCjs = createRequire(import.meta.url);
const semverLib = (): typeof SemverModule => requireCjs('semver') as typeof SemverModule;

/** The folder (inside the release's source) that holds the toolchains a build installed. */
export const TOOLCHAIN_DIR = '.berth-toolchain';

export interface ToolRequest {
  name: 'pnpm' | 'yarn' | 'bun' | 'deno';
  version?: string;
}

/** The Debian package that provides a program, for the message of a build that lacks it. */
const DEBIAN_PACKAGES: Record<string, string> = {
  node: 'nodejs',
  npm: 'npm',
  corepack: 'nodejs',
  python3: 'python3 python3-venv',
  pip: 'python3-pip',
  poetry: 'python3-poetry',
  pipenv: 'pipenv',
  uv: 'uv (from its installer; Debian 12 has no package)',
  pdm: 'pdm (pip install pdm)',
  go: 'golang-go',
  cargo: 'cargo',
  rustc: 'rustc',
  ruby: 'ruby',
  bundle: 'ruby-bundler',
  php: 'php-cli',
  composer: 'composer',
  java: 'default-jdk-headless',
  mvn: 'maven',
  gradle: 'gradle',
  mix: 'elixir',
  elixir: 'elixir',
  gleam: 'gleam (from its releases; Debian 12 has no package)',
  cmake: 'cmake',
  meson: 'meson',
  ninja: 'ninja-build',
  dotnet: 'dotnet-sdk (from Microsoft; Debian 12 has no package)',
  bash: 'bash',
};

/** Where `program` is on `PATH`, or null. */
export function findProgram(program: string, pathVar: string | undefined): string | null {
  if (program.includes('/')) return null;
  for (const dir of (pathVar ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const full = path.join(dir, program);
    try {
      accessSync(full, constants.X_OK);
      return full;
    } catch {
      /* next */
    }
  }
  return null;
}

/** The first program of `programs` the host lacks, with the message the build fails with; null when all are there. */
export function missingProgram(runtime: string, programs: string[], pathVar: string | undefined): string | null {
  for (const p of programs) {
    if (findProgram(p, pathVar)) continue;
    const pkg = DEBIAN_PACKAGES[p];
    return `the ${runtime} runtime needs the program "${p}", which this host does not have${pkg ? ` (Debian package: ${pkg})` : ''}: install it on the server, or deploy this project with the docker runtime`;
  }
  return null;
}

/** The Node.js versions this host offers to builds and apps (the one it runs). */
export function offeredNodeVersions(): string[] {
  return [process.versions.node];
}

/**
 * Whether a Node version request (`20`, `20.11`, `>=18 <21`, `lts`, `lts/iron`, `^20`) is met by a
 * version the host offers; answers that version, or null.
 */
export function matchNodeVersion(request: string): string | null {
  const want = request.trim().replace(/^v(?=\d)/, '');
  for (const v of offeredNodeVersions()) {
    if (/^lts(\/\*)?$/i.test(want) || /^lts\/[a-z]+$/i.test(want)) {
      if (semverLib().major(v) % 2 === 0 && (!/^lts\/[a-z]+$/i.test(want) || ltsName(semverLib().major(v)) === want.slice(4).toLowerCase())) return v;
      continue;
    }
    const range = semverLib().validRange(want.replace(/\.x$/, ''), { loose: true });
    if (range && semverLib().satisfies(v, range, { includePrerelease: false })) return v;
  }
  return null;
}

function ltsName(major: number): string | undefined {
  return ({ 18: 'hydrogen', 20: 'iron', 22: 'jod', 24: 'krypton' } as Record<number, string>)[major];
}

/** The environment every step of a build (and the app) runs with, for the toolchains in `root`. */
export function toolchainEnv(root: string): Record<string, string> {
  return {
    COREPACK_HOME: path.join(root, TOOLCHAIN_DIR, 'corepack'),
    COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
    COREPACK_INTEGRITY_KEYS: '0',
    COREPACK_ENABLE_AUTO_PIN: '0',
    // Deno's module cache lives in the release, so the app finds what the build fetched.
    DENO_DIR: path.join(root, TOOLCHAIN_DIR, 'deno'),
    // Python: log lines as they come, and no bytecode written into the (read-only) release.
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
}

/** The folders of `root` whose programs go first on PATH (the toolchains' shims and binaries). */
export function toolchainPath(root: string): string[] {
  return [path.join(root, TOOLCHAIN_DIR, 'bin'), path.join(root, TOOLCHAIN_DIR, 'node_modules', '.bin')];
}

/** The commands (argument arrays) that install the tools into `root` before the install step. */
export function toolchainSteps(root: string, tools: ToolRequest[]): { label: string; argv: string[] }[] {
  const steps: { label: string; argv: string[] }[] = [];
  const dir = path.join(root, TOOLCHAIN_DIR);
  const corepack = tools.filter((t) => t.name === 'pnpm' || t.name === 'yarn');
  if (corepack.length) {
    steps.push({ label: `corepack (${corepack.map((t) => t.name).join(', ')})`, argv: ['corepack', 'enable', '--install-directory', path.join(dir, 'bin'), ...corepack.map((t) => t.name)] });
    // Fetch the pinned version now (the build has the network; the app later finds it in the cache).
    for (const t of corepack) steps.push({ label: `${t.name} ${t.version ?? '(latest)'}`, argv: ['corepack', 'install', '-g', `${t.name}@${t.version ?? 'latest'}`] });
  }
  const fromNpm = tools.filter((t) => t.name === 'bun' || t.name === 'deno');
  if (fromNpm.length) {
    steps.push({
      label: fromNpm.map((t) => `${t.name} ${t.version ?? '(latest)'}`).join(', ') + ' from the npm registry',
      argv: ['npm', 'install', '--prefix', dir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', ...fromNpm.map((t) => `${t.name}@${t.version ?? 'latest'}`)],
    });
  }
  return steps;
}
