import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerUsage, sumUsage } from '../../src/runtime/docker/container-stats.js';
import type { UsageCounters } from '../../src/runtime/usage.js';
import { IMAGES, get, useSwarm } from '../support/swarm.js';

// Metrics of apps run as Swarm services (contract section 20, issue 38 point 1): the box of a
// Swarm-run release reads, for the metrics sampler, the sum of its task containers' Engine stats on
// this node; on a real single-node swarm (test/support/swarm.ts).
const swarm = await useSwarm('test/runtime/docker-swarm-metrics');
const { engine, key, withSwarm } = swarm;

test('readings add up field by field; a field no reading has stays null; no reading is nothing', () => {
  const a: UsageCounters = { cpuUsec: 10, memoryBytes: 100, diskReadBytes: null, diskWriteBytes: 4, netRxBytes: 1, netTxBytes: null };
  const b: UsageCounters = { cpuUsec: 5, memoryBytes: 50, diskReadBytes: null, diskWriteBytes: null, netRxBytes: 2, netTxBytes: null };
  assert.deepEqual(sumUsage([a, b]), { cpuUsec: 15, memoryBytes: 150, diskReadBytes: null, diskWriteBytes: 4, netRxBytes: 3, netTxBytes: null });
  assert.equal(sumUsage([]), null);
});

test("a Swarm-run app's usage is the sum of its two tasks' containers, and grows with the requests they serve", withSwarm, async () => {
  const projectId = swarm.project();
  const inst = await swarm.start(swarm.spec(projectId, IMAGES.one, 'dpl_one'));
  assert.ok(inst.box.usage, 'the service box has a usage reader');
  const first = (await inst.box.usage()) as UsageCounters;
  assert.ok(first, 'a reading while the tasks run');

  const tasks = await engine.api.listContainers({ filters: { label: [`berth.instance=${key}`, `com.docker.swarm.service.name=berth-${key}-${projectId}`] } });
  assert.equal(tasks.length, 2, 'two replicas run on this node');
  // The balancer spreads the requests over both tasks.
  const hosts = new Set<string>();
  for (let i = 0; i < 10; i++) hosts.add((await get(inst.upstream)).split(' ')[1]!);
  assert.equal(hosts.size, 2);
  const each = (await Promise.all(tasks.map((t) => containerUsage(engine.api.getContainer(t.Id))))) as UsageCounters[];
  const second = (await inst.box.usage()) as UsageCounters;

  // Counters only grow: read after each task's own, the sum holds at least both.
  assert.ok(second.cpuUsec! >= each[0]!.cpuUsec! + each[1]!.cpuUsec!, `CPU ${second.cpuUsec} >= ${each[0]!.cpuUsec} + ${each[1]!.cpuUsec}`);
  assert.ok(second.netTxBytes! >= each[0]!.netTxBytes! + each[1]!.netTxBytes!, `sent ${second.netTxBytes} >= both tasks'`);
  // Memory is held now, not counted: both similar idle servers, so the sum is well over the larger one alone.
  const mems = each.map((u) => u.memoryBytes!);
  assert.ok(second.memoryBytes! > Math.max(...mems) + Math.min(...mems) / 2, `memory ${second.memoryBytes} is both tasks' (${mems.join(', ')})`);
  assert.ok(second.cpuUsec! > first.cpuUsec!, `CPU grew: ${first.cpuUsec} -> ${second.cpuUsec}`);
  assert.ok(second.netTxBytes! > first.netTxBytes!, `bytes sent grew: ${first.netTxBytes} -> ${second.netTxBytes}`);
});
