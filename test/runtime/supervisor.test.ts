import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../src/lib/logger.js';
import { parseCommand } from '../../src/runtime/command.js';
import { LogStore } from '../../src/runtime/logs.js';
import { MASK } from '../../src/runtime/redact.js';
import { ProcessDriver } from '../../src/runtime/process-driver.js';
import { Supervisor, type ReleaseSpec } from '../../src/runtime/supervisor.js';
import { tempDir } from '../support/harness.js';
import { httpGet, writeTinyApp } from './app-fixture.js';
import { waitFor } from '../support/wait.js';

// The supervisor's own behaviour (swap, restart, stop, wake), on the driver without isolation; the
// sandbox driver is covered by test/security/sandbox-*.test.ts and test/runtime/sandbox-unavailable.test.ts.
const noIsolation = new ProcessDriver({ version: null, enforced: false, root: '/sys/fs/cgroup' }, 'suptest');
let root: string;
let logs: LogStore;
let sup: Supervisor;

before(() => {
  root = tempDir('berth-sup-');
  logs = new LogStore(root);
  sup = new Supervisor({
    logs,
    driver: noIsolation,
    log: createLogger('silent'),
    baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    healthTimeoutMs: 5000,
    graceMs: 2000,
  });
});

after(async () => {
  await sup.stopAll();
  logs.closeAll();
  rmSync(root, { recursive: true, force: true });
});

/** Release `version` of project `projectId` (each test deploys its own project, so each runs alone). */
function spec(projectId: string, version: string, extra: Partial<ReleaseSpec> = {}): ReleaseSpec {
  const dir = writeTinyApp(path.join(root, projectId, 'rel-' + version), { version });
  return {
    projectId,
    orgId: 'org_test',
    deploymentId: `dpl_${projectId}_${version}`,
    appRoot: dir,
    cwd: dir,
    steps: (env) => parseCommand('node server.js', env),
    env: { GREETING: 'hi', API_KEY: 'super-secret-key-value' },
    secrets: ['super-secret-key-value'],
    dataDir: path.join(root, 'volumes', projectId, 'data'),
    limits: { cpuCores: 1, memoryMb: 512 },
    identity: null,
    port: 3000,
    path: () => process.env.PATH ?? '/usr/bin:/bin',
    ...extra,
  };
}

test('a release runs as a process group on an allocated PORT with DATA_DIR and its env', async () => {
  const snap = await sup.deploy(spec('prj_run', 'v1'));
  assert.equal(snap.state, 'running');
  assert.ok(snap.port && snap.pid);
  const res = await httpGet(`http://127.0.0.1:${snap.port}/`);
  assert.match(res.text, /hello v1/);
  assert.equal((await httpGet(`http://127.0.0.1:${snap.port}/env/GREETING`)).text, 'hi');
  assert.equal((await httpGet(`http://127.0.0.1:${snap.port}/env/PORT`)).text, String(snap.port));
  assert.equal((await httpGet(`http://127.0.0.1:${snap.port}/data`)).text, path.join(root, 'volumes', 'prj_run', 'data'));
  assert.ok(existsSync(path.join(root, 'volumes', 'prj_run', 'data', 'touched')));
  // the server's own environment is not passed on
  assert.equal((await httpGet(`http://127.0.0.1:${snap.port}/env/BERTH_SECRET_KEY`)).text, '');
});

test('stdout and stderr land in the project log, with secret values redacted', async () => {
  const { port } = await sup.deploy(spec('prj_logs', 'v1'));
  await httpGet(`http://127.0.0.1:${port}/log`);
  // The app prints its secret API_KEY on both streams; the log holds the mask in its place.
  assert.equal((await httpGet(`http://127.0.0.1:${port}/print/API_KEY`)).text, 'printed');
  const lines = await waitFor(async () => {
    const l = logs.runtime('prj_logs').read({ limit: 100 });
    const both = l.some((x) => x.line.startsWith('stdout API_KEY=')) && l.some((x) => x.line.startsWith('stderr API_KEY='));
    return both && l.some((x) => x.line.includes('hello from the app v1')) ? l : null;
  }, 'the log lines');
  assert.ok(lines.some((l) => l.stream === 'stdout' && /listening on/.test(l.line)));
  assert.ok(lines.some((l) => l.stream === 'stdout' && l.line === `stdout API_KEY=${MASK}`), 'stdout shows the mask');
  assert.ok(lines.some((l) => l.stream === 'stderr' && l.line === `stderr API_KEY=${MASK}`), 'stderr shows the mask');
  assert.ok(!lines.some((l) => l.line.includes('super-secret-key-value')), 'the secret value is in no log line');
  // The redaction is of secrets only: a plain variable printed the same way is kept.
  await httpGet(`http://127.0.0.1:${port}/print/GREETING`);
  await waitFor(async () => logs.runtime('prj_logs').read({ limit: 100 }).some((x) => x.line === 'stdout GREETING=hi') || null, 'the plain line');
});

test('a new release is health-checked before it takes traffic, then the old one is stopped', async () => {
  const before = await sup.deploy(spec('prj_swap', 'v1'));
  // Keep requesting the old port/new port during the swap: the serving port always answers.
  let failures = 0;
  let stop = false;
  const poller = (async () => {
    while (!stop) {
      const p = sup.snapshot('prj_swap')!.port!;
      try {
        await httpGet(`http://127.0.0.1:${p}/`);
      } catch {
        failures++;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const snap = await sup.deploy(spec('prj_swap', 'v2'));
  stop = true;
  await poller;
  assert.equal(snap.deploymentId, 'dpl_prj_swap_v2');
  assert.notEqual(snap.pid, before.pid);
  assert.match((await httpGet(`http://127.0.0.1:${snap.port}/`)).text, /hello v2/);
  await waitFor(async () => {
    try {
      process.kill(before.pid!, 0);
      return false;
    } catch {
      return true;
    }
  }, 'the old release to stop');
  assert.equal(failures, 0);
});

test('a release that never answers fails its health check and the previous one keeps serving', async () => {
  const runningPort = (await sup.deploy(spec('prj_bad', 'v2'))).port!;
  const bad = spec('prj_bad', 'bad', { steps: () => parseCommand('node -e "setTimeout(()=>{}, 100000)"') });
  const quick = new Supervisor({ logs, driver: noIsolation, log: createLogger('silent'), baseEnv: { PATH: process.env.PATH! }, healthTimeoutMs: 700, graceMs: 500 });
  await assert.rejects(quick.deploy(bad), /did not become healthy/);
  await assert.rejects(sup.deploy({ ...bad, steps: () => parseCommand('node -e "process.exit(3)"') }), /exited \(code 3\)/);
  assert.equal(sup.snapshot('prj_bad')!.state, 'running');
  assert.match((await httpGet(`http://127.0.0.1:${runningPort}/`)).text, /hello v2/);
});

test('a crashed app is restarted with backoff', async () => {
  const { port, pid } = await sup.deploy(spec('prj_crash', 'v2'));
  await httpGet(`http://127.0.0.1:${port}/crash`).catch(() => {});
  const snap = await waitFor(async () => {
    const s = sup.snapshot('prj_crash')!;
    return s.state === 'running' && s.pid !== pid ? s : null;
  }, 'the restart');
  assert.equal(snap.restarts, 1);
  assert.match((await httpGet(`http://127.0.0.1:${snap.port}/`)).text, /hello v2/);
  assert.ok(logs.runtime('prj_crash').read().some((l) => /restarting in/.test(l.line)));
});

test('stop is graceful (SIGTERM first) and acquire wakes a stopped app again', async () => {
  const { pid } = await sup.deploy(spec('prj_stop', 'v1'));
  await sup.stop('prj_stop', 'sleeping');
  assert.equal(sup.snapshot('prj_stop')!.state, 'sleeping');
  assert.ok(logs.runtime('prj_stop').read().some((l) => l.line === 'got SIGTERM'));
  assert.throws(() => process.kill(pid!, 0));
  const t0 = Date.now();
  const up = await sup.acquire('prj_stop', async () => spec('prj_stop', 'v3'), 5000);
  assert.ok(Date.now() - t0 < 5000);
  assert.match((await httpGet(`http://${up.key}/`)).text, /hello v3/);
});

test('a request waiting for a wake that a deploy supersedes is answered by the deployed release, not an error', async () => {
  await sup.deploy(spec('prj_wakeswap', 'v1'));
  await sup.stop('prj_wakeswap', 'sleeping');
  // The request's wake starts v1; a deploy of v2 begins before v1 answers (a promote while asleep).
  const waiting = sup.acquire('prj_wakeswap', async () => spec('prj_wakeswap', 'v1'), 10_000);
  await new Promise((r) => setImmediate(r));
  const deployed = sup.deploy(spec('prj_wakeswap', 'v2'));
  const up = await waiting;
  assert.match((await httpGet(`http://${up.key}/`)).text, /hello v2/);
  await deployed;
  assert.equal(sup.snapshot('prj_wakeswap')!.state, 'running');
});
