/**
 * THE detection table: one row per framework, first match wins (so meta-frameworks come before the
 * tools they are built on: Remix and SvelteKit before Vite, NestJS before Express).
 *
 * A row matches an app folder when its `runtime` language matches and any of `deps` is a dependency
 * (package.json dependencies/devDependencies, or a Python requirement) or any of `files` exists.
 * Commands: a package.json script of the same name always wins over the row's defaults (see
 * detect.ts); `{pm}` in a default is replaced by the package manager's run prefix (`npx`, `pnpm exec`,
 * `yarn`, `bunx`) and `{py}` by the Python runner prefix (``, `poetry run `, `uv run `).
 *
 * `kind: 'static'` rows produce files only (served from `output`, no start command, no port);
 * `'server'` rows are started with `start` and listen on `port` (the app should honour $PORT).
 */
import type { Facts } from './facts.js';

export type Runtime = 'node' | 'bun' | 'deno' | 'python' | 'go' | 'ruby' | 'php' | 'static' | 'docker' | 'unknown';

export interface FrameworkRule {
  id: string;
  name: string;
  language: 'node' | 'python';
  kind: 'static' | 'server';
  deps?: string[];
  files?: string[];
  /** Extra condition beyond deps/files (for example an adapter). */
  when?: (f: Facts) => boolean;
  build?: string | null;
  start?: string | null | ((f: Facts) => string | null);
  output?: string | null | ((f: Facts) => string | null);
  port?: number | null;
}

const hasDep = (f: Facts, ...names: string[]) => names.some((n) => f.deps.has(n));

export const FRAMEWORK_RULES: FrameworkRule[] = [
  // ---------------------------------------------------------------- Node: meta-frameworks
  { id: 'next', name: 'Next.js', language: 'node', kind: 'server', deps: ['next'], build: '{pm} next build', start: '{pm} next start', output: '.next', port: 3000 },
  { id: 'nuxt', name: 'Nuxt', language: 'node', kind: 'server', deps: ['nuxt', 'nuxt3'], build: '{pm} nuxt build', start: 'node .output/server/index.mjs', output: '.output', port: 3000 },
  {
    id: 'react-router', name: 'React Router', language: 'node', kind: 'server',
    deps: ['@react-router/dev'], build: '{pm} react-router build',
    start: (f) => (hasDep(f, '@react-router/serve') ? '{pm} react-router-serve ./build/server/index.js' : null),
    output: 'build', port: 3000,
  },
  {
    id: 'remix', name: 'Remix', language: 'node', kind: 'server',
    deps: ['@remix-run/dev', '@remix-run/react'], build: '{pm} remix build',
    start: (f) => (f.hasFile('vite.config.ts') || f.hasFile('vite.config.js') ? '{pm} remix-serve ./build/server/index.js' : '{pm} remix-serve ./build/index.js'),
    output: 'build', port: 3000,
  },
  {
    id: 'sveltekit', name: 'SvelteKit', language: 'node', kind: 'server',
    deps: ['@sveltejs/kit'], when: (f) => !hasDep(f, '@sveltejs/adapter-static'),
    build: '{pm} vite build', start: 'node build', output: 'build', port: 3000,
  },
  { id: 'sveltekit', name: 'SvelteKit (static)', language: 'node', kind: 'static', deps: ['@sveltejs/adapter-static'], build: '{pm} vite build', output: 'build' },
  {
    id: 'astro', name: 'Astro (server)', language: 'node', kind: 'server',
    deps: ['astro'], when: (f) => hasDep(f, '@astrojs/node'),
    build: '{pm} astro build', start: 'node ./dist/server/entry.mjs', output: 'dist', port: 4321,
  },
  { id: 'astro', name: 'Astro', language: 'node', kind: 'static', deps: ['astro'], build: '{pm} astro build', output: 'dist' },
  { id: 'gatsby', name: 'Gatsby', language: 'node', kind: 'static', deps: ['gatsby'], build: '{pm} gatsby build', output: 'public' },
  { id: 'angular', name: 'Angular', language: 'node', kind: 'static', deps: ['@angular/core'], files: ['angular.json'], build: '{pm} ng build', output: (f) => f.angularOutput() },
  { id: 'cra', name: 'Create React App', language: 'node', kind: 'static', deps: ['react-scripts'], build: '{pm} react-scripts build', output: 'build' },
  // ---------------------------------------------------------------- Node: Vite single-page apps
  { id: 'vite', name: 'Vite', language: 'node', kind: 'static', deps: ['vite'], build: '{pm} vite build', output: 'dist' },
  // ---------------------------------------------------------------- Node: servers
  { id: 'nestjs', name: 'NestJS', language: 'node', kind: 'server', deps: ['@nestjs/core'], build: '{pm} nest build', start: 'node dist/main', port: 3000 },
  { id: 'hono', name: 'Hono', language: 'node', kind: 'server', deps: ['hono'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'fastify', name: 'Fastify', language: 'node', kind: 'server', deps: ['fastify'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'koa', name: 'Koa', language: 'node', kind: 'server', deps: ['koa'], start: (f) => f.nodeEntryStart(), port: 3000 },
  { id: 'express', name: 'Express', language: 'node', kind: 'server', deps: ['express'], start: (f) => f.nodeEntryStart(), port: 3000 },
  // ---------------------------------------------------------------- Python
  {
    id: 'django', name: 'Django', language: 'python', kind: 'server', deps: ['django'], files: ['manage.py'],
    start: (f) => f.djangoStart(), port: 8000,
  },
  { id: 'fastapi', name: 'FastAPI', language: 'python', kind: 'server', deps: ['fastapi'], start: (f) => f.asgiStart('FastAPI'), port: 8000 },
  { id: 'flask', name: 'Flask', language: 'python', kind: 'server', deps: ['flask'], start: (f) => f.wsgiStart('Flask'), port: 5000 },
];

/** Package managers: lockfile (first match wins, in this order) and their commands. */
export interface PackageManagerRule {
  id: string;
  language: 'node' | 'python' | 'go';
  lockfiles: string[];
  install: string | ((f: Facts) => string);
  /** Runs a package.json script. */
  run?: string;
  /** Runs a binary of the installed dependencies (`{pm}` in the framework table). */
  exec?: string;
}

export const PACKAGE_MANAGER_RULES: PackageManagerRule[] = [
  { id: 'pnpm', language: 'node', lockfiles: ['pnpm-lock.yaml'], install: 'pnpm install --frozen-lockfile', run: 'pnpm run', exec: 'pnpm exec' },
  {
    id: 'yarn', language: 'node', lockfiles: ['yarn.lock'],
    install: (f) => (f.yarnBerry() ? 'yarn install --immutable' : 'yarn install --frozen-lockfile'),
    run: 'yarn run', exec: 'yarn',
  },
  { id: 'bun', language: 'node', lockfiles: ['bun.lock', 'bun.lockb'], install: 'bun install --frozen-lockfile', run: 'bun run', exec: 'bunx' },
  { id: 'npm', language: 'node', lockfiles: ['package-lock.json', 'npm-shrinkwrap.json'], install: (f) => (f.hasRootFile('package-lock.json') || f.hasRootFile('npm-shrinkwrap.json') ? 'npm ci' : 'npm install'), run: 'npm run', exec: 'npx' },
  { id: 'uv', language: 'python', lockfiles: ['uv.lock'], install: 'uv sync --frozen', exec: 'uv run' },
  { id: 'poetry', language: 'python', lockfiles: ['poetry.lock'], install: 'poetry install --no-root', exec: 'poetry run' },
  { id: 'pip', language: 'python', lockfiles: ['requirements.txt'], install: 'pip install -r requirements.txt', exec: '' },
  { id: 'go', language: 'go', lockfiles: ['go.mod'], install: 'go mod download' },
];

/** Files that mark a runtime when no framework row matched (checked in this order). */
export const RUNTIME_MARKERS: { runtime: Runtime; files: string[] }[] = [
  { runtime: 'docker', files: ['Dockerfile'] },
  { runtime: 'go', files: ['go.mod'] },
  { runtime: 'python', files: ['requirements.txt', 'pyproject.toml', 'Pipfile', 'manage.py', 'uv.lock', 'poetry.lock'] },
  { runtime: 'deno', files: ['deno.json', 'deno.jsonc'] },
  { runtime: 'node', files: ['package.json'] },
  { runtime: 'ruby', files: ['Gemfile'] },
  { runtime: 'php', files: ['composer.json', 'index.php'] },
  { runtime: 'static', files: ['index.html'] },
];

/** Folders never read by the scan (dependencies, VCS, build output, caches). */
export const IGNORED_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', '.next', '.nuxt', '.output', '.svelte-kit', '.turbo', '.cache', 'dist', 'build', '__pycache__', '.venv', 'venv', '.tox', 'vendor', 'target', 'coverage']);
