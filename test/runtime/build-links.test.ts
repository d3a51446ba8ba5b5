import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BuildError, runBuild } from '../../src/runtime/build.js';
import { createDriver } from '../../src/runtime/drivers.js';
import type { RuntimeDriver } from '../../src/runtime/driver.js';
import { tempDir } from '../support/harness.js';

/** A git repository whose `app` is a link to a host folder, and whose Dockerfile is a link to a host file. */
function repoWithLinks(root: string): string {
  const repo = path.join(root, 'repo');
  mkdirSync(repo, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, GIT_CONFIG_NOSYSTEM: '1' } });
  git('init', '-q', '-b', 'main');
  symlinkSync('/etc', path.join(repo, 'app'));
  mkdirSync(path.join(repo, 'web'));
  symlinkSync('/etc/hostname', path.join(repo, 'web', 'Dockerfile'));
  writeFileSync(path.join(repo, 'web', 'server.js'), 'require("http").createServer((q, s) => s.end("hi")).listen(process.env.PORT);\n');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.test', 'commit', '-q', '-m', 'links');
  return repo;
}

test('a root directory or a Dockerfile that is a link out of the source is refused before anything builds', async () => {
  const root = tempDir('berth-build-links-');
  try {
    const repo = repoWithLinks(root);
    const driver = createDriver('process', path.join(root, 'data'));
    const run = (rootDirectory: string, dockerfile: string | null) =>
      runBuild({
        deploymentId: 'dpl_links',
        projectId: 'prj_links',
        workDir: path.join(root, 'work'),
        source: { type: 'git', url: repo, ref: null },
        commands: { rootDirectory, startCommand: 'node server.js' },
        plan: () => ({ runtime: 'node', install: [], build: [], start: 'node server.js', programs: [] }),
        port: 3000,
        env: {},
        secrets: [],
        baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeoutMs: 30000,
        limits: { cpuCores: 1, memoryMb: 256 },
        // The process driver, with an image builder that must never be reached.
        driver: Object.assign(Object.create(driver) as RuntimeDriver, { images: { baseImage: () => 'none', build: async () => assert.fail('no image may be built'), remove: async () => {} } }),
        identity: null,
        signal: new AbortController().signal,
        imageTag: 'berth/links:dpl_links',
        dockerfile,
        log: () => {},
      });
    await assert.rejects(run('app', null), (e: Error) => e instanceof BuildError && /the root directory app does not exist in the source/.test(e.message));
    await assert.rejects(run('web', 'Dockerfile'), (e: Error) => e instanceof BuildError && /the Dockerfile Dockerfile does not exist in the source/.test(e.message));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
