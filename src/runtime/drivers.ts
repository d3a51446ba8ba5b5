import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { DockerConfig, RuntimeName } from '../config.js';
import { detectCgroups } from './cgroups.js';
import { DockerDriver, type DockerDriverOptions } from './docker/docker-driver.js';
import { DockerEngine } from './docker/engine.js';
import { DockerImageBuilder } from './docker/image-build.js';
import { SwarmApps } from './docker/swarm.js';
import type { ImageBuilder, RuntimeDriver } from './driver.js';
import { ProcessDriver } from './process-driver.js';
import { SandboxDriver, findSandboxBins } from './sandbox-driver.js';
import type { UidRange } from './uid-range.js';

/**
 * A short key for this Berth's data dir: the name under which its cgroups live (`berth/<key>/`), so
 * that several servers on one machine never touch each other's boxes and a restart finds its own.
 * Instances sharing one data dir (PostgreSQL, BERTH_INSTANCE_NAME) each have their own: the dir's
 * key with the instance's name.
 */
export function instanceKeyOf(dataDir: string, instanceName: string | null = null): string {
  let real = dataDir;
  try {
    real = realpathSync(dataDir);
  } catch {
    /* not made yet */
  }
  return createHash('sha256').update(instanceName ? `${real}\n${instanceName}` : real).digest('hex').slice(0, 12);
}

/** Plugs what the docker driver builds images with (DockerImageBuilder) and runs apps with (the Swarm runner). */
export interface DriverParts {
  images?: ImageBuilder;
  apps?: DockerDriverOptions['apps'];
}

/**
 * The driver of BERTH_RUNTIME. The docker driver builds images with the docker CLI's BuildKit
 * (DockerImageBuilder) and runs apps as containers, or as Swarm services with BERTH_DOCKER_SWARM=1.
 * `uidRange` is the server's claimed sandbox uid range (`ctx.uidRange`): the sandbox opens no box
 * under a uid past it.
 */
export function createDriver(name: RuntimeName, dataDir: string, parts: DriverParts = {}, docker: DockerConfig = { swarm: false, registry: null, baseImages: {} }, instanceName: string | null = null, uidRange: UidRange | null = null): RuntimeDriver {
  const key = instanceKeyOf(dataDir, instanceName);
  if (name === 'docker') {
    let images = parts.images;
    if (!images) {
      try {
        images = new DockerImageBuilder({ env: { ...process.env, ...docker.baseImages }, engine: DockerEngine.fromEnv(), instanceKey: key });
      } catch {
        /* a DOCKER_HOST the engine client refuses: the driver's status says why */
      }
    }
    const apps = parts.apps ?? (docker.swarm ? (ctx: { engine: DockerEngine; key: string }) => new SwarmApps({ engine: ctx.engine, instanceKey: ctx.key, registry: docker.registry ?? undefined }) : undefined);
    return new DockerDriver({ key, dataDir, images, apps });
  }
  const cgroups = detectCgroups();
  const bins = findSandboxBins();
  if (name === 'process') return new ProcessDriver(cgroups, key, bins.cgexec);
  return new SandboxDriver(bins, cgroups, key, dataDir, uidRange);
}
