/**
 * `bin/berth` (README): the checkout's launcher, linked onto the PATH with `ln -s`, runs the built
 * CLI (dist/cli/index.js) of the checkout it lives in, following the link. Needs `dist/` built
 * (`npx tsc -p tsconfig.build.json`, which `npm install` runs through `prepare`).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, type RunResult } from '../support/cli.js';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { cliUser } from './commands-support.js';

/** Runs `berth <args>` as a shell would find it: by name, through PATH (`dirs` first). */
function runOnPath(dirs: string[], args: string[], env: Record<string, string>): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const base = { ...process.env };
    for (const k of Object.keys(base)) if (k.startsWith('BERTH_') || k === 'DATABASE_URL') delete base[k];
    // `node` itself is found on PATH by the launcher's `#!/usr/bin/env node`.
    const PATH = [...dirs, path.dirname(process.execPath), '/usr/bin', '/bin'].join(':');
    const child = spawn('berth', args, { env: { ...base, ...env, PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`berth ${args.join(' ')} timed out\n${stderr}`));
    }, 60000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('bin/berth, linked onto the PATH', () => {
  let server: TestServer;
  let user: TestUser;
  const binDir = tempDir('berth-bin-');

  before(async () => {
    assert.ok(existsSync(path.join(ROOT, 'dist', 'cli', 'index.js')), 'dist/ is not built: run `npx tsc -p tsconfig.build.json`');
    server = await startTestServer();
    user = await createUser(server);
    symlinkSync(path.join(ROOT, 'bin', 'berth'), path.join(binDir, 'berth'));
  });
  after(() => server?.close());

  it('`berth` through a symlink runs the built CLI: --version, and a client command against a server', async () => {
    const version = await runOnPath([binDir], ['--version'], {});
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
    const cli = cliUser(server, user.token);
    const me = await runOnPath([binDir], ['whoami', '--json'], cli.env);
    assert.equal(me.code, 0, me.stderr);
    assert.equal(JSON.parse(me.stdout).user.email, user.email);
  });

  it('usage errors keep their exit code (2) through the launcher', async () => {
    const res = await runOnPath([binDir], ['no-such-command'], {});
    assert.equal(res.code, 2, res.stderr);
  });

  it('a checkout without dist/ says how to build it (exit 1)', async () => {
    const checkout = tempDir('berth-unbuilt-');
    mkdirSync(path.join(checkout, 'bin'));
    copyFileSync(path.join(ROOT, 'bin', 'berth'), path.join(checkout, 'bin', 'berth'));
    const res = await runOnPath([path.join(checkout, 'bin')], ['--version'], {});
    assert.equal(res.code, 1);
    assert.match(res.stderr, /dist\/cli\/index\.js is not built yet: run `npm install`/);
  });
});
