import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import { findProgram } from '../sandbox-driver.js';
import { chownTree } from '../identity.js';
import type { AppRunner, Box, BoxProcess, BoxSpec, DriverStatus, ExecOptions, ImageBuilder, RuntimeDriver } from '../driver.js';
import { DriverUnavailableError } from '../driver.js';
import { ContainerApps } from './app-containers.js';
import {
  BOX_PATH,
  caBinds,
  envList,
  hostConfig,
  labelFilter,
  labelsOf,
  numericUser,
  ownerOf,
  ProjectNetworks,
  runOneOff,
  swarmTask,
  userOf,
  type DockerContext,
  type OneOffProcess,
} from './containers.js';
import { baseImageFromEnv, ensureBaseImage, missingBaseImage } from './base-images.js';
import { DockerEngine } from './engine.js';
import { EngineProbe } from './probe.js';
import { openServiceBox } from './service-containers.js';

/** How long reclaim() waits for the first engine probe. */
const FIRST_PROBE_MS = 5000;
/** How long a probe asked before refusing work waits: a busy engine (builds, many containers) may be slow, not gone. */
const RECHECK_TIMEOUT_MS = 15_000;

export interface DockerDriverOptions {
  /** instanceKeyOf(dataDir): the `berth.instance` label of everything this Berth makes. */
  key: string;
  /** Berth's data dir: never mounted into a container (only the folders a box names). */
  dataDir?: string;
  /** The engine's reachability for status() (default: a probe of DOCKER_HOST). */
  probe?: EngineProbe;
  /** The engine (default: DOCKER_HOST, else /var/run/docker.sock). */
  engine?: DockerEngine;
  /** Builds images (Dockerfile or plan); its baseImage(runtime) picks the image of build steps. */
  images?: ImageBuilder;
  /** Runs image releases (default: one container per app, ContainerApps; the Swarm runner otherwise). */
  apps?: AppRunner | ((ctx: DockerContext) => AppRunner);
  /** Where BERTH_IMAGE_<RUNTIME> is read when no ImageBuilder is given (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * The `docker` driver (contract section 13): build steps run as one-off containers of the runtime's
 * base image with the source at `/app` (read-write) and the build's HOME at `/home/berth`, on the
 * project's network, with the project's limits and the security of every container (containers.ts);
 * apps run from their release image through `apps` (ContainerApps, or the Swarm runner).
 */
export class DockerDriver implements RuntimeDriver {
  readonly name = 'docker' as const;
  readonly isolation = 'docker' as const;
  readonly limits = { enforced: true };
  readonly boxPath = BOX_PATH;
  readonly images?: ImageBuilder;
  readonly apps: AppRunner;
  readonly ctx: DockerContext | null;
  private readonly probe: EngineProbe;
  private readonly configError: string | null = null;
  private readonly dataDir: string | null;
  private readonly env: NodeJS.ProcessEnv;
  /** Why the app runner cannot run apps on this engine (Swarm mode on an engine that is no manager). */
  private appsReason: string | null = null;

  constructor(opts: DockerDriverOptions) {
    this.env = opts.env ?? process.env;
    this.probe = opts.probe ?? new EngineProbe(this.env);
    this.images = opts.images;
    this.dataDir = opts.dataDir ? path.resolve(opts.dataDir) : null;
    let engine = opts.engine ?? null;
    if (!engine) {
      try {
        engine = DockerEngine.fromEnv(this.env);
      } catch (e) {
        this.configError = (e as Error).message;
      }
    }
    const root = process.getuid?.() === 0;
    this.ctx = engine ? { engine, key: opts.key, root, networks: new ProjectNetworks(engine, opts.key, root ? findProgram('nft') : null) } : null;
    if (typeof opts.apps === 'object') this.apps = opts.apps;
    else if (this.ctx) this.apps = typeof opts.apps === 'function' ? opts.apps(this.ctx) : new ContainerApps(this.ctx);
    else this.apps = unavailableApps(this.configError!);
    void this.probe.refresh();
  }

  status(): DriverStatus {
    const engine = this.probe.status();
    if (this.configError) return { driver: 'docker', ready: false, reason: this.configError, engine };
    if (engine.starting) return { driver: 'docker', ready: false, reason: `starting: waiting for the Docker Engine's first answer (${this.probe.where})`, engine };
    if (!engine.reachable) return { driver: 'docker', ready: false, reason: `the docker runtime needs a Docker Engine: ${engine.error ?? 'it does not answer'}`, engine };
    if (this.appsReason) return { driver: 'docker', ready: false, reason: this.appsReason, engine };
    return { driver: 'docker', ready: true, engine };
  }

  /** The status, probing the engine again (with a patient timeout) when the cached probe says it is not ready. */
  async recheck(): Promise<DriverStatus> {
    const st = this.status();
    if (st.ready || this.configError) return st;
    await this.probe.refresh(RECHECK_TIMEOUT_MS);
    return this.status();
  }

  /** Nothing of the host is visible inside a container. */
  sees(_hostDir: string): boolean {
    return false;
  }

  /**
   * Removes what a previous run of this server left: build and step containers (any state) and app
   * containers that are not running; running apps stay for the AppRunner to adopt. Waits (bounded)
   * for the first engine probe, so the first health answer after start has it.
   */
  async reclaim(): Promise<void> {
    await Promise.race([this.probe.refresh(), new Promise((r) => setTimeout(r, FIRST_PROBE_MS).unref())]);
    if (!this.ctx || !this.probe.status().reachable) return;
    // The Swarm runner needs a manager: asked once at start, shown in the status until the next start.
    this.appsReason = (await (this.apps as { unavailable?(): Promise<string | null> }).unavailable?.()) ?? null;
    const { engine, key } = this.ctx;
    let list: Docker.ContainerInfo[];
    try {
      list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key }) });
    } catch {
      return;
    }
    await Promise.all(
      list
        .filter((c) => !swarmTask(c.Labels) && (c.Labels['berth.kind'] !== 'app' || c.State !== 'running'))
        .map((c) =>
          engine.api
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {}),
        ),
    );
  }

  async open(spec: BoxSpec): Promise<Box> {
    if (spec.image) {
      // A managed service: a container of its kind's image (service-containers.ts).
      if (!this.ctx) throw new DriverUnavailableError(this.configError!);
      const st = await this.recheck();
      if (!st.ready) throw new DriverUnavailableError(st.reason!);
      return openServiceBox(this.ctx, spec);
    }
    if (spec.kind === 'app') throw new DriverUnavailableError('the docker runtime runs apps from their release image (driver.apps), not in boxes');
    if (!this.ctx) throw new DriverUnavailableError(this.configError!);
    const st = await this.recheck();
    if (!st.ready) throw new DriverUnavailableError(st.reason!);
    const runtime = spec.runtime ?? 'node';
    const image = this.images ? this.images.baseImage(runtime) : baseImageFromEnv(runtime, this.env);
    if (!image) throw new DriverUnavailableError(missingBaseImage(runtime, null).message);
    const user = userOf(spec.identity, this.ctx.root);
    // The container's user owns the source and HOME it writes (the server is root: it can hand them over).
    if (this.ctx.root) {
      const id = numericUser(user)!;
      for (const dir of [spec.appDir, spec.homeDir, spec.cacheDir]) {
        if (!dir) continue;
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        if (ownerOf(dir) !== id.uid) await chownTree(dir, id);
      }
    } else if (spec.homeDir) {
      mkdirSync(spec.homeDir, { recursive: true, mode: 0o700 });
    }
    return new ContainerBox(this.ctx, spec, image, user, this.dataDir);
  }
}

/** An AppRunner that says why it cannot run (DOCKER_HOST is malformed). */
function unavailableApps(reason: string): AppRunner {
  return {
    survivesShutdown: true,
    start: () => Promise.reject(new DriverUnavailableError(reason)),
    sweepUnadopted: () => Promise.resolve(),
  };
}

/** A build's box: each exec is one container of the runtime's base image over the same folders. */
class ContainerBox implements Box {
  readonly host = '127.0.0.1';
  readonly port = null;
  readonly bindHost = '0.0.0.0';
  readonly paths: Box['paths'];
  private readonly procs = new Set<OneOffProcess>();
  private prepared: Promise<string> | null = null;

  constructor(
    private readonly ctx: DockerContext,
    private readonly spec: BoxSpec,
    private readonly image: string,
    private readonly user: string,
    private readonly dataDir: string | null,
  ) {
    this.paths = { app: '/app', data: null, home: spec.homeDir ? '/home/berth' : null, tmp: '/tmp', cache: spec.cacheDir ? '/cache' : null };
  }

  inside(hostPath: string): string {
    const rel = path.relative(this.spec.appDir, hostPath);
    if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${hostPath} is outside the box`);
    return rel ? path.posix.join('/app', ...rel.split(path.sep)) : '/app';
  }

  /** The image (pulled once when missing) and the project's network, once per box. */
  private prepare(): Promise<string> {
    this.prepared ??= (async () => {
      const runtime = this.spec.runtime ?? 'node';
      await ensureBaseImage(this.ctx.engine, runtime, this.image);
      return this.ctx.networks.ensure(this.spec.projectId);
    })();
    this.prepared.catch(() => (this.prepared = null));
    return this.prepared;
  }

  exec(argv: string[], opts: ExecOptions): BoxProcess {
    if (argv.length === 0) throw new Error('empty command');
    const s = this.spec;
    const binds = [`${s.appDir}:/app:rw`];
    if (s.homeDir) binds.push(`${s.homeDir}:/home/berth:rw`);
    if (s.cacheDir) binds.push(`${s.cacheDir}:/cache:rw`);
    binds.push(...caBinds(opts.env, this.dataDir));
    let network = this.ctx.networks.nameOf(s.projectId);
    const create: Docker.ContainerCreateOptions = {
      Image: this.image,
      Cmd: argv,
      Entrypoint: [],
      Env: envList(opts.env),
      WorkingDir: this.inside(opts.cwd),
      User: this.user,
      Labels: labelsOf(this.ctx.key, s.projectId, 'build'),
      Tty: false,
      OpenStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      HostConfig: hostConfig(s.limits, binds, network),
    };
    const p = runOneOff(this.ctx.engine, create, async () => {
      network = await this.prepare();
      create.HostConfig!.NetworkMode = network;
    });
    this.procs.add(p);
    void p.exited.then(() => this.procs.delete(p));
    return p;
  }

  signalAll(signal: NodeJS.Signals): void {
    for (const p of this.procs) void p.kill(signal);
  }

  /** Kills every container of the box and waits until they are removed. */
  async killAll(): Promise<void> {
    const all = [...this.procs];
    await Promise.all(all.map((p) => p.kill('SIGKILL')));
    await Promise.all(all.map((p) => p.exited.catch(() => {})));
  }

  async dispose(): Promise<void> {
    await this.killAll();
  }

  pids(): number[] {
    return [...this.procs].map((p) => p.pid).filter((p): p is number => typeof p === 'number');
  }
}
