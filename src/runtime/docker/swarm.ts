import { mkdirSync, statSync } from 'node:fs';
import type Docker from 'dockerode';
import type { Instance, InstanceDeps } from '../app-instance.js';
import { waitHealthy } from '../app-health.js';
import type { AppRunner } from '../driver.js';
import { chownTree } from '../identity.js';
import type { LogFile } from '../logs.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from '../release-spec.js';
import { labelFilter, numericUser, statusOf } from './containers.js';
import type { DockerEngine } from './engine.js';
import { serviceUsage } from './container-stats.js';
import { TcpBalancer } from './swarm-balancer.js';
import { TaskBackends } from './swarm-tasks.js';
import { removeProjectLeftovers } from './swarm-leftovers.js';
import { ServiceLogFollowers } from './swarm-logs.js';
import { containerImage, SwarmServices, type JobContext, type Service } from './swarm-services.js';
import { appLabels, containerSpec, imageName, serviceSpec, swarmName, overlayName, taskPlan, taskResources, taskUser, type TaskPlan } from './swarm-spec.js';

/**
 * Apps as Swarm services (BERTH_DOCKER_SWARM=1, contract section 13): one replicated service per
 * app (`berth-<key>-<app>`: a project's id, or a preview environment's key) on its own overlay network (`…-swarm`), updated in place for each
 * deploy (start-first, one task at a time, rolled back by the engine when a new task fails), with the
 * images pushed to BERTH_REGISTRY so every node can pull them. The edge reaches the tasks through a
 * balancer Berth runs on `publishHost` (see swarm-balancer.ts). Services outlive the server; the next
 * start adopts the one that runs the release's image. docs/scale-out.md says how to run it.
 *
 * This file decides (adopt, create or update a service; the balancer and the health check; the
 * per-app lock); swarm-services.ts makes the engine calls, swarm-logs.ts follows the services' output,
 * swarm-spec.ts writes the specs.
 */

export interface SwarmAppsOptions {
  engine: DockerEngine;
  instanceKey: string;
  /** BERTH_REGISTRY: `host[:port][/path]` every node pulls release images from. */
  registry?: string;
  /** Where the edge reaches an app's balancer (default 127.0.0.1). */
  publishHost?: string;
}

/** Time added to the health timeout for a rollout: per task (pull, start, monitor) and once. */
const ROLLOUT_PER_TASK_MS = 10_000;
const ROLLOUT_MARGIN_MS = 15_000;
/** How long the old instance's balancer lets requests in flight finish after a swap. */
const DRAIN_MS = 10_000;

/** One start of a release, as the steps below share it. */
interface Start {
  spec: ReleaseSpec;
  deps: InstanceDeps;
  logFile: LogFile;
  note(line: string): void;
  fail(message: string): StartError;
  /** The service's name, its overlay network, the image as the nodes pull it. */
  name: string;
  network: string;
  image: string;
  replicas: number;
  graceMs: number;
  rolloutMs: number;
  /** When the start began (seconds): the logs and the failing tasks it follows are from then on. */
  since: number;
}

export class SwarmApps implements AppRunner {
  readonly survivesShutdown = true;
  private readonly api: Docker;
  private readonly key: string;
  private readonly publishHost: string;
  private readonly backends: TaskBackends;
  private readonly svc: SwarmServices;
  private readonly logs: ServiceLogFollowers;
  /** Services a start of this server created, updated or adopted (the sweep leaves them). */
  private readonly adopted = new Set<string>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(opts: SwarmAppsOptions) {
    this.api = opts.engine.api;
    this.key = opts.instanceKey;
    this.publishHost = opts.publishHost ?? '127.0.0.1';
    this.backends = new TaskBackends(this.api);
    this.svc = new SwarmServices(this.api, this.key, opts.registry?.trim().replace(/\/+$/, '') || null);
    this.logs = new ServiceLogFollowers(this.api);
  }

  /**
   * Why apps cannot run as services on this engine (it is not a Swarm manager), naming the fix; null
   * when it can. For the driver's status.
   */
  async unavailable(): Promise<string | null> {
    try {
      const info = (await this.api.info()) as { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean } };
      if (info.Swarm?.LocalNodeState !== 'active') return 'BERTH_DOCKER_SWARM=1 but the Docker Engine is not in a swarm: run docker swarm init on this machine (docs/scale-out.md)';
      if (!info.Swarm.ControlAvailable) return 'BERTH_DOCKER_SWARM=1 but the Docker Engine is a swarm worker: run Berth against a manager (docs/scale-out.md)';
      return null;
    } catch (e) {
      return `cannot ask the Docker Engine whether it is a Swarm manager: ${(e as Error).message}`;
    }
  }

  start(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance> {
    if (!spec.image) return Promise.reject(new StartError('the release has no image to run as a Swarm service'));
    return this.locked(appOf(spec), () =>
      this.startLocked(spec, deps).catch((e: Error) => {
        if (e instanceof StartError) throw e;
        const message = `the Swarm service could not start: ${e.message}`;
        deps.logs.runtime(appOf(spec)).append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${message}` });
        throw new StartError(message);
      }),
    );
  }

  async sweepUnadopted(): Promise<void> {
    const services = (await this.api.listServices({ filters: { label: [`berth.instance=${this.key}`] } })) as Service[];
    for (const s of services) {
      // Locked by the app (a preview environment's services carry `berth.app`).
      const app = s.Spec.Labels?.['berth.app'] ?? s.Spec.Labels?.['berth.project'];
      const name = s.Spec.Name!;
      if (!app || s.Spec.Labels?.['berth.instance'] !== this.key) continue;
      await this.locked(app, async () => {
        if (this.adopted.has(name)) return;
        await this.svc.removeService(s.ID, 0);
      });
    }
  }

  /**
   * Removes everything of the project: the services and overlay networks of its apps (production's and
   * every preview environment's still labelled with it), then what removeProjectLeftovers lists (build
   * containers, the bridge, release images with all their tags).
   */
  async forgetProject(projectId: string): Promise<void> {
    const services = (await this.api.listServices({ filters: labelFilter({ 'berth.instance': this.key, 'berth.project': projectId }) })) as Service[];
    const apps = new Set([projectId, ...services.map((s) => s.Spec.Labels?.['berth.app'] ?? projectId)]);
    for (const app of apps) await this.forgetApp(app);
    await this.locked(projectId, () => removeProjectLeftovers(this.api, this.key, projectId));
  }

  /** Removes an app's service (and its step job) and overlay network: a project's production app (its id), a preview environment's. */
  async forgetApp(app: string): Promise<void> {
    await this.locked(app, async () => {
      const name = swarmName(this.key, app);
      const network = overlayName(this.key, app);
      this.logs.stop(app);
      for (const n of [name, `${name}-step`]) {
        const s = await this.svc.inspect(n);
        if (s) await this.svc.removeService(s.ID, 0);
      }
      this.adopted.delete(name);
      await this.svc.removeNetwork(network);
    });
  }

  // ---- start

  private async startLocked(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance> {
    const logFile = deps.logs.runtime(appOf(spec));
    const note = (line: string) => logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${line}` });
    const replicas = Math.max(1, Math.floor(spec.replicas ?? 1));
    const s: Start = {
      spec,
      deps,
      logFile,
      note,
      fail: (message) => {
        note(message);
        return new StartError(message);
      },
      name: swarmName(this.key, appOf(spec)),
      network: overlayName(this.key, appOf(spec)),
      image: this.svc.registry ? `${this.svc.registry}/${spec.image!}` : spec.image!,
      replicas,
      graceMs: deps.graceMs ?? 5000,
      rolloutMs: (deps.healthTimeoutMs ?? 30_000) + ROLLOUT_PER_TASK_MS * replicas + ROLLOUT_MARGIN_MS,
      since: Math.floor(Date.now() / 1000),
    };
    const existing = await this.svc.inspect(s.name).catch((e: Error) => {
      throw s.fail(`the Swarm manager does not answer: ${e.message}`);
    });
    // Adoption: the service already runs this release (a restart of the server): no update, no second service.
    if (existing && imageName(containerImage(existing)) === s.image) return this.adopt(s, existing);
    const svcSpec = await this.prepare(s, existing);
    return existing ? this.update(s, existing, svcSpec) : this.create(s, svcSpec);
  }

  /** Serves the service that already runs the release (a restart of the server). */
  private async adopt(s: Start, existing: Service): Promise<Instance> {
    this.adopted.add(s.name);
    this.logs.follow(appOf(s.spec), s.spec.secrets, s.name, s.logFile, s.since);
    const undo = () => this.undoCreate(s, existing.ID);
    const ready = await this.svc.waitRollout({ id: existing.ID, image: s.image, replicas: s.replicas, update: false, deadline: Date.now() + s.rolloutMs });
    if (!ready.ok) {
      await undo();
      throw s.fail(`the Swarm service ${s.name} does not run: ${ready.reason}`);
    }
    return this.serve(s.spec, s.deps, { name: s.name, id: existing.ID, image: s.image, since: s.since }, s.note, s.fail, undo);
  }

  /**
   * Everything before the service changes: the overlay network, the image (pushed to the registry),
   * the data dir handed to the task's user, the start steps before the last one (migrations, ...)
   * run once as jobs. Returns the service's new spec.
   */
  private async prepare(s: Start, existing: Service | null): Promise<Docker.ServiceSpec> {
    const { spec } = s;
    await this.svc.ensureNetwork(s.network, spec.projectId).catch((e: Error) => {
      throw s.fail(`could not create the overlay network ${s.network}: ${e.message}`);
    });
    let info: Docker.ImageInspectInfo;
    try {
      info = await this.api.getImage(spec.image!).inspect();
    } catch (e) {
      throw s.fail(statusOf(e) === 404 ? `the release image ${spec.image} is not on the Swarm manager's engine: deploy again` : `could not read the release image ${spec.image}: ${(e as Error).message}`);
    }
    if (this.svc.registry) await this.svc.push(spec.image!, s.image, s.note, s.fail);

    const user = taskUser(info.Config?.User, spec.identity);
    mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
    const owner = numericUser(user);
    if (owner && owner.uid !== 0 && statSync(spec.dataDir).uid !== owner.uid) await chownTree(spec.dataDir, owner);
    let plan: TaskPlan;
    try {
      const imagePath = (info.Config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5);
      plan = taskPlan(spec, s.deps.baseEnv, imagePath);
    } catch (e) {
      throw s.fail(`the start command cannot run: ${(e as Error).message}`);
    }
    const container: JobContext['container'] = (env, command, kind) =>
      containerSpec({ image: s.image, user, env, command, dir: plan.dir, dataDir: spec.dataDir, labels: appLabels(this.key, spec, kind), graceMs: s.graceMs });
    const placement = existing?.Spec.TaskTemplate?.Placement;
    const resources = taskResources(spec.limits);

    for (const step of plan.before) {
      const deadline = Date.now() + (s.deps.healthTimeoutMs ?? 30_000);
      const r = await this.svc.runJob(`${s.name}-step`, step, { ...plan.env, ...step.env }, { container, resources, network: s.network, placement, spec, logFile: s.logFile, deadline });
      if (!r.ok) throw s.fail(r.reason);
    }
    return serviceSpec({
      name: s.name,
      labels: appLabels(this.key, spec, 'app'),
      container: container(plan.env, plan.command, 'app'),
      resources,
      network: s.network,
      replicas: s.replicas,
      port: spec.port,
      placement,
    });
  }

  /** A first release: a new service, removed again when it does not start or become healthy. */
  private async create(s: Start, svcSpec: Docker.ServiceSpec): Promise<Instance> {
    let id: string;
    try {
      id = ((await this.api.createService(svcSpec as Docker.CreateServiceOptions)) as { id: string }).id;
    } catch (e) {
      throw s.fail(`could not create the Swarm service ${s.name}: ${(e as Error).message}`);
    }
    this.adopted.add(s.name);
    s.note(`starting ${s.spec.deploymentId} as the Swarm service ${s.name} (${s.replicas} ${s.replicas === 1 ? 'replica' : 'replicas'})`);
    this.logs.follow(appOf(s.spec), s.spec.secrets, s.name, s.logFile, s.since);
    const undo = () => this.undoCreate(s, id);
    const ready = await this.svc.waitRollout({ id, image: s.image, replicas: s.replicas, update: false, deadline: Date.now() + s.rolloutMs });
    if (!ready.ok) {
      await undo();
      throw s.fail(`the app did not start: ${ready.reason}`);
    }
    return this.serve(s.spec, s.deps, { name: s.name, id, image: s.image, since: s.since }, s.note, s.fail, undo);
  }

  /** The next release: the service updated in place (start-first), rolled back when it fails. */
  private async update(s: Start, existing: Service, svcSpec: Docker.ServiceSpec): Promise<Instance> {
    const prevStartedAt = existing.UpdateStatus?.StartedAt ?? null;
    try {
      await this.api.getService(existing.ID).update({ _query: { version: existing.Version?.Index }, _body: svcSpec } as unknown as object);
    } catch (e) {
      throw s.fail(`could not update the Swarm service ${s.name}: ${(e as Error).message}`);
    }
    this.adopted.add(s.name);
    s.note(`rolling ${s.name} to ${s.spec.deploymentId} (${s.replicas} ${s.replicas === 1 ? 'replica' : 'replicas'}, start-first)`);
    this.logs.follow(appOf(s.spec), s.spec.secrets, s.name, s.logFile, s.since);
    const rolled = await this.svc.waitRollout({ id: existing.ID, image: s.image, replicas: s.replicas, update: true, prevStartedAt, deadline: Date.now() + s.rolloutMs });
    if (!rolled.ok) {
      await this.svc.rollBack(existing.ID, s.rolloutMs);
      throw s.fail(`the update to ${s.spec.deploymentId} was rolled back: ${rolled.reason}`);
    }
    return this.serve(s.spec, s.deps, { name: s.name, id: existing.ID, image: s.image, since: s.since }, s.note, s.fail, () => this.svc.rollBack(existing.ID, s.rolloutMs));
  }

  /** Puts back what a start that made (or adopted) the service changed: its follower, the service. */
  private async undoCreate(s: Start, id: string): Promise<void> {
    this.logs.stop(appOf(s.spec));
    this.adopted.delete(s.name);
    await this.svc.removeService(id, s.graceMs);
  }

  /**
   * The instance of a service that runs `image`: a balancer for the edge, the health check through
   * it; `undo` puts back what the start changed when the health check fails.
   */
  private async serve(
    spec: ReleaseSpec,
    deps: InstanceDeps,
    svc: { name: string; id: string; image: string; since: number },
    note: (line: string) => void,
    fail: (message: string) => StartError,
    undo: () => Promise<void>,
  ): Promise<Instance> {
    const { name, image } = svc;
    const unwatch = this.backends.watch(name);
    const balancer = new TcpBalancer(
      () => this.backends.get(name),
      () => this.backends.refresh(),
    );
    let port: number;
    try {
      port = await balancer.listen(this.publishHost);
      await this.backends.refresh();
    } catch (e) {
      balancer.close();
      unwatch();
      await undo().catch(() => {});
      throw fail(`could not open the balancer for ${name} on ${this.publishHost}: ${(e as Error).message}`);
    }
    // The edge takes a task's lane per request (`pick`, or `lanes` kept a second by its thread); the
    // balancer's own port serves the health check and WebSocket upgrades.
    const upstream: Upstream = { host: this.publishHost, port, key: `${this.publishHost}:${port}`, pick: () => balancer.pick(), lanes: () => balancer.readyLanes() };
    let resolveExited!: (r: { code: number | null; signal: string | null }) => void;
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => (resolveExited = r));
    const owner = {};
    let released = false;
    const release = (drainMs: number) => {
      if (released) return;
      released = true;
      balancer.close(drainMs);
      unwatch();
    };
    const inst: Instance = {
      spec,
      upstream,
      startedAt: new Date().toISOString(),
      stopping: false,
      exited,
      box: {
        signalAll: () => {},
        // The metrics sampler's counters: the sum of the service's tasks on this node.
        usage: () => serviceUsage(this.api, this.key, name),
        dispose: () =>
          this.locked(appOf(spec), async () => {
            release(DRAIN_MS);
            const s = await this.svc.inspect(name);
            // A newer deploy updated the service: it is that release's now.
            if (s && imageName(containerImage(s)) !== image) return;
            if (s) {
              this.logs.stop(appOf(spec));
              this.adopted.delete(name);
              await this.svc.removeService(s.ID, deps.graceMs ?? 5000);
            }
            resolveExited({ code: null, signal: 'SIGTERM' });
          }),
      },
      detach: () => {
        release(1000);
        this.logs.stopIfOwnedBy(appOf(spec), owner);
      },
    };
    // The health check gives up early when the release's tasks keep failing.
    const checking = new AbortController();
    const failing = this.svc.failingTasks(svc.id, image, svc.since, checking.signal);
    const healthy = await waitHealthy(upstream, failing, deps.healthTimeoutMs ?? 30_000);
    checking.abort();
    if (!healthy.ok) {
      release(0);
      await undo().catch(() => {});
      throw fail(`the app did not become healthy: ${healthy.reason}`);
    }
    this.logs.adopt(appOf(spec), owner, spec.secrets);
    note(`${spec.deploymentId} runs as ${name}; the edge reaches it at ${upstream.key}`);
    return inst;
  }

  /** Runs `fn` after every earlier call for the project (start, dispose, forget) has settled. */
  private locked<T>(projectId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(projectId) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.locks.set(projectId, tail);
    void tail.then(() => {
      if (this.locks.get(projectId) === tail) this.locks.delete(projectId);
    });
    return run;
  }
}
