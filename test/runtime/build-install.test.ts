/**
 * A planned `npm install` that has nothing to install is skipped (docs/builds.md): the build of a
 * package.json without dependencies opens no box and runs no npm; anything npm would act on keeps it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runBuild, type BuildCommands, type PlanInput } from '../../src/runtime/build.js';
import { npmInstallIsNoop } from '../../src/runtime/build-install.js';
import { createDriver } from '../../src/runtime/drivers.js';
import { tempDir } from '../support/harness.js';

let root: string;
let seq = 0;
before(() => {
  root = tempDir('berth-install-');
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = path.join(root, `src-${++seq}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

const pkg = (extra: Record<string, unknown> = {}) => JSON.stringify({ name: 'hello', private: true, scripts: { start: 'node server.js' }, ...extra });

test('npm install has nothing to do for a package.json without dependencies, install scripts, lockfile or node_modules', async () => {
  const dir = folder({ 'package.json': pkg({ dependencies: {}, devDependencies: {} }), 'server.js': '' });
  assert.equal(await npmInstallIsNoop(dir, dir), true);
});

test('npm install runs for any dependency, workspace, override or install script, and beside a lockfile or node_modules', async () => {
  const cases: Record<string, string>[] = [
    { 'package.json': pkg({ dependencies: { express: '^4.0.0' } }) },
    { 'package.json': pkg({ devDependencies: { typescript: '^5.0.0' } }) },
    { 'package.json': pkg({ optionalDependencies: { fsevents: '*' } }) },
    { 'package.json': pkg({ peerDependencies: { react: '*' } }) },
    { 'package.json': pkg({ bundleDependencies: ['x'] }) },
    { 'package.json': pkg({ workspaces: ['packages/*'] }) },
    { 'package.json': pkg({ overrides: { foo: '1.0.0' } }) },
    { 'package.json': pkg({ scripts: { start: 'node server.js', postinstall: 'node setup.js' } }) },
    { 'package.json': pkg({ scripts: { prepare: 'tsc' } }) },
    { 'package.json': pkg({ scripts: 'not an object' }) },
    { 'package.json': pkg(), 'package-lock.json': '{}' },
    { 'package.json': pkg(), 'npm-shrinkwrap.json': '{}' },
    { 'package.json': pkg(), 'node_modules/x/index.js': '' },
    { 'package.json': '{ not json' },
    { 'package.json': '[]' },
    { 'server.js': '' },
  ];
  for (const files of cases) {
    const dir = folder(files);
    assert.equal(await npmInstallIsNoop(dir, dir), false, JSON.stringify(files));
  }
});

test('an app folder below a package.json of its own (a workspace root) keeps its install', async () => {
  const dir = folder({ 'package.json': pkg({ workspaces: ['apps/*'] }), 'apps/web/package.json': pkg() });
  assert.equal(await npmInstallIsNoop(dir, path.join(dir, 'apps', 'web')), false);
  const plain = folder({ 'apps/web/package.json': pkg() });
  assert.equal(await npmInstallIsNoop(plain, path.join(plain, 'apps', 'web')), true);
});

async function build(src: string, plan: Partial<PlanInput>, commands: BuildCommands = {}): Promise<{ lines: string[]; appDir: string }> {
  const lines: string[] = [];
  const id = ++seq;
  const result = await runBuild({
    deploymentId: `dpl_install${id}`,
    projectId: 'prj_install',
    workDir: path.join(root, `work-${id}`),
    source: { type: 'local', path: src, roots: [root] },
    commands,
    plan: () => ({ runtime: 'node', install: ['npm install'], build: [], start: 'node server.js', programs: ['node', 'npm'], ...plan }),
    port: 3000,
    env: {},
    secrets: [],
    baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: 120000,
    limits: { cpuCores: 1, memoryMb: 1024 },
    driver: createDriver('process', path.join(root, 'data')),
    identity: null,
    signal: new AbortController().signal,
    log: (_stream, line) => lines.push(line),
  });
  return { lines, appDir: result.appDir };
}

test('the build of a package without dependencies skips the planned npm install and says so in its log', async () => {
  const { lines, appDir } = await build(folder({ 'package.json': pkg(), 'server.js': '' }), {});
  assert.ok(lines.includes('[berth] install: skipped: package.json names no dependencies and no install scripts (npm install would only write a lockfile)'), lines.join('\n'));
  assert.ok(!lines.some((l) => l.startsWith('[berth] install: npm install')), lines.join('\n'));
  assert.equal(existsSync(path.join(appDir, 'package-lock.json')), false);
});

test('an install command of the project\'s own that is not the plan\'s runs even with nothing to install', async () => {
  const own = await build(folder({ 'package.json': pkg(), 'server.js': '' }), { install: [] }, { installCommand: 'npm install' });
  assert.ok(own.lines.includes('[berth] install: npm install'), own.lines.join('\n'));
  assert.ok(existsSync(path.join(own.appDir, 'package-lock.json')), 'npm ran and wrote its lockfile');
});
