import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { RuntimeName } from '../config.js';
import { detectCgroups } from './cgroups.js';
import { DockerDriver, type DockerDriverOptions } from './docker/docker-driver.js';
import type { ImageBuilder, RuntimeDriver } from './driver.js';
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

/** Plugs what the docker driver builds images with (DockerImageBuilder) and runs apps with (the Swarm runner). */
export interface DriverParts {
  images?: ImageBuilder;
  apps?: DockerDriverOptions['apps'];
}

export function createDriver(name: RuntimeName, dataDir: string, parts: DriverParts = {}): RuntimeDriver {
  const key = instanceKeyOf(dataDir);
  if (name === 'docker') return new DockerDriver({ key, dataDir, images: parts.images, apps: parts.apps });
  const cgroups = detectCgroups();
  const bins = findSandboxBins();
  if (name === 'process') return new ProcessDriver(cgroups, key, bins.cgexec);
  return new SandboxDriver(bins, cgroups, key, dataDir);
}
