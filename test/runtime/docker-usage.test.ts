// @store-independent: the Engine's stats of a real container, read as the metrics sampler's counters
/**
 * Metrics under the docker runtime (contract section 20, issue 38 point 1): an app container's box
 * reads its usage from the Engine's stats (one-shot), as the sampler's counters: CPU time that grows
 * with work, the memory it holds, the bytes its network received and sent. The Engine's answer on
 * cgroup v1 and v2 hosts (blkio ops `Read` or `read`) and for a stopped container is read as such.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { stopInstance, type Instance, type InstanceDeps } from '../../src/runtime/app-instance.js';
import { parseCommand } from '../../src/runtime/command.js';
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js';
import { labelFilter } from '../../src/runtime/docker/containers.js';
import { usageOfStats } from '../../src/runtime/docker/container-stats.js';
import { LogStore } from '../../src/runtime/logs.js';
import type { UsageCounters } from '../../src/runtime/usage.js';
import { tempDir } from '../support/harness.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from '../support/docker.js';

describe("the Engine's stats answer, as counters", () => {
  test('cgroup v1 and v2 answers: CPU in microseconds, memory, block bytes by op whatever its case, every network summed', () => {
    const base = { cpu_stats: { cpu_usage: { total_usage: 2_500_000 } }, memory_stats: { usage: 42_000_000 }, networks: { eth0: { rx_bytes: 100, tx_bytes: 40 }, eth1: { rx_bytes: 1, tx_bytes: 2 } } } as never as Record<string, unknown>;
    const v1 = usageOfStats({ ...base, blkio_stats: { io_service_bytes_recursive: [{ major: 8, minor: 0, op: 'Read', value: 4096 }, { major: 8, minor: 0, op: 'Write', value: 8192 }, { major: 8, minor: 0, op: 'Total', value: 12288 }] } } as never);
    assert.deepEqual(v1, { cpuUsec: 2500, memoryBytes: 42_000_000, diskReadBytes: 4096, diskWriteBytes: 8192, netRxBytes: 101, netTxBytes: 42 });
    const v2 = usageOfStats({ ...base, blkio_stats: { io_service_bytes_recursive: [{ major: 8, minor: 0, op: 'read', value: 1 }, { major: 8, minor: 16, op: 'write', value: 2 }, { major: 8, minor: 0, op: 'write', value: 3 }] } } as never);
    assert.equal(v2?.diskReadBytes, 1);
    assert.equal(v2?.diskWriteBytes, 5);
  });

  test('what the Engine leaves out is null, and a stopped container (all zeros) reads as nothing', () => {
    const bare = usageOfStats({ cpu_stats: { cpu_usage: { total_usage: 1000 } }, memory_stats: {}, blkio_stats: { io_service_bytes_recursive: null } } as never);
    assert.deepEqual(bare, { cpuUsec: 1, memoryBytes: null, diskReadBytes: null, diskWriteBytes: null, netRxBytes: null, netTxBytes: null });
    assert.equal(usageOfStats({ cpu_stats: { cpu_usage: { total_usage: 0 } }, memory_stats: {} } as never), null);
    assert.equal(usageOfStats({} as never), null);
  });
});

const { engine, skip: noEngine, withEngine } = await dockerSuite('test/runtime/docker-usage');
const run = randomBytes(3).toString('hex');
const IMAGE = `berth-test/usage-${run}:1`;
const root = tempDir('berth-dkusage-');
const key = `dkusage${run}`;
const projectId = `prj_u${run}`;
const logs = new LogStore(root);
let driver: DockerDriver;

// Each request burns some CPU; the process holds 16 MB.
const SERVER = `
const keep = Buffer.alloc(16 * 1024 * 1024, 1);
require('node:http').createServer((req, res) => { let x = 0; for (let i = 0; i < 5e6; i++) x += i % 7; res.end(String(x + keep[0]) + 'x'.repeat(4096)); }).listen(Number(process.env.PORT), process.env.HOST);
process.on('SIGTERM', () => process.exit(0));
`;

before(async () => {
  if (noEngine) return;
  const script = spawnSync('bash', [path.resolve('scripts/docker-base-images.sh')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(script.status, 0, script.stderr);
  const ctxDir = path.join(root, 'image');
  spawnSync('mkdir', ['-p', ctxDir]);
  writeFileSync(path.join(ctxDir, 'server.js'), SERVER);
  writeFileSync(path.join(ctxDir, 'Dockerfile'), `FROM ${BASE_IMAGE}\nCOPY . /app\nWORKDIR /app\nCMD ["node", "/app/server.js"]\n`);
  const built = spawnSync(DOCKER, ['build', '-q', '-t', IMAGE, ctxDir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(built.status, 0, built.stderr);
  driver = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_NODE: BASE_IMAGE } });
  await driver.reclaim();
});

after(async () => {
  if (!noEngine) {
    const list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key }) });
    for (const c of list) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    await engine.api.getNetwork(`berth-${key}-${projectId}`).remove().catch(() => {});
    await engine.api.getImage(IMAGE).remove({ force: true }).catch(() => {});
  }
  logs.closeAll();
  rmSync(root, { recursive: true, force: true });
});

function get(inst: Instance): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: inst.upstream.host, port: inst.upstream.port, path: '/', timeout: 10_000 }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

test("an app container's box reads CPU, memory and network from the Engine's stats, and CPU grows with work", withEngine, async () => {
  const deps: InstanceDeps = {
    logs,
    driver,
    baseEnv: { PATH: '/usr/bin', LANG: 'C.UTF-8' },
    healthTimeoutMs: 30_000,
    graceMs: 2000,
    boxName: (p) => `app-${p}-1`,
  };
  const inst = await driver.apps.start(
    {
      projectId,
      orgId: 'org_test',
      deploymentId: `dpl_${projectId}_1`,
      appRoot: path.join(root, 'release'),
      cwd: path.join(root, 'release'),
      steps: (env) => parseCommand('node /app/server.js', env),
      env: {},
      secrets: [],
      dataDir: path.join(root, 'volumes', projectId, 'data'),
      limits: { cpuCores: 1, memoryMb: 256, pidsMax: 64 },
      identity: null,
      port: 3000,
      path: () => '/host/path/never/used',
      image: IMAGE,
    },
    deps,
  );
  try {
    assert.ok(inst.box.usage, 'the docker box has a usage reader');
    const first = (await inst.box.usage()) as UsageCounters;
    assert.ok(first, 'a reading');
    for (let i = 0; i < 5; i++) await get(inst);
    const second = (await inst.box.usage()) as UsageCounters;
    assert.ok(second.cpuUsec! > first.cpuUsec!, `CPU grew: ${first.cpuUsec} -> ${second.cpuUsec}`);
    assert.ok(second.memoryBytes! > 16 * 1024 * 1024, `memory held: ${second.memoryBytes}`);
    assert.ok(second.netTxBytes! - (first.netTxBytes ?? 0) >= 5 * 4096, `bytes sent: ${first.netTxBytes} -> ${second.netTxBytes}`);
    assert.ok(second.netRxBytes! > (first.netRxBytes ?? 0), 'bytes received grew');
  } finally {
    await stopInstance(inst, 2000);
  }
  assert.equal(await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key, 'berth.project': projectId }) }).then((l) => l.length), 0);
});
