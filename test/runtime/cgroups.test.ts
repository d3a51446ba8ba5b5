import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createCgroup, detectCgroups } from '../../src/runtime/cgroups.js';
import { tempDir } from '../support/harness.js';

test('no cgroup hierarchy, or BERTH_CGROUPS=off: limits are reported as not enforced, with the reason', () => {
  const root = tempDir('berth-cg-');
  try {
    assert.deepEqual(detectCgroups(root, {}), { version: null, enforced: false, reason: 'no cgroup hierarchy found' });
    const off = detectCgroups('/sys/fs/cgroup', { BERTH_CGROUPS: 'off' });
    assert.equal(off.enforced, false);
    assert.match(off.reason!, /BERTH_CGROUPS=off/);
    assert.equal(createCgroup(off, 'x', { cpuCores: 1, memoryMb: 64 }, root), null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('cgroup v2: a group gets memory.max, cpu.max, and the process id', () => {
  const root = tempDir('berth-cg2-');
  try {
    writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    const s = detectCgroups(root, {});
    assert.deepEqual(s, { version: 2, enforced: true });
    const g = createCgroup(s, 'prj_a-123', { cpuCores: 1.5, memoryMb: 256 }, root)!;
    const dir = path.join(root, 'berth', 'prj_a-123');
    assert.equal(readFileSync(path.join(dir, 'memory.max'), 'utf8'), String(256 * 1024 * 1024));
    assert.equal(readFileSync(path.join(dir, 'cpu.max'), 'utf8'), '150000 100000');
    g.addPid(4242);
    assert.equal(readFileSync(path.join(dir, 'cgroup.procs'), 'utf8'), '4242');
    const noMem = tempDir('berth-cg2b-');
    writeFileSync(path.join(noMem, 'cgroup.controllers'), 'cpu pids\n');
    assert.equal(detectCgroups(noMem, {}).enforced, false);
    rmSync(noMem, { recursive: true, force: true });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('cgroup v1: memory and cpu hierarchies get the limits', () => {
  const root = tempDir('berth-cg1-');
  try {
    mkdirSync(path.join(root, 'memory'));
    writeFileSync(path.join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712');
    mkdirSync(path.join(root, 'cpu'));
    writeFileSync(path.join(root, 'cpu', 'cpu.cfs_quota_us'), '-1');
    const s = detectCgroups(root, {});
    assert.deepEqual(s, { version: 1, enforced: true });
    createCgroup(s, 'build-d-1', { cpuCores: 2, memoryMb: 2048 }, root);
    assert.equal(readFileSync(path.join(root, 'memory', 'berth', 'build-d-1', 'memory.limit_in_bytes'), 'utf8'), String(2048 * 1024 * 1024));
    assert.equal(readFileSync(path.join(root, 'cpu', 'berth', 'build-d-1', 'cpu.cfs_quota_us'), 'utf8'), '200000');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('on this machine, when cgroups are writable, a process really lands in its limited group', { skip: !detectCgroups().enforced && 'cgroups are not writable here' }, async () => {
  const s = detectCgroups();
  const child = spawn('sleep', ['5'], { stdio: 'ignore' });
  const g = createCgroup(s, `test-${process.pid}`, { cpuCores: 0.5, memoryMb: 128 })!;
  try {
    assert.ok(g);
    g.addPid(child.pid!);
    const membership = readFileSync(`/proc/${child.pid}/cgroup`, 'utf8');
    assert.match(membership, new RegExp(`berth/test-${process.pid}`));
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await new Promise((r) => setTimeout(r, 100));
    g?.remove();
  }
});
