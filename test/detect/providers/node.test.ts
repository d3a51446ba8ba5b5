import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { detectFolder } from '../../../src/modules/detect/detect.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { PORT_FLAGS, lastCommand, literalPort, literalOption, stripComments } from '../../../src/modules/detect/providers/node-frameworks.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { FIXTURES, casesOf, expectPlan } from './support.js';

type Tree = Record<string, string | object>;

/** Writes a small tree into a temp folder, runs `fn` on it, removes it. */
function withTree<T>(tree: Tree, fn: (dir: string) => T): T {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-node-'));
  try {
    for (const [rel, content] of Object.entries(tree)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    }
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The provider's detection of a fixture folder (tools, programs and the version source, which the plan does not show). */
const detectionOf = (dir: string) => detectFolder(new Facts(dir, '', null));
const planOf = (tree: Tree) => withTree(tree, (dir) => scanProject(dir));

/** A package-lock.json whose root entry declares what `pkg` declares. */
const lockFor = (pkg: any, extra: Record<string, unknown> = {}, lockfileVersion = 3) => ({
  name: pkg.name, lockfileVersion, requires: true,
  packages: { '': { name: pkg.name, dependencies: pkg.dependencies, devDependencies: pkg.devDependencies }, ...extra },
});

describe('node provider: the corpus', () => {
  const cases = casesOf('node');
  it('has every node case (a lost fixture fails)', () => assert.equal(cases.length, 51));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));
});

describe('node provider: package managers and tools', () => {
  it('a packageManager pin is a tool with its version (corepack pnpm), and pnpm is not a program', () => {
    const d = detectionOf(path.join(FIXTURES, 'pnpm-pinned'));
    assert.deepEqual(d.tools, [{ name: 'pnpm', version: '9.12.0' }]);
    assert.deepEqual(d.programs, ['node']);
  });

  it('npm plans need node and npm on the host, and no tools', () => {
    const d = detectionOf(path.join(FIXTURES, 'express'));
    assert.deepEqual(d.programs, ['node', 'npm']);
    assert.deepEqual(d.tools, []);
  });

  it('a bun app runs with bun: runtime bun, bun a tool (pinned by packageManager), no host programs', () => {
    const d = detectionOf(path.join(FIXTURES, 'bun-entry'));
    assert.equal(d.runtime, 'bun');
    assert.deepEqual(d.tools, [{ name: 'bun', version: '1.1.38' }]);
    assert.deepEqual(d.programs, []);
  });

  it('bun as package manager of a site built with node keeps runtime node, with bun as a tool', () => {
    const d = detectionOf(path.join(FIXTURES, 'astro'));
    assert.equal(d.runtime, 'node');
    assert.deepEqual(d.tools, [{ name: 'bun' }]);
    assert.deepEqual(d.programs, ['node']);
  });

  it('an npm project whose start script runs bun gets runtime bun and bun as a tool', () => {
    const got = withTree({ 'package.json': { scripts: { start: 'bun run server.ts' } }, 'server.ts': '' }, (dir) => detectionOf(dir));
    assert.equal(got.runtime, 'bun');
    assert.equal(got.start, 'npm run start');
    assert.deepEqual(got.tools, [{ name: 'bun' }]);
  });

  it('yarn classic without a pin is yarn 1; berry takes its version from a committed release or the lockfile', () => {
    assert.deepEqual(detectionOf(path.join(FIXTURES, 'koa')).tools, [{ name: 'yarn', version: '1' }]);
    assert.deepEqual(detectionOf(path.join(FIXTURES, 'yarn-berry')).tools, [{ name: 'yarn', version: '4' }]);
    const rc = withTree({ 'package.json': { scripts: { start: 'node a.js' } }, '.yarnrc.yml': 'yarnPath: .yarn/releases/yarn-3.6.4.cjs\n', 'yarn.lock': '__metadata:\n  version: 6\n' }, (dir) => detectionOf(dir));
    assert.deepEqual(rc.tools, [{ name: 'yarn', version: '3.6.4' }]);
  });

  it('pnpm without a pin takes its major from the lockfile (as Railpack), or an exact engines.pnpm', () => {
    assert.deepEqual(detectionOf(path.join(FIXTURES, 'sveltekit-static')).tools, [{ name: 'pnpm', version: '8' }]);
    const eng = withTree({ 'package.json': { engines: { pnpm: '^8.15.0' }, scripts: { start: 'node a.js' } } }, (dir) => detectionOf(dir));
    assert.equal(eng.packageManager, 'pnpm');
    assert.deepEqual(eng.tools, [{ name: 'pnpm', version: '8' }]);
  });

  it('lockfiles decide in Railpack\'s order: pnpm, bun, yarn berry (.yarnrc.yml), yarn; the field wins over all', () => {
    const pm = (tree: Tree) => planOf(tree).packageManager;
    const pkg = { scripts: { start: 'node a.js' } };
    assert.equal(pm({ 'package.json': pkg, 'pnpm-lock.yaml': '', 'yarn.lock': '' }), 'pnpm');
    assert.equal(pm({ 'package.json': pkg, 'bun.lockb': '', 'yarn.lock': '' }), 'bun');
    assert.equal(pm({ 'package.json': pkg, 'yarn.lock': '', 'package-lock.json': '{}' }), 'yarn');
    assert.equal(pm({ 'package.json': { ...pkg, packageManager: 'yarn@1.22.22' }, 'pnpm-lock.yaml': '' }), 'yarn');
  });
});

describe('node provider: install commands', () => {
  const pkg = { name: 'a', scripts: { start: 'node a.js' }, dependencies: { express: '^4.19.0' }, devDependencies: { typescript: '^5.0.0' } };
  const install = (tree: Tree) => planOf(tree).plan.install;

  it('npm ci with a v2+ lockfile whose root entry declares what package.json declares', () => {
    assert.deepEqual(install({ 'package.json': pkg, 'package-lock.json': lockFor(pkg) }), ['npm ci']);
    assert.deepEqual(install({ 'package.json': pkg, 'package-lock.json': lockFor(pkg, {}, 2) }), ['npm ci']);
    assert.deepEqual(install({ 'package.json': pkg, 'npm-shrinkwrap.json': lockFor(pkg) }), ['npm ci']);
  });

  it('npm install without a lockfile, with a v1 lockfile, or when package.json moved on (a dependency added, removed or re-specified)', () => {
    assert.deepEqual(install({ 'package.json': pkg }), ['npm install']);
    assert.deepEqual(install({ 'package.json': pkg, 'package-lock.json': lockFor(pkg, {}, 1) }), ['npm install']);
    assert.deepEqual(install({ 'package.json': pkg, 'package-lock.json': '{}' }), ['npm install']);
    const added = { ...pkg, dependencies: { ...pkg.dependencies, zod: '^3.0.0' } };
    assert.deepEqual(install({ 'package.json': added, 'package-lock.json': lockFor(pkg) }), ['npm install']);
    const respec = { ...pkg, dependencies: { express: '^5.0.0' } };
    assert.deepEqual(install({ 'package.json': respec, 'package-lock.json': lockFor(pkg) }), ['npm install']);
    const removed = { ...pkg, devDependencies: {} };
    assert.deepEqual(install({ 'package.json': removed, 'package-lock.json': lockFor(pkg) }), ['npm install']);
  });

  it('reads a lockfile larger than 1 MiB (the root entry is at its head)', () => {
    const big = lockFor(pkg, Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`node_modules/pkg-${i}`, { version: '1.0.0', resolved: `https://registry.npmjs.org/pkg-${i}/-/pkg-${i}-1.0.0.tgz`, integrity: 'sha512-' + 'x'.repeat(88) }])));
    assert.ok(JSON.stringify(big).length > 1024 * 1024);
    assert.deepEqual(install({ 'package.json': pkg, 'package-lock.json': big }), ['npm ci']);
  });

  it('in an npm workspace, the root lockfile must match the root and the app\'s own entry', () => {
    const root = { name: 'r', workspaces: ['apps/*'] };
    const app = { name: 'web', scripts: { start: 'node a.js' }, dependencies: { express: '^4.0.0' } };
    const tree = (appEntry: object) => ({ 'package.json': root, 'apps/web/package.json': app, 'package-lock.json': { lockfileVersion: 3, packages: { '': { name: 'r', workspaces: ['apps/*'] }, 'apps/web': appEntry } } });
    assert.deepEqual(planOf(tree({ name: 'web', dependencies: { express: '^4.0.0' } })).apps[0]!.installCommand, 'npm ci');
    assert.deepEqual(planOf(tree({ name: 'web', dependencies: { express: '^3.0.0' } })).apps[0]!.installCommand, 'npm install');
  });

  it('pnpm, yarn and bun install frozen only with their lockfile', () => {
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'pnpm@9.12.0' } }), ['pnpm install']);
    assert.deepEqual(install({ 'package.json': pkg, 'pnpm-lock.yaml': "lockfileVersion: '9.0'\n" }), ['pnpm install --frozen-lockfile']);
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'yarn@1.22.22' } }), ['yarn install']);
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'yarn@1.22.22' }, 'yarn.lock': '' }), ['yarn install --frozen-lockfile']);
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'yarn@4.5.0' } }), ['yarn install']);
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'yarn@4.5.0' }, 'yarn.lock': '' }), ['yarn install --immutable']);
    assert.deepEqual(install({ 'package.json': { ...pkg, packageManager: 'bun@1.1.0' } }), ['bun install']);
    assert.deepEqual(install({ 'package.json': pkg, 'bun.lock': '{}' }), ['bun install --frozen-lockfile']);
  });
});

describe('node provider: version pins (Railpack: mise.toml / .tool-versions, then .node-version, .nvmrc, then engines.node)', () => {
  const pin = (name: string) => detectionOf(path.join(FIXTURES, name)).version;
  it('mise.toml wins over .nvmrc and engines', () => assert.deepEqual(pin('node-mise'), { value: '22.11', source: 'mise.toml' }));
  it('.tool-versions wins over .node-version', () => assert.deepEqual(pin('node-tool-versions'), { value: '20.18.0', source: '.tool-versions' }));
  it('.nvmrc wins over engines (leading v dropped)', () => assert.deepEqual(pin('node-nvmrc'), { value: '20.11.0', source: '.nvmrc' }));
  it('engines.node alone', () => assert.deepEqual(pin('node-engines'), { value: '22.x', source: 'package.json engines' }));
  it('.node-version wins over .nvmrc', () => {
    const v = withTree({ 'package.json': { scripts: { start: 'node a.js' } }, '.nvmrc': '18\n', '.node-version': '20.9.0\n' }, (dir) => detectionOf(dir).version);
    assert.deepEqual(v, { value: '20.9.0', source: '.node-version' });
  });
  it('a workspace app inherits the root\'s pin', () => {
    const got = planOf({ 'package.json': { workspaces: ['apps/*'] }, '.nvmrc': '20\n', 'apps/web/package.json': { scripts: { start: 'node a.js' } } });
    assert.equal(got.rootDirectory, 'apps/web');
    assert.equal(got.plan.version, '20');
  });
});

describe('node provider: port flags (tools that listen on their own port whatever $PORT says)', () => {
  const samples: Record<string, string> = {
    'ng serve': 'ng serve --configuration production',
    'vite preview': 'vite preview',
    vite: 'vite --mode staging',
    'astro preview': 'astro preview',
    'nuxt preview': 'nuxt preview',
    serve: 'serve -s build',
    'http-server': 'http-server ./public -c-1',
    'webpack serve': 'webpack serve --mode production',
    'vue-cli-service serve': 'vue-cli-service serve',
    'docusaurus serve': 'docusaurus serve',
    'gatsby serve': 'gatsby serve',
    sirv: 'sirv public --single',
  };
  it('every row has a sample here', () => assert.deepEqual(Object.keys(samples).sort(), PORT_FLAGS.map((r) => r.tool).sort()));
  for (const row of PORT_FLAGS) {
    it(`${row.tool}: ${row.flags}, default port ${row.port}`, () => {
      const got = planOf({ 'package.json': { scripts: { start: samples[row.tool] } } });
      assert.equal(got.startCommand, `npm run start -- ${row.flags}`);
      assert.equal(got.port, row.port);
    });
  }

  it('pnpm, yarn and bun pass the flags without `--`', () => {
    for (const [pm, run] of [['pnpm@9.12.0', 'pnpm run'], ['yarn@4.5.0', 'yarn run'], ['bun@1.1.0', 'bun run']] as const) {
      const got = planOf({ 'package.json': { packageManager: pm, scripts: { start: 'vite preview' } } });
      assert.equal(got.startCommand, `${run} start --port \${PORT} --host 0.0.0.0`);
    }
  });

  it('the flags go to the last command of a chain, behind npx and env prefixes', () => {
    assert.equal(lastCommand('npm run build && NODE_ENV=production npx vite preview'), 'vite preview');
    assert.equal(planOf({ 'package.json': { scripts: { start: 'npm run build && npx serve dist' } } }).startCommand, 'npm run start -- -l ${PORT}');
  });

  it('a literal port is kept and answered; a script already on $PORT is left alone', () => {
    const pinned = planOf({ 'package.json': { scripts: { start: 'vite preview --port 4200' } } });
    assert.equal(pinned.startCommand, 'npm run start');
    assert.equal(pinned.port, 4200);
    assert.equal(literalPort('ng serve -p 4300'), 4300);
    assert.equal(literalPort('serve -l 5000'), 5000);
    const onPort = planOf({ 'package.json': { scripts: { start: 'vite preview --port ${PORT:-4000} --host' } } });
    assert.equal(onPort.startCommand, 'npm run start');
    assert.equal(onPort.port, 4000);
  });

  it('tools that read PORT themselves get nothing (next start, react-scripts start, remix-serve, node servers)', () => {
    for (const start of ['next start', 'remix-serve ./build/server/index.js', 'node server.js', 'vite build && node server.js']) {
      assert.equal(planOf({ 'package.json': { scripts: { start } } }).startCommand, 'npm run start', start);
    }
  });
});

describe('node provider: static exports and servers', () => {
  it('a commented-out `output: \'export\'` does not make Next static; next.config.ts does', () => {
    const next = { scripts: { build: 'next build', start: 'next start' }, dependencies: { next: '15.0.0' } };
    assert.equal(planOf({ 'package.json': next, 'next.config.js': "module.exports = {\n  // output: 'export',\n}\n" }).plan.start, 'npm run start');
    const ts = planOf({ 'package.json': next, 'next.config.ts': "const config = { output: \"export\", distDir: 'site' }\nexport default config\n" });
    assert.deepEqual(ts.plan.static, { outputDirectory: 'site', spa: true });
  });

  it('Vite outDir is read only when it is a plain string literal', () => {
    const vite = { scripts: { build: 'vite build' }, devDependencies: { vite: '^5.0.0' } };
    const out = (config: string) => planOf({ 'package.json': vite, 'vite.config.js': config }).plan.static?.outputDirectory;
    assert.equal(out("export default { build: { outDir: 'public/app/' } }"), 'public/app');
    assert.equal(out("export default { build: { outDir: 'dist-' + process.env.MODE } }"), 'dist');
    assert.equal(out('export default { build: { outDir: `out/${mode}` } }'), 'dist');
    assert.equal(out("export default {\n  // build: { outDir: 'old' },\n}"), 'dist');
    assert.equal(planOf({ 'package.json': { ...vite, scripts: { build: 'vite build --outDir web' } } }).plan.static?.outputDirectory, 'web');
  });

  it('literalOption and stripComments', () => {
    assert.equal(literalOption("{ pages: 'site', assets: x }", 'pages'), 'site');
    assert.equal(literalOption('{ outDir: "a" + b }', 'outDir'), null);
    assert.equal(stripComments("a // 'b'\nc /* d */ e 'f // g'"), "a \nc  e 'f // g'");
  });

  it('Astro with `output: \'server\'` and no adapter is not static; Astro without a build script is not either', () => {
    const astro = { scripts: { build: 'astro build', start: 'astro preview' }, dependencies: { astro: '^4.0.0' } };
    const server = planOf({ 'package.json': { ...astro, scripts: { build: 'astro build' } }, 'astro.config.mjs': "export default { output: 'server' }" });
    assert.equal(server.plan.static, undefined);
    const preview = planOf({ 'package.json': astro });
    assert.equal(preview.plan.start, 'npm run start -- --port ${PORT} --host 0.0.0.0');
    assert.deepEqual(preview.plan.variables, { HOST: '0.0.0.0' });
  });

  it('Expo: the legacy `expo export:web` lands in web-build; app.json output without a build script builds with expo export', () => {
    const deps = { expo: '~50.0.0', 'react-native-web': '~0.19.0' };
    assert.equal(planOf({ 'package.json': { scripts: { build: 'expo export:web' }, dependencies: deps } }).plan.static?.outputDirectory, 'web-build');
    const noScript = planOf({ 'package.json': { dependencies: deps }, 'app.json': { expo: { web: { output: 'static' } } } });
    assert.deepEqual(noScript.plan.build, ['npx expo export --platform web']);
    assert.deepEqual(noScript.plan.static, { outputDirectory: 'dist', spa: true });
  });

  it('Angular outputPath as an object, and the application builder\'s /browser', () => {
    const pkg = { scripts: { build: 'ng build' }, dependencies: { '@angular/core': '^18.0.0' } };
    const out = (angular: object) => planOf({ 'package.json': pkg, 'angular.json': angular }).plan.static?.outputDirectory;
    assert.equal(out({ projects: { app: { architect: { build: { builder: '@angular/build:application', options: { outputPath: { base: 'out/app' } } } } } } }), 'out/app/browser');
    assert.equal(out({ projects: { app: { architect: { build: { builder: '@angular/build:application', options: { browser: 'src/main.ts' } } } } } }), 'dist/app/browser');
    assert.equal(out({ projects: { app: { architect: { build: { builder: '@angular-devkit/build-angular:browser', options: { outputPath: 'dist/app' } } } } } }), 'dist/app');
  });

  it('a custom start script makes a static framework a server (as Railpack); the framework\'s own dev start does not', () => {
    const cra = { scripts: { build: 'react-scripts build', start: 'react-scripts start' }, dependencies: { 'react-scripts': '5.0.1' } };
    assert.deepEqual(planOf({ 'package.json': cra }).plan.static, { outputDirectory: 'build', spa: true });
    assert.equal(planOf({ 'package.json': { ...cra, scripts: { ...cra.scripts, start: 'node server.js' } } }).plan.start, 'npm run start');
  });

  it('a Staticfile index_fallback overrides a framework\'s SPA default', () => {
    const vite = { scripts: { build: 'vite build' }, devDependencies: { vite: '^5.0.0' } };
    assert.deepEqual(planOf({ 'package.json': vite, Staticfile: 'index_fallback: false\n' }).plan.static, { outputDirectory: 'dist', spa: false });
  });

  it('start falls back to main, then index.js / index.ts, then the framework\'s server, then a usual entry file', () => {
    assert.equal(planOf({ 'package.json': { main: './lib/app.js', dependencies: { express: '4' } } }).startCommand, 'node lib/app.js');
    assert.equal(planOf({ 'package.json': {}, 'index.ts': '' }).startCommand, 'node index.ts');
    assert.equal(planOf({ 'package.json': { dependencies: { nuxt: '3' } } }).startCommand, 'node .output/server/index.mjs');
    assert.equal(planOf({ 'package.json': { dependencies: { next: '15' } }, 'pnpm-lock.yaml': '' }).startCommand, 'pnpm exec next start');
    assert.equal(planOf({ 'package.json': { dependencies: { express: '4' } }, 'src/server.js': '' }).startCommand, 'node src/server.js');
  });

  it('SvelteKit with adapter-auto builds for node (GCP_BUILDPACKS, as Railpack) and starts `node build`', () => {
    const got = planOf({ 'package.json': { scripts: { build: 'vite build' }, devDependencies: { '@sveltejs/kit': '2', '@sveltejs/adapter-auto': '3', vite: '5' } } });
    assert.equal(got.plan.start, 'node build');
    assert.deepEqual(got.plan.variables, { GCP_BUILDPACKS: 'true' });
  });

  it('a package.json around an index.html that builds something is a node-built static site', () => {
    const got = planOf({ 'package.json': { scripts: { build: 'tailwindcss -o style.css' }, devDependencies: { tailwindcss: '3' } }, 'index.html': '' });
    assert.deepEqual(got.plan, { runtime: 'node', install: ['npm install'], build: ['npm run build'], static: { outputDirectory: '.', spa: false } });
  });
});

describe('node provider: workspaces', () => {
  it('the root\'s start script is the start when the root has one (Railpack plans the root); apps are still listed', () => {
    const got = scanProject(path.join(FIXTURES, 'monorepo-root-start'));
    assert.equal(got.rootDirectory, '');
    assert.equal(got.monorepo, 'turbo');
    assert.equal(got.plan.start, 'yarn run start');
    assert.deepEqual(got.apps.map((a) => a.rootDirectory), ['apps/web', 'apps/api']);
  });

  it('without a root start script, the main app is planned in its folder', () => {
    const got = scanProject(path.join(FIXTURES, 'monorepo-pnpm'));
    assert.equal(got.rootDirectory, 'apps/web');
    assert.equal(got.monorepo, 'turbo');
    assert.equal(got.apps.find((a) => a.rootDirectory === 'apps/api')?.port, 4000);
  });

  it('bun workspaces (package.json workspaces + bun.lock) plan their apps with bun', () => {
    const got = planOf({ 'package.json': { workspaces: ['packages/*'] }, 'bun.lock': '{}', 'packages/api/package.json': { scripts: { start: 'bun src/index.ts' } }, 'packages/lib/package.json': { name: 'lib' } });
    assert.equal(got.monorepo, 'bun');
    assert.equal(got.rootDirectory, 'packages/api');
    assert.deepEqual(got.plan, { runtime: 'bun', install: ['bun install --frozen-lockfile'], build: [], start: 'bun run start' });
    assert.equal(got.apps.length, 1, 'libraries are not apps');
  });
});
