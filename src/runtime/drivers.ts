import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { RuntimeName } from '../config.js';
import { detectCgroups } from './cgroups.js';
import type { Box, DriverStatus, RuntimeDriver } from './driver.js';
import { DriverUnavailableError } from './driver.js';
import { ProcessDriver } from './process-driver.js';
import { SandboxDriver, findSandboxBins } from './sandbox-driver.js';

/**
 * A short key for this Berth's data dir: the name under which its cgroups live (`berth/<key>/`), so
 * that several servers on one machine never touch each other's boxes and a restart finds its own.
 */
export function instanceKeyOf(dataDir: string): string {
  let real = dataDir;
  try {
    real = realpathSync(dataDir);
  } catch {
    /* not made yet */
  }
  return createHash('sha256').update(real).digest('hex').slice(0, 12);
}

/** Stands in for the Docker Engine driver until it lands (contract section 13): never ready. */
class DockerPending implements RuntimeDriver {
  readonly name = 'docker' as const;
  readonly isolation = 'docker' as const;
  readonly limits = { enforced: false, note: 'the docker runtime is not available in this version' };
  status(): DriverStatus {
    return { driver: 'docker', ready: false, reason: 'the docker runtime is not available in this version of Berth: set BERTH_RUNTIME=sandbox' };
  }
  async reclaim(): Promise<void> {}
  async open(): Promise<Box> {
    throw new DriverUnavailableError(this.status().reason!);
  }
}

export function createDriver(name: RuntimeName, dataDir: string): RuntimeDriver {
  const key = instanceKeyOf(dataDir);
  if (name === 'docker') return new DockerPending();
  const cgroups = detectCgroups();
  const bins = findSandboxBins();
  if (name === 'process') return new ProcessDriver(cgroups, key, bins.cgexec);
  return new SandboxDriver(bins, cgroups, key, dataDir);
}
