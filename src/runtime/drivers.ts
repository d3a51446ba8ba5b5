import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { RuntimeName } from '../config.js';
import { detectCgroups } from './cgroups.js';
import { EngineProbe } from './docker/probe.js';
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

/**
 * Stands in for the Docker Engine driver until boxes in containers land (contract section 13): never
 * ready, but its status says whether the engine answers (cached probe, see EngineProbe).
 */
class DockerPending implements RuntimeDriver {
  readonly name = 'docker' as const;
  readonly isolation = 'docker' as const;
  readonly limits = { enforced: false, note: 'the docker runtime cannot run builds and apps in this version' };
  private readonly probe = new EngineProbe();
  constructor() {
    void this.probe.refresh();
  }
  status(): DriverStatus {
    const engine = this.probe.status();
    return {
      driver: 'docker',
      ready: false,
      reason: 'the docker runtime cannot run builds and apps in this version of Berth yet (only its Docker Engine client is in): set BERTH_RUNTIME=sandbox',
      engine,
    };
  }
  /** Waits for the first engine probe (bounded), so the first health answer after start has it. */
  async reclaim(): Promise<void> {
    await this.probe.refresh();
  }
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
