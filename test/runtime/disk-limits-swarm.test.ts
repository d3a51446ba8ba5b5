import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDiskLimits } from '../../src/runtime/disk-limits.js';

const quiet = { warn() {} };

test('under Docker Swarm no image is made: diskMb is reported not enforced, naming the shared storage and its quotas', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-disk-swarm-'));
  try {
    const state = await startDiskLimits(dir, 'auto', quiet, { swarm: true });
    assert.equal(state.enforced, false);
    assert.match(state.reason ?? '', /Docker Swarm/);
    assert.match(state.reason ?? '', /quotas/);
    // No probe image was made in the data dir.
    assert.equal(existsSync(path.join(dir, 'tmp')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('BERTH_DISK_LIMITS=images under Docker Swarm fails the start, saying why', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-disk-swarm-'));
  try {
    await assert.rejects(startDiskLimits(dir, 'images', quiet, { swarm: true }), /BERTH_DISK_LIMITS=images cannot hold under Docker Swarm/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
