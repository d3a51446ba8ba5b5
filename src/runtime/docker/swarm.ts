import { mkdirSync, statSync } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { Instance, InstanceDeps } from '../app-instance.js';
import { waitHealthy } from '../app-health.js';
import { redactedLines } from '../app-output.js';
import type { CommandStep } from '../command.js';
import type { AppRunner } from '../driver.js';
import { chownTree } from '../identity.js';
import type { LogFile } from '../logs.js';
import { redactText } from '../redact.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from '../release-spec.js';
import { labelFilter, numericUser, statusOf } from './containers.js';
import { demuxLogs, type DockerEngine } from './engine.js';
import { TaskBackends, TcpBalancer, type SwarmTask } from './swarm-balancer.js';
import { removeProjectLeftovers } from './swarm-leftovers.js';
import {
  containerSpec,
  imageName,
  jobSpec,
  serviceSpec,
  swarmLabels,
  swarmName,
  overlayName,
  taskPlan,
  taskResources,
  taskUser,
  UPDATE_MONITOR_NS,
  type TaskPlan,
} from './swarm-spec.js';

/**
 * Apps as Swarm services (BERTH_DOCKER_SWARM=1, contract section 13): one replicated service per
 * app (`berth-<key>-<app>`: a project's id, or a preview environment's key) on its own overlay network (`…-swarm`), updated in place for each
 * deploy (start-first, one task at a time, rolled back by the engine when a new task fails), with the
 * images pushed to BERTH_REGISTRY so every node can pull them. The edge reaches the tasks through a
 * balancer Berth runs on `publishHost` (see swarm-balancer.ts). Services outlive the server; the next
 * start adopts the one that runs the release's image. docs/scale-out.md says how to run it.
 */

export interface SwarmAppsOptions {
  engine: DockerEngine;
  instanceKey: string;
  /** BERTH_REGISTRY: `host[:port][/path]` every node pulls release images from. */
  registry?: string;
  /** Where the edge reaches an app's balancer (default 127.0.0.1). */
  publishHost?: string;
}

const POLL_MS = 250;
/** Time added to the health timeout for a rollout: per task (pull, start, monitor) and once. */
const ROLLOUT_PER_TASK_MS = 10_000;
const ROLLOUT_MARGIN_MS = 15_000;
const PUSH_TIMEOUT_MS = 15 * 60_000;
/** How long removing a service waits for its tasks to be gone (beyond the grace period). */
const REMOVE_WAIT_MS = 10_000;
/** How long the old instance's balancer lets requests in flight finish after a swap. */
const DRAIN_MS = 10_000;
const FAILED_STATES = new Set(['failed', 'rejected']);
const ROLLED_BACK = new Set(['rollback_started', 'rollback_completed', 'rollback_paused', 'paused']);

type Service = Docker.Service & { Spec: Docker.ServiceSpec };

/** The labels of a release's service or job: the project's, and `berth.app` for a preview environment's app. */
function appLabels(key: string, spec: Pick<ReleaseSpec, 'projectId' | 'app' | 'deploymentId'>, kind: 'app' | 'step'): Record<string, string> {
  const labels = swarmLabels(key, spec.projectId, kind, spec.deploymentId);
  return spec.app ? { ...labels, 'berth.app': spec.app } : labels;
}
type Outcome = { ok: true } | { ok: false; reason: string };

export class SwarmApps implements AppRunner {
  readonly survivesShutdown = true;
  private readonly api: Docker;
  private readonly key: string;
  private readonly registry: string | null;
  private readonly publishHost: string;
  private readonly backends: TaskBackends;
  /** Services a start of this server created, updated or adopted (the sweep leaves them). */
  private readonly adopted = new Set<string>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /**
   * The log follower of each project's service (one): `owner` is the instance it serves, `current` the
   * secrets of the release that runs (a start in flight redacts those and its own).
   */
  private readonly followers = new Map<string, { owner: object | null; current: string[]; stop(): void }>();

  constructor(opts: SwarmAppsOptions) {
    this.api = opts.engine.api;
    this.key = opts.instanceKey;
    this.registry = opts.registry?.trim().replace(/\/+$/, '') || null;
    this.publishHost = opts.publishHost ?? '127.0.0.1';
    this.backends = new TaskBackends(this.api);
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
        await this.removeService(s.ID, 0);
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
      this.stopFollower(app);
      for (const n of [name, `${name}-step`]) {
        const s = await this.inspect(n);
        if (s) await this.removeService(s.ID, 0);
      }
      this.adopted.delete(name);
      // The network goes once the tasks' endpoints are gone.
      const deadline = Date.now() + REMOVE_WAIT_MS * 2;
      for (;;) {
        try {
          await this.api.getNetwork(network).remove();
          return;
        } catch (e) {
          if (statusOf(e) === 404) return;
          if (Date.now() > deadline) throw new Error(`could not remove the network ${network}: ${(e as Error).message}`);
          await sleep(POLL_MS * 2);
        }
      }
    });
  }

  // ---- start

  private async startLocked(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance> {
    const logFile = deps.logs.runtime(appOf(spec));
    const note = (line: string) => logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${line}` });
    const fail = (message: string): StartError => {
      note(message);
      return new StartError(message);
    };
    const name = swarmName(this.key, appOf(spec));
    const network = overlayName(this.key, appOf(spec));
    const image = this.registry ? `${this.registry}/${spec.image!}` : spec.image!;
    const replicas = Math.max(1, Math.floor(spec.replicas ?? 1));
    const healthMs = deps.healthTimeoutMs ?? 30_000;
    const graceMs = deps.graceMs ?? 5000;
    const rolloutMs = healthMs + ROLLOUT_PER_TASK_MS * replicas + ROLLOUT_MARGIN_MS;
    const since = Math.floor(Date.now() / 1000);

    const existing = await this.inspect(name).catch((e: Error) => {
      throw fail(`the Swarm manager does not answer: ${e.message}`);
    });
    if (existing && imageName(containerImage(existing)) === image) {
      // Adoption: the service already runs this release (a restart of the server): no update, no second service.
      this.adopted.add(name);
      this.follow(spec, name, logFile, since);
      const undo = async () => {
        this.stopFollower(appOf(spec));
        this.adopted.delete(name);
        await this.removeService(existing.ID, graceMs);
      };
      const ready = await this.waitRollout({ id: existing.ID, image, replicas, update: false, deadline: Date.now() + rolloutMs });
      if (!ready.ok) {
        await undo();
        throw fail(`the Swarm service ${name} does not run: ${ready.reason}`);
      }
      return this.serve(spec, deps, { name, id: existing.ID, image, since }, note, fail, undo);
    }

    await this.ensureNetwork(network, spec.projectId).catch((e: Error) => {
      throw fail(`could not create the overlay network ${network}: ${e.message}`);
    });
    let info: Docker.ImageInspectInfo;
    try {
      info = await this.api.getImage(spec.image!).inspect();
    } catch (e) {
      throw fail(statusOf(e) === 404 ? `the release image ${spec.image} is not on the Swarm manager's engine: deploy again` : `could not read the release image ${spec.image}: ${(e as Error).message}`);
    }
    if (this.registry) await this.push(spec.image!, image, note, fail);

    const user = taskUser(info.Config?.User, spec.identity);
    mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
    const owner = numericUser(user);
    if (owner && owner.uid !== 0 && statSync(spec.dataDir).uid !== owner.uid) await chownTree(spec.dataDir, owner);
    let plan: TaskPlan;
    try {
      const imagePath = (info.Config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5);
      plan = taskPlan(spec, deps.baseEnv, imagePath);
    } catch (e) {
      throw fail(`the start command cannot run: ${(e as Error).message}`);
    }
    const container = (env: Record<string, string>, command: string[] | undefined, kind: 'app' | 'step') =>
      containerSpec({ image, user, env, command, dir: plan.dir, dataDir: spec.dataDir, labels: appLabels(this.key, spec, kind), graceMs });
    const placement = existing?.Spec.TaskTemplate?.Placement;
    const resources = taskResources(spec.limits);

    // Steps before the last one (migrations, ...) run once, as a job, before the service changes.
    for (const step of plan.before) {
      const r = await this.runJob(`${name}-step`, step, { ...plan.env, ...step.env }, { container, resources, network, placement, spec, logFile, deadline: Date.now() + healthMs });
      if (!r.ok) throw fail(r.reason);
    }

    const svcSpec = serviceSpec({
      name,
      labels: appLabels(this.key, spec, 'app'),
      container: container(plan.env, plan.command, 'app'),
      resources,
      network,
      replicas,
      port: spec.port,
      placement,
    });
    if (!existing) {
      let id: string;
      try {
        id = ((await this.api.createService(svcSpec as Docker.CreateServiceOptions)) as { id: string }).id;
      } catch (e) {
        throw fail(`could not create the Swarm service ${name}: ${(e as Error).message}`);
      }
      this.adopted.add(name);
      note(`starting ${spec.deploymentId} as the Swarm service ${name} (${replicas} ${replicas === 1 ? 'replica' : 'replicas'})`);
      this.follow(spec, name, logFile, since);
      const undo = async () => {
        this.stopFollower(appOf(spec));
        this.adopted.delete(name);
        await this.removeService(id, graceMs);
      };
      const ready = await this.waitRollout({ id, image, replicas, update: false, deadline: Date.now() + rolloutMs });
      if (!ready.ok) {
        await undo();
        throw fail(`the app did not start: ${ready.reason}`);
      }
      return this.serve(spec, deps, { name, id, image, since }, note, fail, undo);
    }

    const prevStartedAt = existing.UpdateStatus?.StartedAt ?? null;
    try {
      await this.api.getService(existing.ID).update({ _query: { version: existing.Version?.Index }, _body: svcSpec } as unknown as object);
    } catch (e) {
      throw fail(`could not update the Swarm service ${name}: ${(e as Error).message}`);
    }
    this.adopted.add(name);
    note(`rolling ${name} to ${spec.deploymentId} (${replicas} ${replicas === 1 ? 'replica' : 'replicas'}, start-first)`);
    this.follow(spec, name, logFile, since);
    const rolled = await this.waitRollout({ id: existing.ID, image, replicas, update: true, prevStartedAt, deadline: Date.now() + rolloutMs });
    if (!rolled.ok) {
      await this.rollBack(existing.ID, rolloutMs);
      throw fail(`the update to ${spec.deploymentId} was rolled back: ${rolled.reason}`);
    }
    return this.serve(spec, deps, { name, id: existing.ID, image, since }, note, fail, () => this.rollBack(existing.ID, rolloutMs));
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
    // The edge asks per request for a task's lane (balanced per request, kept alive per task); the
    // balancer's own port serves the health check and WebSocket upgrades.
    const upstream: Upstream = { host: this.publishHost, port, key: `${this.publishHost}:${port}`, pick: () => balancer.pick() };
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
        dispose: () =>
          this.locked(appOf(spec), async () => {
            release(DRAIN_MS);
            const s = await this.inspect(name);
            // A newer deploy updated the service: it is that release's now.
            if (s && imageName(containerImage(s)) !== image) return;
            if (s) {
              this.stopFollower(appOf(spec));
              this.adopted.delete(name);
              await this.removeService(s.ID, deps.graceMs ?? 5000);
            }
            resolveExited({ code: null, signal: 'SIGTERM' });
          }),
      },
      detach: () => {
        release(1000);
        const f = this.followers.get(appOf(spec));
        if (f?.owner === owner) this.stopFollower(appOf(spec));
      },
    };
    // The health check gives up early when the release's tasks keep failing.
    const checking = new AbortController();
    const failing = this.failingTasks(svc.id, image, svc.since, checking.signal);
    const healthy = await waitHealthy(upstream, failing, deps.healthTimeoutMs ?? 30_000);
    checking.abort();
    if (!healthy.ok) {
      release(0);
      await undo().catch(() => {});
      throw fail(`the app did not become healthy: ${healthy.reason}`);
    }
    const f = this.followers.get(appOf(spec));
    if (f) {
      f.owner = owner;
      f.current = spec.secrets;
    }
    note(`${spec.deploymentId} runs as ${name}; the edge reaches it at ${upstream.key}`);
    return inst;
  }

  // ---- the engine

  /** Resolves (with the last exit code) once two tasks of `image` started after `since` have failed; never when aborted. */
  private failingTasks(id: string, image: string, since: number, signal: AbortSignal): Promise<{ code: number | null; signal: string | null }> {
    return new Promise((resolve) => {
      const check = async () => {
        while (!signal.aborted) {
          const failed = (await this.tasksOf(id).catch(() => [])).filter(
            (t) => imageName(t.Spec?.ContainerSpec?.Image) === image && FAILED_STATES.has(t.Status?.State ?? '') && Date.parse(t.Status?.Timestamp ?? '') >= since * 1000,
          );
          if (failed.length >= 2) return resolve({ code: failed[0]!.Status?.ContainerStatus?.ExitCode ?? null, signal: null });
          await sleep(POLL_MS * 2);
        }
      };
      void check();
    });
  }

  /** Waits until the service runs `image` on `replicas` tasks (a new service) or its update completed. */
  private async waitRollout(a: { id: string; image: string; replicas: number; update: boolean; prevStartedAt?: string | null; deadline: number }): Promise<Outcome> {
    const t0 = Date.now();
    let lastError = '';
    while (Date.now() < a.deadline) {
      const s = await this.inspect(a.id);
      if (!s) return { ok: false, reason: 'the service was removed' };
      const tasks = await this.tasksOf(a.id);
      const mine = tasks.filter((t) => imageName(t.Spec?.ContainerSpec?.Image) === a.image);
      lastError = taskError(mine) ?? lastError;
      const us = s.UpdateStatus;
      const fresh = us?.StartedAt && us.StartedAt !== a.prevStartedAt;
      if (a.update && fresh) {
        if (us.State === 'completed') return { ok: true };
        if (ROLLED_BACK.has(us.State ?? '')) return { ok: false, reason: lastError || us.Message || `the update ended ${us.State}` };
      }
      const live = tasks.filter((t) => t.DesiredState === 'running');
      const converged = live.length > 0 && live.every((t) => imageName(t.Spec?.ContainerSpec?.Image) === a.image) && live.filter((t) => t.Status?.State === 'running').length >= a.replicas;
      // A new service, or an update the engine found nothing to roll for.
      if (converged && (!a.update || (!fresh && Date.now() - t0 > UPDATE_MONITOR_NS / 1e6))) return { ok: true };
      if (!a.update) {
        const failed = mine.filter((t) => FAILED_STATES.has(t.Status?.State ?? ''));
        if (failed.some((t) => t.Status?.State === 'rejected') || failed.length >= 2) return { ok: false, reason: lastError || 'its tasks failed' };
      }
      await sleep(POLL_MS);
    }
    return { ok: false, reason: `it was not running within ${Math.round((a.deadline - t0) / 1000)} s${lastError ? ` (${lastError})` : ''}` };
  }

  /** Puts the service back on its previous spec (unless the engine did already) and waits for that, bounded. */
  private async rollBack(id: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let s = await this.inspect(id);
    if (!s) return;
    const state = s.UpdateStatus?.State ?? '';
    if (!state.startsWith('rollback')) {
      if (!s.PreviousSpec) return;
      await this.api.getService(id).update({ _query: { version: s.Version?.Index, rollback: 'previous' }, _body: s.Spec } as unknown as object);
    }
    while (Date.now() < deadline) {
      s = await this.inspect(id);
      const st = s?.UpdateStatus?.State;
      if (!s || st === 'rollback_completed' || st === 'rollback_paused') return;
      await sleep(POLL_MS);
    }
  }

  /** Tags and pushes the image to the registry, following the engine's progress to the end. */
  private async push(local: string, remote: string, note: (line: string) => void, fail: (message: string) => StartError): Promise<void> {
    const at = remote.lastIndexOf(':');
    const slash = remote.lastIndexOf('/');
    const [repo, tag] = at > slash ? [remote.slice(0, at), remote.slice(at + 1)] : [remote, 'latest'];
    note(`pushing ${local} to the registry ${this.registry}`);
    try {
      await this.api.getImage(local).tag({ repo, tag });
      // No credentials (the engine requires the header all the same): a registry every node reaches as it is.
      const stream = (await this.api.getImage(remote).push({ authconfig: {}, abortSignal: AbortSignal.timeout(PUSH_TIMEOUT_MS) })) as Readable;
      const error = await new Promise<string | null>((resolve) => {
        let err: string | null = null;
        this.api.modem.followProgress(
          stream,
          (e: Error | null) => resolve(err ?? (e ? e.message : null)),
          (ev: { error?: string; errorDetail?: { message?: string } }) => {
            if (ev.error || ev.errorDetail) err ??= ev.errorDetail?.message ?? ev.error ?? 'the push failed';
          },
        );
      });
      if (error) throw new Error(error);
      // The registry's name on this engine only pins the image (pruning removes the release's own tag): the nodes pull it.
      await this.api
        .getImage(remote)
        .remove({ noprune: true })
        .catch(() => {});
    } catch (e) {
      throw fail(`could not push ${local} to the registry ${this.registry}: ${(e as Error).message}`);
    }
  }

  /** Runs one start step to completion as a Swarm job; its output goes into the app's log. */
  private async runJob(
    name: string,
    step: CommandStep,
    env: Record<string, string>,
    c: {
      container: (env: Record<string, string>, command: string[] | undefined, kind: 'app' | 'step') => Docker.ContainerSpec;
      resources: Docker.ResourceRequirements;
      network: string;
      placement?: Docker.Placement;
      spec: ReleaseSpec;
      logFile: LogFile;
      deadline: number;
    },
  ): Promise<Outcome> {
    const left = await this.inspect(name);
    if (left) await this.removeService(left.ID, 0);
    const label = `start step "${step.argv[0]}"`;
    const t0 = Date.now();
    let id: string;
    try {
      const spec = jobSpec({ name, labels: appLabels(this.key, c.spec, 'step'), container: c.container(env, step.argv, 'step'), resources: c.resources, network: c.network, placement: c.placement });
      id = ((await this.api.createService(spec as Docker.CreateServiceOptions)) as { id: string }).id;
    } catch (e) {
      return { ok: false, reason: `${label} could not run: ${(e as Error).message}` };
    }
    try {
      let done: SwarmTask | undefined;
      while (!done && Date.now() < c.deadline) {
        done = (await this.tasksOf(id)).find((t) => ['complete', 'failed', 'rejected', 'shutdown'].includes(t.Status?.State ?? ''));
        if (!done) await sleep(POLL_MS);
      }
      const logs = await this.api
        .getService(id)
        .logs({ stdout: true, stderr: true, follow: false })
        .then((b) => demuxLogs(b as unknown as Buffer))
        .catch(() => ({ stdout: '', stderr: '' }));
      for (const [stream, text] of [['stdout', logs.stdout], ['stderr', logs.stderr]] as const) {
        for (const line of redactText(text, c.spec.secrets).split('\n')) if (line) c.logFile.append({ ts: new Date().toISOString(), stream, line });
      }
      if (!done) return { ok: false, reason: `${label} did not finish within ${Math.round((c.deadline - t0) / 1000)} s` };
      if (done.Status?.State === 'complete') return { ok: true };
      const code = done.Status?.ContainerStatus?.ExitCode;
      return { ok: false, reason: code ? `${label} exited with code ${code}` : `${label} could not run: ${done.Status?.Err ?? done.Status?.State}` };
    } finally {
      await this.removeService(id, 0).catch(() => {});
    }
  }

  /** The project's overlay network (not attachable: only its services' tasks join it). */
  private async ensureNetwork(name: string, projectId: string): Promise<void> {
    try {
      await this.api.getNetwork(name).inspect();
      return;
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    try {
      await this.api.createNetwork({ Name: name, Driver: 'overlay', Attachable: false, CheckDuplicate: true, Labels: swarmLabels(this.key, projectId, 'app') } as Docker.NetworkCreateOptions);
    } catch (e) {
      if (statusOf(e) !== 409) throw e;
    }
  }

  /** Removes a service and waits (bounded) until none of its tasks runs. */
  private async removeService(id: string, graceMs: number): Promise<void> {
    try {
      await this.api.getService(id).remove();
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    const deadline = Date.now() + graceMs + REMOVE_WAIT_MS;
    const filters = { label: [`com.docker.swarm.service.id=${id}`] };
    while (Date.now() < deadline) {
      const tasks = ((await this.api.listTasks().catch(() => [])) as SwarmTask[]).filter((t) => t.ServiceID === id && t.Status?.State === 'running');
      const containers = await this.api.listContainers({ filters }).catch(() => []);
      if (!tasks.length && !containers.length) break;
      await sleep(POLL_MS);
    }
    // The engine (20.10) leaves the containers of a job's completed tasks behind: those on this node go.
    for (const c of await this.api.listContainers({ all: true, filters: { ...filters, status: ['exited', 'created', 'dead'] } }).catch(() => [])) {
      await this.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    }
  }

  private async inspect(nameOrId: string): Promise<(Service & { PreviousSpec?: Docker.ServiceSpec }) | null> {
    try {
      return (await this.api.getService(nameOrId).inspect()) as Service & { PreviousSpec?: Docker.ServiceSpec };
    } catch (e) {
      if (statusOf(e) === 404) return null;
      throw e;
    }
  }

  private async tasksOf(serviceId: string): Promise<SwarmTask[]> {
    try {
      return (await this.api.listTasks({ filters: { service: [serviceId] } })) as SwarmTask[];
    } catch (e) {
      if (statusOf(e) === 404) return [];
      throw e;
    }
  }

  /**
   * Follows the service's output (every task's) into the app's log, replacing the project's previous
   * follower; redacts the new release's secrets and those of the release that runs now (an update that
   * fails leaves the old release running under this follower).
   */
  private follow(spec: ReleaseSpec, name: string, logFile: LogFile, since: number): void {
    const prev = this.followers.get(appOf(spec));
    const current = prev?.current ?? [];
    this.stopFollower(appOf(spec));
    let stream: Readable | null = null;
    let stopped = false;
    this.followers.set(appOf(spec), {
      owner: null,
      current,
      stop: () => {
        stopped = true;
        stream?.destroy();
      },
    });
    const secrets = [...new Set([...current, ...spec.secrets])];
    void this.api
      .getService(name)
      .logs({ stdout: true, stderr: true, follow: true, since })
      .then((s) => {
        stream = s as unknown as Readable;
        if (stopped) return void stream.destroy();
        const out = new PassThrough();
        const err = new PassThrough();
        this.api.modem.demuxStream(stream, out, err);
        const end = () => {
          out.end();
          err.end();
        };
        stream.on('end', end);
        stream.on('close', end);
        stream.on('error', end);
        redactedLines({ stdout: out, stderr: err }, secrets, (s2, line) => logFile.append({ ts: new Date().toISOString(), stream: s2, line }));
      })
      .catch(() => {});
  }

  private stopFollower(projectId: string): void {
    this.followers.get(projectId)?.stop();
    this.followers.delete(projectId);
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

function containerImage(s: Service): string | undefined {
  const t = s.Spec.TaskTemplate;
  return t && 'ContainerSpec' in t ? t.ContainerSpec?.Image : undefined;
}

/** The newest error a task of the release reported (`task: non-zero exit (1)`, a missing mount, ...). */
function taskError(tasks: SwarmTask[]): string | null {
  const failed = tasks
    .filter((t) => t.Status?.Err)
    .sort((a, b) => String(b.Status?.Timestamp ?? '').localeCompare(String(a.Status?.Timestamp ?? '')));
  return failed[0]?.Status?.Err ?? null;
}


function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
