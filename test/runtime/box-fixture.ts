import assert from 'node:assert/strict';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createDriver } from '../../src/runtime/drivers.js';
import type { Box, BoxSpec, RuntimeDriver } from '../../src/runtime/driver.js';
import { tempDir } from '../support/harness.js';

export interface SandboxBoxFixture {
  root: string;
  driver: RuntimeDriver;
  box: Box;
  /** The box's `/app` on the host (owned by the box's uid), the working folder to give `exec`. */
  appDir: string;
  /** Disposes of the box, closes the driver and removes the folders. */
  close(): Promise<void>;
}

/**
 * A sandbox driver on a fresh data dir, as a root server runs it, and one box in it whose `/app` and
 * HOME are new folders owned by `uid` (the project's). For suites that probe a real box (needs root
 * and bubblewrap; the caller skips otherwise).
 */
export async function openSandboxBox(prefix: string, uid: number, spec: Omit<BoxSpec, 'identity' | 'appDir' | 'homeDir'>): Promise<SandboxBoxFixture> {
  const root = tempDir(prefix);
  const appDir = path.join(root, 'app');
  const home = path.join(root, 'home');
  for (const d of [appDir, home]) {
    mkdirSync(d, { recursive: true });
    chownSync(d, uid, uid);
  }
  const driver = createDriver('sandbox', path.join(root, 'data'));
  assert.deepEqual(driver.status(), { driver: 'sandbox', ready: true });
  await driver.reclaim();
  const box = await driver.open({ ...spec, identity: { uid, gid: uid }, appDir, homeDir: home });
  return {
    root,
    driver,
    box,
    appDir,
    async close() {
      await box.dispose();
      await driver.close?.();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
