import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { DetectedApp } from '../../src/modules/detect/detect.js';
import { scanProject } from '../../src/modules/detect/scan.js';
import { NODE_FRAMEWORKS } from '../../src/modules/detect/providers/node-frameworks.js';

const FIX = path.resolve(import.meta.dirname, '../fixtures/detect');

type Expect = Partial<DetectedApp> & { monorepo?: string | null; apps?: Partial<DetectedApp>[] };

/** One fixture project per framework, and what a scan must find in it. */
const CASES: Record<string, Expect> = {
  next: { runtime: 'node', framework: 'next', packageManager: 'npm', installCommand: 'npm ci', buildCommand: 'npm run build', startCommand: 'npm run start', outputDirectory: '.next', port: 3000 },
  nuxt: { runtime: 'node', framework: 'nuxt', packageManager: 'pnpm', installCommand: 'pnpm install --frozen-lockfile', buildCommand: 'pnpm run build', startCommand: 'node .output/server/index.mjs', outputDirectory: '.output', port: 3000 },
  remix: { runtime: 'node', framework: 'remix', packageManager: 'yarn', installCommand: 'yarn install --frozen-lockfile', buildCommand: 'yarn run build', startCommand: 'yarn run start', outputDirectory: 'build', port: 3000 },
  'react-router': { runtime: 'node', framework: 'react-router', packageManager: 'npm', buildCommand: 'npm run build', startCommand: 'npm run start', outputDirectory: 'build' },
  sveltekit: { runtime: 'node', framework: 'sveltekit', packageManager: 'pnpm', buildCommand: 'pnpm run build', startCommand: 'node build', outputDirectory: 'build', port: 3000 },
  astro: { runtime: 'node', framework: 'astro', packageManager: 'bun', installCommand: 'bun install --frozen-lockfile', buildCommand: 'bun run build', startCommand: null, outputDirectory: 'dist', port: null },
  'vite-react': { runtime: 'node', framework: 'vite', packageManager: 'npm', buildCommand: 'npm run build', startCommand: null, outputDirectory: 'dist', port: null },
  'vite-vue': { runtime: 'node', framework: 'vite', packageManager: 'yarn', installCommand: 'yarn install --immutable', outputDirectory: 'dist' },
  'vite-svelte': { runtime: 'node', framework: 'vite', packageManager: 'pnpm', outputDirectory: 'dist' },
  cra: { runtime: 'node', framework: 'cra', packageManager: 'npm', buildCommand: 'npm run build', startCommand: null, outputDirectory: 'build' },
  angular: { runtime: 'node', framework: 'angular', buildCommand: 'npm run build', startCommand: null, outputDirectory: 'dist/shop/browser' },
  gatsby: { runtime: 'node', framework: 'gatsby', packageManager: 'yarn', buildCommand: 'yarn run build', outputDirectory: 'public' },
  express: { runtime: 'node', framework: 'express', packageManager: 'npm', installCommand: 'npm ci', buildCommand: null, startCommand: 'npm run start', port: 3000, outputDirectory: null },
  fastify: { runtime: 'node', framework: 'fastify', packageManager: 'pnpm', startCommand: 'node src/index.js', port: 3000 },
  nestjs: { runtime: 'node', framework: 'nestjs', buildCommand: 'npm run build', startCommand: 'npm run start', port: 3000 },
  hono: { runtime: 'node', framework: 'hono', startCommand: 'npm run start', port: 8787 },
  koa: { runtime: 'node', framework: 'koa', packageManager: 'yarn', startCommand: 'node app.js', port: 3000 },
  'node-plain': { runtime: 'node', framework: null, packageManager: 'npm', installCommand: 'npm install', startCommand: 'npm run start', port: 3000 },
  'static-html': { runtime: 'static', framework: null, packageManager: null, installCommand: null, buildCommand: null, startCommand: null, outputDirectory: '.', port: null },
  django: { runtime: 'python', framework: 'django', packageManager: 'pip', installCommand: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt', startCommand: '.venv/bin/python manage.py migrate && .venv/bin/gunicorn --bind 0.0.0.0:${PORT:-8000} mysite.wsgi:application', port: 8000 },
  flask: { runtime: 'python', framework: 'flask', packageManager: 'poetry', installCommand: 'POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction --no-ansi --only main --no-root', startCommand: '.venv/bin/flask --app app run --host 0.0.0.0 --port ${PORT:-8000}', port: 8000 },
  fastapi: { runtime: 'python', framework: 'fastapi', packageManager: 'uv', installCommand: 'UV_PYTHON_DOWNLOADS=never uv sync --locked --no-dev --no-install-project', startCommand: '.venv/bin/uvicorn app.main:api --host 0.0.0.0 --port ${PORT:-8000}', port: 8000 },
  go: { runtime: 'go', framework: null, packageManager: 'go', installCommand: 'go mod download', buildCommand: 'go build -ldflags="-w -s" -o out', startCommand: './out', port: 8080 },
  docker: { runtime: 'docker', port: 8080, buildCommand: null, startCommand: null },
  'monorepo-pnpm': {
    monorepo: 'turbo',
    rootDirectory: 'apps/web',
    framework: 'next',
    packageManager: 'pnpm',
    apps: [
      { rootDirectory: 'apps/web', framework: 'next', packageManager: 'pnpm', buildCommand: 'pnpm run build' },
      { rootDirectory: 'apps/api', framework: 'fastify', startCommand: 'pnpm run start', port: 4000 },
    ],
  },
  'monorepo-npm': {
    monorepo: 'npm',
    apps: [
      { rootDirectory: 'apps/site', framework: 'vite', outputDirectory: 'dist', packageManager: 'npm', installCommand: 'npm ci' },
      { rootDirectory: 'apps/server', framework: 'express', startCommand: 'npm run start' },
    ],
  },
  'expo-web': { runtime: 'node', framework: 'expo', packageManager: 'yarn', buildCommand: 'yarn run build', startCommand: null, outputDirectory: 'dist', port: null },
  'next-export': { runtime: 'node', framework: 'next', buildCommand: 'npm run build', startCommand: null, outputDirectory: 'out', port: null },
  'monorepo-root-start': {
    monorepo: 'turbo',
    rootDirectory: '',
    startCommand: 'yarn run start',
    buildCommand: 'yarn run build',
    apps: [
      { rootDirectory: 'apps/web', framework: 'vite', outputDirectory: 'dist' },
      { rootDirectory: 'apps/api', framework: 'nestjs', startCommand: 'yarn run start' },
    ],
  },
  'tanstack-start': { runtime: 'node', framework: 'tanstack-start', packageManager: 'npm', buildCommand: 'npm run build', startCommand: 'node .output/server/index.mjs', port: 3000 },
  'monorepo-yarn': { monorepo: 'yarn', rootDirectory: 'packages/docs', framework: 'astro', packageManager: 'yarn', installCommand: 'yarn install --immutable', apps: [{ rootDirectory: 'packages/docs', framework: 'astro' }] },
};

function pick(actual: any, expected: any): any {
  if (Array.isArray(expected)) return expected.map((e, i) => pick(actual?.[i], e));
  if (expected && typeof expected === 'object') return Object.fromEntries(Object.keys(expected).map((k) => [k, pick(actual?.[k], expected[k])]));
  return actual;
}

describe('build detection', () => {
  for (const [dir, expected] of Object.entries(CASES)) {
    it(`scanning the ${dir} fixture detects what its table entry expects (framework, commands, apps)`, () => {
      const got = scanProject(path.join(FIX, dir));
      assert.deepEqual(pick(got, expected), expected);
      if (expected.apps) assert.equal(got.apps.length, expected.apps.length, 'libraries are not apps');
    });
  }

  it('every framework id of the table has a fixture', () => {
    const covered = new Set(Object.values(CASES).flatMap((e) => [e.framework, ...(e.apps ?? []).map((a) => a.framework)]));
    for (const r of [...NODE_FRAMEWORKS, { id: 'django' }, { id: 'flask' }, { id: 'fastapi' }]) assert.ok(covered.has(r.id), `no fixture for ${r.id}`);
  });

  it('the packageManager field wins over lockfiles', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-detect-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ packageManager: 'pnpm@9.0.0', dependencies: { express: '4' }, scripts: { start: 'node a.js' } }));
      writeFileSync(path.join(dir, 'package-lock.json'), '{}');
      const got = scanProject(dir);
      assert.equal(got.packageManager, 'pnpm');
      assert.equal(got.startCommand, 'pnpm run start');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an empty or unknown folder is runtime unknown', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-detect-'));
    try {
      writeFileSync(path.join(dir, 'notes.txt'), 'hello');
      const got = scanProject(dir);
      assert.equal(got.runtime, 'unknown');
      assert.equal(got.framework, null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does not read through a symlink that leaves the folder', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-detect-'));
    const outside = mkdtempSync(path.join(os.tmpdir(), 'berth-outside-'));
    try {
      writeFileSync(path.join(outside, 'package.json'), JSON.stringify({ dependencies: { next: '15' } }));
      symlinkSync(path.join(outside, 'package.json'), path.join(dir, 'package.json'));
      const got = scanProject(dir);
      assert.equal(got.framework, null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('scans a 10 000-file tree in under 200 ms', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-detect-big-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: { next: '15' }, scripts: { build: 'next build' } }));
      for (let d = 0; d < 100; d++) {
        const sub = path.join(dir, d < 50 ? `node_modules/pkg${d}` : `src/mod${d}`);
        mkdirSync(sub, { recursive: true });
        for (let f = 0; f < 100; f++) writeFileSync(path.join(sub, `f${f}.js`), '');
      }
      scanProject(dir); // warm the page cache, as a real upload just written would be
      const t0 = performance.now();
      const got = scanProject(dir);
      const ms = performance.now() - t0;
      assert.equal(got.framework, 'next');
      assert.ok(ms < 200, `scan took ${ms.toFixed(1)} ms`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
