import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createCgroup, detectCgroups, reclaimCgroups, removeInstanceCgroups } from '../../src/runtime/cgroups.js';
import { findProgram } from '../../src/runtime/sandbox-driver.js';
import { tempDir } from '../support/harness.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('no cgroup hierarchy, or BERTH_CGROUPS=off: limits are reported as not enforced, with the reason', () => {
  const root = tempDir('berth-cg-');
  try {
    assert.deepEqual(detectCgroups(root, {}), { version: null, enforced: false, reason: 'no cgroup hierarchy found', root });
    const off = detectCgroups('/sys/fs/cgroup', { BERTH_CGROUPS: 'off' });
    assert.equal(off.enforced, false);
    assert.match(off.reason!, /BERTH_CGROUPS=off/);
    assert.equal(createCgroup(off, 'k', 'x', { cpuCores: 1, memoryMb: 64 }), null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('cgroup v2: a group under berth/<instance>/ gets memory.max, cpu.max, pids.max and a cgexec spec', () => {
  const root = tempDir('berth-cg2-');
  try {
    writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    const s = detectCgroups(root, {});
    assert.deepEqual(s, { version: 2, enforced: true, root });
    const g = createCgroup(s, 'inst1', 'prj_a-123', { cpuCores: 1.5, memoryMb: 256, pidsMax: 64 })!;
    const dir = path.join(root, 'berth', 'inst1', 'prj_a-123');
    assert.equal(readFileSync(path.join(dir, 'memory.max'), 'utf8'), String(256 * 1024 * 1024));
    assert.equal(readFileSync(path.join(dir, 'cpu.max'), 'utf8'), '150000 100000');
    assert.equal(readFileSync(path.join(dir, 'pids.max'), 'utf8'), '64');
    assert.equal(g.cgexecSpec, 'memory,pids,cpu:berth/inst1/prj_a-123');
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

test('cgroup v1: memory, pids and cpu hierarchies get the limits (default pidsMax 512)', () => {
  const root = tempDir('berth-cg1-');
  try {
    for (const c of ['memory', 'cpu', 'pids']) {
      mkdirSync(path.join(root, c));
      writeFileSync(path.join(root, c, 'cgroup.procs'), '');
    }
    writeFileSync(path.join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712');
    const s = detectCgroups(root, {});
    assert.deepEqual(s, { version: 1, enforced: true, root });
    const g = createCgroup(s, 'inst1', 'build-d-1', { cpuCores: 2, memoryMb: 2048 })!;
    assert.equal(readFileSync(path.join(root, 'memory', 'berth', 'inst1', 'build-d-1', 'memory.limit_in_bytes'), 'utf8'), String(2048 * 1024 * 1024));
    assert.equal(readFileSync(path.join(root, 'cpu', 'berth', 'inst1', 'build-d-1', 'cpu.cfs_quota_us'), 'utf8'), '200000');
    assert.equal(readFileSync(path.join(root, 'pids', 'berth', 'inst1', 'build-d-1', 'pids.max'), 'utf8'), '512');
    assert.equal(g.cgexecSpec, 'memory,pids,cpu:berth/inst1/build-d-1');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

const real = detectCgroups();

test('on this machine: a process tree in a group is killed whole, children and detached ones included', { skip: (!real.enforced || !findProgram('cgexec')) && 'cgroups are not writable here, or cgexec is missing' }, async () => {
  const key = `t${process.pid}`;
  const g = createCgroup(real, key, 'tree', { cpuCores: 0.5, memoryMb: 128 })!;
  assert.ok(g);
  // A parent that starts a detached grandchild, then waits; cgexec starts it inside the group.
  const child = spawn('cgexec', ['-g', g.cgexecSpec, 'sh', '-c', 'setsid sleep 300 & sleep 300'], { stdio: 'ignore', detached: true });
  try {
    // The grandchild is forked after the move, so it is in the group too.
    let pids: number[] = [];
    for (let i = 0; i < 100 && pids.length < 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      pids = g.pids();
    }
    assert.ok(pids.length >= 2, `the tree is in the group: ${pids}`);
    assert.match(readFileSync(`/proc/${child.pid}/cgroup`, 'utf8'), new RegExp(`berth/${key}/tree`));
    await g.remove();
    for (let i = 0; i < 100 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(pids.filter(alive), [], 'nothing of the tree survives');
  } finally {
    child.kill('SIGKILL');
    await g.remove();
  }
});

test('on this machine: reclaim kills what a previous run of the same instance left in its groups', { skip: !real.enforced && 'cgroups are not writable here' }, async () => {
  const key = `r${process.pid}`;
  const g = createCgroup(real, key, 'left-behind', { cpuCores: 0.5, memoryMb: 128 })!;
  const child = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
  g.addPid(child.pid!);
  child.unref();
  const other = createCgroup(real, `${key}x`, 'not-mine', { cpuCores: 0.5, memoryMb: 128 })!;
  const keep = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
  other.addPid(keep.pid!);
  try {
    assert.equal(await reclaimCgroups(real, key), 1);
    for (let i = 0; i < 100 && alive(child.pid!); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(alive(child.pid!), false);
    assert.equal(alive(keep.pid!), true, "another instance's group is not touched");
  } finally {
    keep.kill('SIGKILL');
    await other.remove();
    await reclaimCgroups(real, key);
  }
});

test('on this machine: at shutdown the instance\'s empty cgroup folders go, and one still in use stays', { skip: !real.enforced && 'cgroups are not writable here' }, async () => {
  const key = `s${process.pid}`;
  const base = (c: string) => (real.version === 2 ? path.join(real.root, 'berth', key) : path.join(real.root, c, 'berth', key));
  const g = createCgroup(real, key, 'in-use', { cpuCores: 0.5, memoryMb: 128 })!;
  removeInstanceCgroups(real, key);
  assert.equal(existsSync(base('memory')), true, 'a folder with a group in it stays');
  await g.remove();
  removeInstanceCgroups(real, key);
  for (const c of real.version === 2 ? [''] : ['memory', 'cpu', 'pids']) assert.equal(existsSync(base(c)), false, `berth/${key} in ${c || 'the v2 tree'} is gone`);
});
