import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affinityOf, expandCpuList, pinPlan, vcpuSpeeds } from '../../bench/pin.js';

describe('bench pinned rounds', () => {
  it('puts the servers on the first CPU this process may use and the load generator on the rest', () => {
    assert.deepEqual(pinPlan([1, 0], {}), { servers: '0', client: '1' });
    assert.deepEqual(pinPlan([2, 3, 5, 4], {}), { servers: '2', client: '3,4,5' });
  });

  it('puts the servers on the CPU BENCH_PIN_CPU names when this process may use it', () => {
    assert.deepEqual(pinPlan([0, 1], { BENCH_PIN_CPU: '1' }), { servers: '1', client: '0' });
    assert.deepEqual(pinPlan([0, 1, 2], { BENCH_PIN_CPU: '1' }), { servers: '1', client: '0,2' });
    assert.deepEqual(pinPlan([0, 1], { BENCH_PIN_CPU: '7' }), { servers: '0', client: '1' });
  });

  it('runs unpinned on one CPU or with BENCH_PIN=0', () => {
    assert.equal(pinPlan([0], {}), null);
    assert.equal(pinPlan([0, 1], { BENCH_PIN: '0' }), null);
  });

  it('reads the CPU lists taskset prints, ranges and single CPUs alike', () => {
    assert.deepEqual(expandCpuList('0,1'), [0, 1]);
    assert.deepEqual(expandCpuList('0-3'), [0, 1, 2, 3]);
    assert.deepEqual(expandCpuList('0-1,4,6-7'), [0, 1, 4, 6, 7]);
  });

  it("gives each CPU's speed against the fastest, and this process its CPUs back", () => {
    const before = affinityOf(process.pid);
    const speeds = vcpuSpeeds(20);
    assert.equal(affinityOf(process.pid), before);
    if (!speeds) return; // one CPU, or no taskset
    assert.deepEqual([...speeds.keys()], expandCpuList(before!));
    assert.equal(Math.max(...speeds.values()), 1);
    for (const r of speeds.values()) assert.ok(r > 0 && r <= 1);
  });
});
