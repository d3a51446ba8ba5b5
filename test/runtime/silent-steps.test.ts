/**
 * Progress on silent steps and npm's refused lockfile (contract section 18), on the runtime itself:
 * builds through runBuild on the driver without isolation (the sandbox and the API's log are covered
 * by test/deployments/real-dependencies.test.ts), starts through the supervisor.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../src/lib/logger.js';
import { BuildError, runBuild, type BuildCommands, type PlanInput } from '../../src/runtime/build.js';
import { parseCommand } from '../../src/runtime/command.js';
import { createDriver } from '../../src/runtime/drivers.js';
import { LogStore } from '../../src/runtime/logs.js';
import { npmCiRefusedLockfile, npmInstallInstead } from '../../src/runtime/npm-fallback.js';
import { ProcessDriver } from '../../src/runtime/process-driver.js';
import { silentStepMs, stillRunningLine } from '../../src/runtime/silent-step.js';
import { Supervisor } from '../../src/runtime/supervisor.js';
import { tempDir } from '../support/harness.js';
import { httpGet, writeTinyApp } from './app-fixture.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';
let root: string;
let seq = 0;

before(() => {
  root = tempDir('berth-silent-');
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

function write(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** Builds `folder` (copied as a local source) with `plan` and the project's `commands`; answers the build log's lines and the outcome. */
async function build(folder: string, plan: Partial<PlanInput>, commands: BuildCommands = {}, silentSeconds = '1'): Promise<{ lines: string[]; error: Error | null; appDir: string }> {
  const lines: string[] = [];
  const before = process.env.BERTH_SILENT_STEP_SECONDS;
  process.env.BERTH_SILENT_STEP_SECONDS = silentSeconds;
  const id = ++seq;
  try {
    const result = await runBuild({
      deploymentId: `dpl_silent${id}`,
      projectId: 'prj_silent',
      workDir: path.join(root, `work-${id}`),
      source: { type: 'local', path: folder, roots: [root] },
      commands,
      plan: () => ({ runtime: 'node', install: [], build: [], start: 'node server.js', programs: ['node'], ...plan }),
      port: 3000,
      env: {},
      secrets: [],
      baseEnv: { PATH },
      timeoutMs: 120000,
      limits: { cpuCores: 1, memoryMb: 1024 },
      driver: createDriver('process', path.join(root, 'data')),
      identity: null,
      signal: new AbortController().signal,
      log: (_stream, line) => lines.push(line),
    });
    return { lines, error: null, appDir: result.appDir };
  } catch (e) {
    return { lines, error: e as Error, appDir: '' };
  } finally {
    if (before === undefined) delete process.env.BERTH_SILENT_STEP_SECONDS;
    else process.env.BERTH_SILENT_STEP_SECONDS = before;
  }
}

/** The seconds of each still-running line of `step`, in order. */
const heartbeats = (lines: string[], step: string) =>
  lines.flatMap((l) => {
    const m = /^\[berth\] still running: (.+) \((\d+) s without output\)$/.exec(l);
    return m && m[1] === step ? [Number(m[2])] : [];
  });

test('the still-running interval is 30 s unless BERTH_SILENT_STEP_SECONDS (for tests) sets it', () => {
  assert.equal(silentStepMs({}), 30000);
  assert.equal(silentStepMs({ BERTH_SILENT_STEP_SECONDS: '2' }), 2000);
  assert.equal(silentStepMs({ BERTH_SILENT_STEP_SECONDS: 'soon' }), 30000);
  assert.equal(stillRunningLine('install: npm ci', 30400), '[berth] still running: install: npm ci (30 s without output)');
});

test('a build step silent past the interval gets "[berth] still running: <step> (<n> s without output)", repeated, counted from its last output', async () => {
  const folder = write(path.join(root, 'quiet-build'), {
    'server.js': '',
    // Silent, one line, silent again: the count starts again after the line.
    'quiet.js': "setTimeout(() => { console.log('half way'); setTimeout(() => {}, 2600); }, 2600);\n",
  });
  const { lines, error } = await build(folder, { build: ['node quiet.js'] });
  assert.equal(error, null, String(error));
  const step = 'build: node quiet.js';
  assert.ok(lines.includes(`[berth] ${step}`), lines.join('\n'));
  const half = lines.indexOf('half way');
  assert.ok(half > 0, lines.join('\n'));
  const before = heartbeats(lines.slice(0, half), step);
  const afterward = heartbeats(lines.slice(half), step);
  assert.ok(before.length >= 2, `repeated while silent: ${lines.join('\n')}`);
  assert.ok(afterward.length >= 1, `again after the output: ${lines.join('\n')}`);
  assert.ok(before.every((n, i) => i === 0 || n > before[i - 1]!), `n grows while the step stays silent: ${before}`);
  assert.ok(afterward[0]! <= before[before.length - 1]!, `n counts from the last output: ${before} then ${afterward}`);
});

test('a step that keeps printing gets no still-running line, nor does a fast one', async () => {
  const folder = write(path.join(root, 'chatty-build'), {
    'server.js': '',
    'chatty.js': "let n = 0; const t = setInterval(() => { console.log('tick ' + ++n); if (n === 10) clearInterval(t); }, 100);\n",
  });
  const { lines, error } = await build(folder, { install: ['node -e 0'], build: ['node chatty.js'] }, {}, '3');
  assert.equal(error, null, String(error));
  assert.ok(lines.includes('tick 10'));
  assert.deepEqual(lines.filter((l) => l.startsWith('[berth] still running')), []);
});

/** A folder whose package.json asks for a (local) dependency its package-lock.json does not list. */
function mismatchedLock(dir: string): string {
  return write(dir, {
    'package.json': JSON.stringify({ name: 'mismatch', version: '1.0.0', private: true, dependencies: { 'local-dep': 'file:./dep' } }),
    'package-lock.json': JSON.stringify({ name: 'mismatch', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'mismatch', version: '1.0.0', dependencies: { 'local-dep': 'file:./dep' } } } }),
    'dep/package.json': JSON.stringify({ name: 'local-dep', version: '1.0.0', main: 'index.js' }),
    'dep/index.js': "module.exports = 'from the local dep';\n",
    'server.js': "console.log(require('local-dep'));\n",
  });
}

test('a planned `npm ci` that npm refuses because the lockfile does not match falls back to `npm install`, saying so', async () => {
  // The project's installCommand is the plan's, as a scan copies it into a new project's config.
  const { lines, error, appDir } = await build(mismatchedLock(path.join(root, 'mismatch')), { install: ['npm ci'], programs: ['node', 'npm'] }, { installCommand: 'npm ci' });
  assert.equal(error, null, `${error}\n${lines.join('\n')}`);
  assert.ok(lines.some((l) => /EUSAGE/.test(l)), 'npm\'s refusal is in the log');
  assert.ok(lines.includes('[berth] npm ci refused the lockfile (it does not match package.json); running npm install instead'), lines.join('\n'));
  const { execFileSync } = await import('node:child_process');
  assert.equal(execFileSync(process.execPath, ['server.js'], { cwd: appDir, encoding: 'utf8' }).trim(), 'from the local dep');
});

test("the project's own `npm ci`, where the plan would not run it, is not replaced: the build fails as npm says", async () => {
  const { lines, error } = await build(mismatchedLock(path.join(root, 'mismatch-own')), { install: ['npm install'], programs: ['node', 'npm'] }, { installCommand: 'npm ci' });
  assert.ok(error instanceof BuildError && /the install command failed \(exit code 1\)/.test(error.message), String(error));
  assert.ok(!lines.some((l) => l.includes('running npm install instead')));
});

test('only npm refusing the lockfile is recognised: npm ci as npm install keeps its options', () => {
  const refusal = 'npm error code EUSAGE\nnpm error\nnpm error `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.\n';
  assert.equal(npmCiRefusedLockfile(refusal), true);
  assert.equal(npmCiRefusedLockfile('npm ERR! code EUSAGE\nnpm ERR! The `npm ci` command can only install with an existing package-lock.json'), false);
  assert.equal(npmCiRefusedLockfile('npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope'), false);
  assert.deepEqual(npmInstallInstead(['npm', 'ci', '--prefix', 'assets']), ['npm', 'install', '--prefix', 'assets']);
  assert.equal(npmInstallInstead(['pnpm', 'install', '--frozen-lockfile']), null);
  assert.equal(npmInstallInstead(['npm', 'run', 'build']), null);
});

test('an app start silent past the interval gets the still-running line in the deploy\'s log, until it answers', async () => {
  const logs = new LogStore(path.join(root, 'sup'));
  const sup = new Supervisor({ logs, driver: new ProcessDriver({ version: null, enforced: false, root: '/sys/fs/cgroup' }, 'silenttest'), log: createLogger('silent'), baseEnv: { PATH }, healthTimeoutMs: 20000, graceMs: 2000 });
  try {
    // Listens after 2.6 s of silence.
    const dir = writeTinyApp(path.join(root, 'slow-start'), { version: 'slow', startDelayMs: 2600 });
    const progress: string[] = [];
    const snap = await sup.deploy(
      {
        projectId: 'prj_slowstart',
        orgId: 'org_test',
        deploymentId: 'dpl_slowstart',
        appRoot: dir,
        cwd: dir,
        steps: (env) => parseCommand('node server.js', env),
        env: {},
        secrets: [],
        dataDir: path.join(root, 'sup-data'),
        limits: { cpuCores: 1, memoryMb: 256 },
        identity: null,
        port: 3000,
        path: () => PATH,
      },
      { step: 'start: node server.js', log: (line) => progress.push(line), silentMs: 1000 },
    );
    assert.match((await httpGet(`http://127.0.0.1:${snap.port}/`)).text, /hello slow/);
    const seen = heartbeats(progress, 'start: node server.js');
    assert.ok(seen.length >= 2, progress.join('\n'));
    // Nothing more once it is up.
    const count = progress.length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(progress.length, count);
  } finally {
    await sup.stopAll();
    logs.closeAll();
  }
});
