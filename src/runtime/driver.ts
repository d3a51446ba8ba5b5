import type { Readable } from 'node:stream';
import type { Limits } from './cgroups.js';
import type { Instance, InstanceDeps } from './app-instance.js';
import type { ReleaseSpec } from './release-spec.js';
import type { UsageCounters } from './usage.js';

/**
 * The runtime driver interface: how a build step or an app runs. The supervisor (apps) and the build
 * pipeline (build steps) speak only to this; the drivers are `sandbox` (bubblewrap, default),
 * `process` (no isolation, explicit only) and, later, `docker`.
 *
 * The unit is a *box*: one build or one app instance, with its limits (a cgroup), its network, its
 * identity and its file view. Processes are started in a box one after the other (install then build;
 * migrations then the server) and the box is disposed of as a whole: every process in it dies, nothing
 * outlives it.
 */

export type DriverName = 'sandbox' | 'process' | 'docker';
export type Isolation = 'sandbox' | 'docker' | 'none';

export interface DriverStatus {
  driver: DriverName;
  /** The driver can run builds and apps now. */
  ready: boolean;
  /** Why it cannot, naming the fix. */
  reason?: string;
  /** The docker driver only: whether the Docker Engine answers, and its version. */
  engine?: EngineStatus;
  /** Whether boxes reach the internet (a periodic check from inside a box; contract 18). */
  egress?: { ok: boolean; checkedAt: string; error?: string };
}

export interface EngineStatus {
  reachable: boolean;
  version?: string;
  apiVersion?: string;
  /** What is wrong when it does not answer, naming the fix. */
  error?: string;
  /** Just after start, no answer yet from an engine that may be busy (only a timeout so far): not called unreachable. */
  starting?: boolean;
}

/** The uid/gid a project's builds and apps run as (allocated per project, never 0, never the server's). */
export interface Identity {
  uid: number;
  gid: number;
}

export interface BoxSpec {
  kind: 'build' | 'app';
  projectId: string;
  /** Unique per box of this server: the cgroup's and the box's name. */
  name: string;
  identity: Identity | null;
  limits: Limits;
  /** Host folder shown at `/app` (writable for builds, read-only for apps). */
  appDir: string;
  /** Host folder shown at `/data` (apps only): the project's volume. */
  dataDir?: string;
  /** Host folder that is `HOME` (builds). */
  homeDir?: string;
  /** Host folder of the project's build cache (builds only; build-cache.ts), shown read-write at `/cache`. */
  cacheDir?: string;
  /** The port the app listens on (apps only); the only port reachable from outside the box. */
  port?: number;
  /** A managed service's box (kind `app`): its port is reached by the same project's app and build boxes only, never the host nor the edge (sandbox runtime). */
  service?: boolean;
  /** A managed service's address of before (`Box.host`): the sandbox gives it again when no other box holds it, so apps' URLs stay valid. */
  address?: string;
  /**
   * A managed service's box under the docker runtime: the image its processes run from (one container
   * kept running, each process a `docker exec` in it), and what to do when the image is missing.
   */
  image?: { ref: string; fix: string };
  /** The build plan's runtime (`node`, `python`, ...): the docker driver runs build steps on its base image (BERTH_IMAGE_<RUNTIME>). */
  runtime?: string;
}

export interface ExecOptions {
  /** Working directory as a host path below `appDir` (mapped into the box by the driver). */
  cwd: string;
  /** The whole environment of the process (never the server's own). */
  env: Record<string, string>;
}

export interface BoxProcess {
  readonly pid: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** Resolves once the process has exited and its output streams are closed. */
  readonly exited: Promise<{ code: number | null; signal: string | null; error?: Error }>;
}

export interface Box {
  /** Where a port inside the box is reached from the server (the edge, the health check). */
  readonly host: string;
  /** The port the app listens on (PORT), when it is an app. */
  readonly port: number | null;
  /** The address the app should bind (`HOST`): all addresses inside its own network, else loopback. */
  readonly bindHost: string;
  /** Paths as the box's processes see them. */
  readonly paths: { app: string; data: string | null; home: string | null; tmp: string; cache?: string | null };
  /** Maps a host path below `appDir` to the path inside the box. */
  inside(hostPath: string): string;
  exec(argv: string[], opts: ExecOptions): BoxProcess;
  /** Sends `signal` to the box's own processes (the command and what it started; not the launcher). */
  signalAll(signal: NodeJS.Signals): void;
  /** Kills every process in the box (children and detached ones included), the box stays usable. */
  killAll(): Promise<void>;
  /** Kills everything and frees the box's cgroup and network. */
  dispose(): Promise<void>;
  /** Pids in the box now (for the runtime state and the tests). */
  pids(): number[];
  /** What the box used so far (its cgroup's counters, its network's bytes); null when nothing counts it (usage.ts). */
  usage?(): UsageCounters | null | Promise<UsageCounters | null>;
}

export interface RuntimeDriver {
  readonly name: DriverName;
  readonly isolation: Isolation;
  /** Whether limits are enforced, and why not when not. */
  readonly limits: { enforced: boolean; note?: string };
  status(): DriverStatus;
  /** The status after asking again when the cached one says not ready (a probe may be stale); status() when absent. */
  recheck?(): Promise<DriverStatus>;
  /** Kills and removes whatever a previous run of this server left (called once at start). */
  reclaim(): Promise<void>;
  /** Server shutdown begins (before the apps stop): nothing is made ahead for later boxes any more. */
  shuttingDown?(): void;
  /** Server shutdown, after every app stopped: removes the host rules the driver added (when no other server needs them). */
  close?(): Promise<void>;
  /** Puts the driver's host firewall rules back where another firewall removed them (the periodic egress check calls it). */
  ensureEgressRules?(): Promise<unknown>;
  open(spec: BoxSpec): Promise<Box>;
  /** Whether a host folder is visible inside the driver's boxes (PATH entries a build can use); all when absent. */
  sees?(hostDir: string): boolean;
  /**
   * The PATH of the driver's boxes when they do not run the host's programs (docker: the base image's);
   * the build then checks no host programs or Node versions (the image has its own).
   */
  readonly boxPath?: string;
  /** Drivers whose releases are images (docker): builds end in an image. */
  readonly images?: ImageBuilder;
  /** Drivers whose releases are images (docker): apps run from the release's image. */
  readonly apps?: AppRunner;
}

/** One image build: a Dockerfile (the project's, or one Berth generated) over a context folder. */
export interface ImageBuildInput {
  /** The build context (host folder). */
  contextDir: string;
  /**
   * A path that names the same context build after build (one per project environment, where no build can
   * write): the CLI is given a link there, so BuildKit receives only what changed (docker/build-context.ts).
   */
  contextAlias?: string;
  /** The Dockerfile as a host path (the project's own; its `.dockerignore` rules apply)... */
  dockerfile?: string;
  /** ...or the text of one Berth generated (the context's `.dockerignore` is then not applied). */
  dockerfileText?: string;
  /** `berth/<project-slug>:<deployment-id>`. */
  tag: string;
  /** Plain variables, as build args (a Dockerfile uses those it declares with ARG). */
  buildArgs: Record<string, string>;
  /** Secret variables, as BuildKit secrets (`RUN --mount=type=secret,id=NAME`): never layers or args. */
  secrets: Record<string, string>;
  labels: Record<string, string>;
  signal: AbortSignal;
  /** When the build must be done (ms since the epoch). */
  deadline: number;
  /**
   * `build.diskMb` when disk limits are enforced: the build is stopped once the engine's storage grew by
   * more than this while it ran (its `RUN` layers live there, not in the build's folders).
   */
  diskMb?: number;
  /** Build without the engine's layer cache (`--no-cache`): the deployment's `noCache`. */
  noCache?: boolean;
  /** Every output line, already redacted. */
  log(stream: 'stdout' | 'stderr', line: string): void;
}

export interface ImageBuilder {
  /** The base image build steps and generated images of a runtime use, or null when none is configured. */
  baseImage(runtime: string): string | null;
  /**
   * The runtime's base image, on this machine (pulled once when missing); its reference. Throws one
   * message for every plan whose base image is missing, naming BERTH_IMAGE_<RUNTIME>.
   */
  ensureBaseImage?(runtime: string): Promise<string>;
  /** Builds and tags the image; throws an Error saying why (cancelled, timed out, the failing step). */
  build(input: ImageBuildInput): Promise<void>;
  /** Removes images (pruned releases); missing ones are fine. */
  remove(tags: string[]): Promise<void>;
  /** Tags an existing image (`from`) as `to` too (a reused release image, build-output.ts); throws when `from` is gone. */
  tag?(from: string, to: string): Promise<void>;
}

/** Runs releases that are images (ReleaseSpec.image): containers, or Swarm services. */
export interface AppRunner {
  /** Apps keep running when the server stops; the next start adopts them (never a second copy). */
  readonly survivesShutdown: boolean;
  /**
   * Starts the release (or adopts the container a previous run of this server left running for the
   * same deployment) and resolves once it answers its health check; throws StartError otherwise,
   * leaving nothing running.
   */
  start(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance>;
  /** Removes the apps of this server that nothing adopted since it started (after the restore). */
  sweepUnadopted(): Promise<void>;
  /** Removes whatever the project has in the engine (its network, its service): the project is gone. */
  forgetProject?(projectId: string): Promise<void>;
  /** Removes what one app (a preview environment's, `ReleaseSpec.app`) has in the engine: its containers or service, its network. */
  forgetApp?(app: string): Promise<void>;
}

export class DriverUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DriverUnavailableError';
  }
}
