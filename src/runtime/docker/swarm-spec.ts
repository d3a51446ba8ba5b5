import path from 'node:path';
import type Docker from 'dockerode';
import { DEFAULT_PIDS_MAX } from '../cgroups.js';
import type { CommandStep } from '../command.js';
import type { Identity } from '../driver.js';
import type { ReleaseSpec } from '../release-spec.js';
import { toolchainEnv } from '../toolchains.js';
import { labelsOf, networkName } from './containers.js';

/**
 * The Swarm service a release runs as (contract section 13, BERTH_DOCKER_SWARM=1): names, labels,
 * the task's environment, user, mounts and limits, and the update policy. Pure functions; swarm.ts
 * talks to the engine.
 */

const MIB = 1024 * 1024;
const SECOND_NS = 1_000_000_000;
/** After each task of a rolling update, how long the engine watches it before it counts as updated. */
export const UPDATE_MONITOR_NS = 5 * SECOND_NS;

/** `berth-<key>-<projectId>`: the project's service. */
/** The service of a project: the same name as its container network (`networkName`). */
export const swarmName = networkName;

/** The labels on everything Berth creates (the container driver's). */
export const swarmLabels = labelsOf;

/** The labels of a release's service or job: the project's, and `berth.app` for a preview environment's app. */
export function appLabels(key: string, spec: Pick<ReleaseSpec, 'projectId' | 'app' | 'deploymentId'>, kind: 'app' | 'step'): Record<string, string> {
  const labels = swarmLabels(key, spec.projectId, kind, spec.deploymentId);
  return spec.app ? { ...labels, 'berth.app': spec.app } : labels;
}

/**
 * `berth-<key>-<projectId>-swarm`: the project's overlay network. Not the bridge's name: builds still run
 * as containers on the manager, on the project's bridge `berth-<key>-<projectId>`, and the engine refuses
 * an overlay of the same name ("already exists") while a service cannot join a bridge ("no such network").
 */
export function overlayName(instanceKey: string, projectId: string): string {
  return `${swarmName(instanceKey, projectId)}-swarm`;
}

/** `image:tag` without the `@sha256:...` the engine may pin a service's image to. */
export function imageName(ref: string | undefined): string {
  return (ref ?? '').replace(/@sha256:[0-9a-f]+$/, '');
}

/**
 * The user a task runs as: the image's own `USER` when it sets one (a Dockerfile's; plan images set the
 * project's uid:gid themselves), else the project's identity, else 1000:1000: never root unless the
 * image says so.
 */
export function taskUser(imageUser: string | undefined, identity: Identity | null): string {
  if (imageUser && imageUser.trim()) return imageUser.trim();
  return identity ? `${identity.uid}:${identity.gid}` : '1000:1000';
}

/** PATH entries of `first`, then those of `then` not already there (no empty entries: no current directory). */
export function joinPath(first: string, then: string | undefined): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const d of `${first}:${then ?? ''}`.split(':')) {
    if (!d || seen.has(d)) continue;
    seen.add(d);
    out.push(d);
  }
  return out.join(':');
}

export interface TaskPlan {
  env: Record<string, string>;
  /** The process the task runs (the start command's last step); none: the image's own ENTRYPOINT/CMD. */
  command?: string[];
  /** The working directory inside the image (plan images: `/app` and the app's folder below it). */
  dir?: string;
  /** Steps before the last one (migrations, ...), with their environment. */
  before: CommandStep[];
}

/**
 * The task's environment and command, as the container driver gives an app: LANG/TZ of the base
 * environment, PATH (the app's bin folders, then the image's PATH), HOME=/tmp, HOST=0.0.0.0,
 * NODE_ENV=production, the project's variables, then PORT, DATA_DIR=/data and the Berth ids. A release
 * with a start command runs its last step; a Dockerfile image without one runs its own CMD.
 */
export function taskPlan(spec: ReleaseSpec, baseEnv: Record<string, string>, imagePath: string | undefined): TaskPlan {
  const plan = !spec.imageCommand;
  const rel = path.relative(spec.appRoot, spec.cwd).split(path.sep).filter(Boolean).join('/');
  const dir = path.posix.join('/app', rel);
  const env: Record<string, string> = {
    ...(baseEnv.LANG ? { LANG: baseEnv.LANG } : {}),
    ...(baseEnv.TZ ? { TZ: baseEnv.TZ } : {}),
    ...(plan ? toolchainEnv('/app') : {}),
    ...(plan ? { PATH: joinPath(spec.path(dir, '/app'), imagePath ?? '/usr/local/bin:/usr/bin:/bin') } : {}),
    HOME: '/tmp',
    HOST: '0.0.0.0',
    NODE_ENV: 'production',
    ...spec.env,
    PORT: String(spec.port),
    DATA_DIR: '/data',
    BERTH_PROJECT_ID: spec.projectId,
    BERTH_DEPLOYMENT_ID: spec.deploymentId,
  };
  if (!plan) return { env, before: [] };
  const steps = spec.steps(env);
  if (!steps.length) throw new Error('the release has no start command');
  const last = steps[steps.length - 1]!;
  return { env: { ...env, ...last.env }, command: last.argv, dir, before: steps.slice(0, -1) };
}

export interface ContainerInput {
  image: string;
  user: string;
  env: Record<string, string>;
  command?: string[];
  dir?: string;
  dataDir: string;
  labels: Record<string, string>;
  graceMs: number;
}

/**
 * The task's container: the hardening the 1.41 service API offers (all capabilities dropped, no
 * privileged mode or devices exist for services, an init process), the project's volume at `/data`
 * and a private 256 MiB `/tmp` (the engine mounts service tmpfs nosuid,nodev,noexec).
 */
export function containerSpec(c: ContainerInput): Docker.ContainerSpec {
  return {
    Image: c.image,
    Labels: c.labels,
    ...(c.command ? { Command: c.command, Args: [] } : {}),
    ...(c.dir ? { Dir: c.dir } : {}),
    Env: Object.entries(c.env).map(([k, v]) => `${k}=${v}`),
    User: c.user,
    Init: true,
    ReadOnly: false,
    CapabilityDrop: ['ALL'],
    StopGracePeriod: Math.max(1, c.graceMs) * 1_000_000,
    Mounts: [
      { Type: 'bind', Source: c.dataDir, Target: '/data', ReadOnly: false },
      { Type: 'tmpfs', Target: '/tmp', TmpfsOptions: { SizeBytes: 256 * MIB, Mode: 0o1777 } } as Docker.MountSettings,
    ],
  };
}

/** Memory, CPUs and processes of each task (the project's limits). */
export function taskResources(limits: ReleaseSpec['limits']): Docker.ResourceRequirements {
  return {
    Limits: {
      MemoryBytes: Math.round(limits.memoryMb * MIB),
      NanoCPUs: Math.round(limits.cpuCores * SECOND_NS),
      Pids: limits.pidsMax ?? DEFAULT_PIDS_MAX,
    },
  };
}

export interface ServiceInput {
  name: string;
  labels: Record<string, string>;
  container: Docker.ContainerSpec;
  resources: Docker.ResourceRequirements;
  network: string;
  replicas: number;
  port: number;
  /** The placement of the service as it is (an operator's constraints survive Berth's updates). */
  placement?: Docker.Placement;
}

/**
 * The app's service: replicated, restarted by the engine on failure, rolled start-first one task at a
 * time and rolled back when a new task fails within the monitor window. The port is published in
 * host mode on an ephemeral port of each task's node (no routing mesh: it needs IPVS), reached through
 * Berth's balancer; endpoint mode dnsrr (no virtual IP, which needs IPVS as well).
 */
export function serviceSpec(s: ServiceInput): Docker.ServiceSpec {
  return {
    Name: s.name,
    Labels: s.labels,
    TaskTemplate: taskTemplate(s, { Condition: 'on-failure', Delay: 2 * SECOND_NS, MaxAttempts: 0 }),
    Mode: { Replicated: { Replicas: s.replicas } },
    UpdateConfig: { Parallelism: 1, Delay: 0, Order: 'start-first', FailureAction: 'rollback', Monitor: UPDATE_MONITOR_NS, MaxFailureRatio: 0 },
    RollbackConfig: { Parallelism: 1, Delay: 0, Order: 'start-first', FailureAction: 'pause', Monitor: UPDATE_MONITOR_NS, MaxFailureRatio: 0 },
    EndpointSpec: { Mode: 'dnsrr', Ports: [{ Protocol: 'tcp', TargetPort: s.port, PublishMode: 'host' }] },
  };
}

/** The tasks of a service or job: the app's container, limits and network, its placement kept. */
function taskTemplate(s: Pick<ServiceInput, 'container' | 'resources' | 'network' | 'placement'>, restart: Docker.TaskSpec['RestartPolicy']): Docker.TaskSpec {
  return { ContainerSpec: s.container, Resources: s.resources, RestartPolicy: restart, Networks: [{ Target: s.network }], ...(s.placement ? { Placement: s.placement } : {}) };
}

/** A one-off job (a start step before the last, e.g. migrations) with the app's container and network. */
export function jobSpec(s: Omit<ServiceInput, 'replicas' | 'port'>): Docker.ServiceSpec {
  return {
    Name: s.name,
    Labels: s.labels,
    TaskTemplate: taskTemplate(s, { Condition: 'none' }),
    Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
  };
}
