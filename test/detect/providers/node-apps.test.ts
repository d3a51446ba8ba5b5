/**
 * The node provider on the cases Railpack's own examples showed Berth missing (issue 32): package.json5,
 * a Dockerfile beside an app, the root of a bun workspace, TanStack Start, Nx, and browser code with
 * nothing to start. Their corpus fixtures are checked by node.test.ts; these are the rules around them.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { FIXTURES, tempApp as app } from './support.js';

const json = (v: unknown) => JSON.stringify(v, null, 2);

describe('node provider: package.json5', () => {
  it('reads package.json5 like package.json (comments, unquoted keys, trailing commas)', () => {
    const got = scanProject(path.join(FIXTURES, 'pnpm-json5'));
    assert.equal(got.name, 'pnpm-json5');
    assert.equal(got.packageManager, 'pnpm');
    assert.equal(got.framework, 'express');
  });

  it('prefers package.json when a folder has both, and ignores a package.json5 that does not parse', () => {
    assert.equal(scanProject(app({ 'package.json': json({ name: 'real', scripts: { start: 'node a.js' } }), 'package.json5': "{ name: 'other' }" })).name, 'real');
    assert.equal(scanProject(app({ 'package.json5': '{ name: ' })).runtime, 'unknown');
  });
});

describe('node provider: a Dockerfile beside the app', () => {
  it('plans the React Router app, not the template Dockerfile beside it (as Railpack)', () => {
    const got = scanProject(path.join(FIXTURES, 'react-router-dockerfile'));
    assert.equal(got.runtime, 'node');
    assert.equal(got.startCommand, 'pnpm run start');
  });

  it('plans a React Router SPA beside a Dockerfile as a static site', () => {
    const got = scanProject(app({
      Dockerfile: 'FROM node:20\nCMD ["npm", "start"]\n',
      'package.json': json({ scripts: { build: 'react-router build' }, dependencies: { 'react-router': '7' }, devDependencies: { '@react-router/dev': '7', vite: '6' } }),
      'react-router.config.ts': 'export default { ssr: false };\n',
    }));
    assert.deepEqual(got.plan.static, { outputDirectory: 'build/client', spa: true });
    assert.equal(got.plan.start, undefined);
  });
});

describe('node provider: workspaces', () => {
  it('plans the root of a bun workspace whose packages are its libraries (Railpack runs the root)', () => {
    const got = scanProject(path.join(FIXTURES, 'monorepo-bun-root'));
    assert.equal(got.rootDirectory, '');
    assert.equal(got.monorepo, 'bun');
    assert.deepEqual(got.apps, [], 'greet and words are libraries: the root and greet depend on them');
  });

  it('a workspace package others depend on is still an app when it has a start script', () => {
    const got = scanProject(app({
      'package.json': json({ name: 'root', private: true, workspaces: ['packages/*'], dependencies: { api: '*' } }),
      'packages/api/package.json': json({ name: 'api', scripts: { start: 'node server.js' }, dependencies: { express: '4' } }),
    }));
    assert.equal(got.rootDirectory, 'packages/api');
    assert.equal(got.startCommand, 'npm run start');
  });

  it("builds an Nx app with its Nx target, `nx build <project>`, from the app's folder", () => {
    const got = scanProject(path.join(FIXTURES, 'nx-next'));
    assert.equal(got.rootDirectory, 'apps/web');
    assert.equal(got.buildCommand, 'nx build @acme/web');
  });

  it("takes the Nx project name from project.json, and its build target from there too; a package's own build script wins", () => {
    const nx = { 'nx.json': '{}', 'package.json': json({ name: 'root', private: true, workspaces: ['apps/*'], devDependencies: { nx: '21' } }) };
    const target = scanProject(app({ ...nx, 'apps/api/package.json': json({ name: 'api-pkg', dependencies: { express: '4' }, main: 'dist/main.js' }), 'apps/api/project.json': json({ name: 'api', targets: { build: { executor: '@nx/esbuild:esbuild' } } }) }));
    assert.equal(target.buildCommand, 'nx build api');
    const script = scanProject(app({ ...nx, 'apps/api/package.json': json({ name: 'api', dependencies: { express: '4' }, main: 'dist/main.js', scripts: { build: 'tsc' } }), 'apps/api/project.json': json({ targets: { build: {} } }) }));
    assert.equal(script.buildCommand, 'npm run build');
    const none = scanProject(app({ ...nx, 'apps/api/package.json': json({ name: 'api', dependencies: { express: '4' }, main: 'dist/main.js' }) }));
    assert.equal(none.buildCommand, null, 'no build target Berth can tell: no build');
  });
});

describe('node provider: TanStack Start', () => {
  it('starts a Nitro-built TanStack Start app (before 1.132, or with a nitro plugin) from .output/server/index.mjs', () => {
    assert.equal(scanProject(path.join(FIXTURES, 'tanstack-start')).startCommand, 'node .output/server/index.mjs');
    const withNitro = scanProject(app({
      'package.json': json({ scripts: { build: 'vite build' }, dependencies: { '@tanstack/react-start': '^1.140.0', nitro: 'latest' } }),
      'vite.config.ts': "import { nitro } from 'nitro/vite'\nexport default { plugins: [tanstackStart(), nitro()] }\n",
    }));
    assert.equal(withNitro.startCommand, 'node .output/server/index.mjs');
  });

  it("serves a later TanStack Start build (dist/server/server.js) with srvx, as Railpack does; the app's start script wins", () => {
    assert.equal(scanProject(path.join(FIXTURES, 'tanstack-start-srvx')).startCommand, 'npx srvx --prod -s ../client dist/server/server.js');
    const own = scanProject(app({ 'package.json': json({ scripts: { build: 'vite build', start: 'node server.mjs' }, dependencies: { '@tanstack/react-start': 'latest' } }) }));
    assert.equal(own.startCommand, 'npm run start');
  });
});

describe('node provider: browser code is never started as a server', () => {
  it('a front-end folder with no start script, main or index file has no start command (not node src/main.js)', () => {
    const got = scanProject(path.join(FIXTURES, 'frontend-no-start'));
    assert.equal(got.startCommand, null);
    assert.equal(got.plan.static, undefined);
  });

  it('a front-end folder with an index.html and nothing to build is a static site of its files', () => {
    const got = scanProject(app({ 'package.json': json({ dependencies: { react: '19' } }), 'index.html': '<div id="root"></div>', 'src/main.js': 'render()\n' }));
    assert.equal(got.runtime, 'static');
    assert.deepEqual(got.plan.static, { outputDirectory: '.', spa: false });
  });

  it('a server package beside front-end code still starts its entry file, and so does a front-end with a server.js', () => {
    const server = scanProject(app({ 'package.json': json({ dependencies: { express: '4', react: '19' } }), 'src/main.js': 'require("express")().listen(process.env.PORT)\n' }));
    assert.equal(server.startCommand, 'node src/main.js');
    const ssr = scanProject(app({ 'package.json': json({ dependencies: { react: '19' } }), 'server.js': 'require("http").createServer().listen(process.env.PORT)\n', 'src/main.js': '' }));
    assert.equal(ssr.startCommand, 'node server.js');
  });

  it('a build of browser code never names a start for the build to run', () => {
    const d = planBuild(path.join(FIXTURES, 'frontend-no-start'), path.join(FIXTURES, 'frontend-no-start'));
    assert.equal(d.start, null);
  });
});
