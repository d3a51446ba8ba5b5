import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { waitHealthy } from '../app-health.js';
import type { Instance, InstanceDeps } from '../app-instance.js';
import { redactedLines } from '../app-output.js';
import type { CommandStep } from '../command.js';
import type { AppRunner } from '../driver.js';
import type { LogFile } from '../logs.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from '../release-spec.js';
import { planContainers, type ContainerPlan } from './app-container-plan.js';
import { containerUsage } from './container-stats.js';
import { engineMessage, exitOf, labelFilter, labelsOf, runOneOff, statusOf, swarmTask, waitExit, type DockerContext } from './containers.js';

/**
 * Apps as containers (contract section 13): one container per instance of a release, from its image,
 * on the project's network, with `/data` the project's volume and the limits and security of every
 * container (containers.ts). The edge and the health check reach it at its address on that network
 * (the host reaches every bridge; other projects' containers do not). The containers outlive the
 * server (`survivesShutdown`): the next start adopts the one running the deployment it starts, and
 * `sweepUnadopted` removes the rest, so one release never runs twice. What a release's containers are
 * made of (user, volume, environment, create options) is app-container-plan.ts.
 */
export class ContainerApps implements AppRunner {
  readonly survivesShutdown = true;
  /** Containers this runner made or adopted (ids). */
  private readonly mine = new Set<string>();
  /** Names of containers being made (not in `mine` yet: a sweep must leave them alone). */
  private readonly pending = new Set<string>();
  private seq = 0;

  constructor(private readonly ctx: DockerContext) {}

  async start(spec: ReleaseSpec, deps: InstanceDeps): Promise<Instance> {
    if (!spec.image) throw new StartError('the release has no image to run');
    const logFile = deps.logs.runtime(appOf(spec));
    const note = (line: string) => logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${line}` });
    const adopted = await this.adopt(spec, deps, logFile, note);
    if (adopted) return adopted;
    return this.create(spec, deps, logFile, note);
  }

  /** A running container of the same deployment that a previous run of this server left: taken over as it runs. */
  private async adopt(spec: ReleaseSpec, deps: InstanceDeps, logFile: LogFile, note: (l: string) => void): Promise<Instance | null> {
    const { engine, key, networks } = this.ctx;
    let list: Docker.ContainerInfo[];
    try {
      list = await engine.api.listContainers({
        filters: { ...labelFilter(labelsOf(key, spec.projectId, 'app', spec.deploymentId)), status: ['running'] },
      });
    } catch (e) {
      throw this.fail(note, `the Docker Engine does not answer: ${engineMessage(e)}`);
    }
    const net = networks.nameOf(appOf(spec));
    for (const c of list) {
      if (this.mine.has(c.Id) || swarmTask(c.Labels)) continue;
      const name = (c.Names[0] ?? c.Id).replace(/^\//, '');
      const container = engine.api.getContainer(c.Id);
      this.mine.add(c.Id);
      let info: Docker.ContainerInspectInfo;
      try {
        info = await container.inspect();
      } catch {
        continue;
      }
      const ip = info.NetworkSettings.Networks[net]?.IPAddress;
      if (!info.State.Running || !ip || info.Config.Labels?.['berth.port'] !== String(spec.port)) {
        // Not something the edge can reach with this release's settings: it goes.
        await container.remove({ force: true }).catch(() => {});
        this.mine.delete(c.Id);
        continue;
      }
      const since = Math.floor(Date.now() / 1000);
      let logs: Readable | null = null;
      try {
        logs = (await container.logs({ follow: true, stdout: true, stderr: true, since })) as unknown as Readable;
      } catch {
        /* the container's output is lost, it still serves */
      }
      const inst = this.track(container, info, ip, spec, deps, logFile, logs);
      note(`adopted the running container ${name} of ${spec.deploymentId} (${ip} port ${spec.port}, pid ${info.State.Pid})`);
      const healthy = await waitHealthy(inst.upstream, inst.exited, deps.healthTimeoutMs ?? 30000);
      if (healthy.ok) return inst;
      note(`the adopted container ${name} is not healthy (${healthy.reason}): starting a new one`);
      await this.stop(inst, deps.graceMs);
    }
    return null;
  }

  private async create(spec: ReleaseSpec, deps: InstanceDeps, logFile: LogFile, note: (l: string) => void): Promise<Instance> {
    const { engine, key, networks } = this.ctx;
    const image = spec.image!;
    let net: string;
    let img: Docker.ImageInspectInfo;
    try {
      net = await networks.ensure(appOf(spec));
      img = await engine.api.getImage(image).inspect();
    } catch (e) {
      if (statusOf(e) === 404) throw this.fail(note, `the release image ${image} is not on this machine: deploy again`);
      throw this.fail(note, `the app cannot start: ${engineMessage(e)}`);
    }
    let plan: ContainerPlan;
    try {
      plan = await planContainers(this.ctx, spec, deps, img, net, note);
    } catch (e) {
      throw this.fail(note, `the app cannot start: ${(e as Error).message}`);
    }
    const last = spec.imageCommand ? null : await this.runSteps(spec, plan, logFile, note);

    // The container, attached before it starts so no output is lost.
    const opts = plan.options(last, 'app');
    let container: Docker.Container | null = null;
    let name = '';
    const n = /-(\d+)$/.exec(deps.boxName(appOf(spec)))?.[1] ?? String(++this.seq);
    for (let attempt = 0; !container; attempt++) {
      name = `berth-${key}-${appOf(spec)}-${n}${attempt ? `-${Date.now().toString(36)}${attempt}` : ''}`;
      this.pending.add(name);
      try {
        container = await engine.api.createContainer({ ...opts, name });
        this.mine.add(container.id);
      } catch (e) {
        if (statusOf(e) === 409 && attempt < 3) continue;
        throw this.fail(note, `the app cannot start: the container could not be created: ${engineMessage(e)}`);
      } finally {
        this.pending.delete(name);
      }
    }
    const c = container;
    const gone = async () => {
      await c.remove({ force: true }).catch(() => {});
      this.mine.delete(c.id);
    };
    let logs: Readable;
    let info: Docker.ContainerInspectInfo;
    try {
      logs = (await c.attach({ stream: true, stdout: true, stderr: true, logs: false })) as unknown as Readable;
      try {
        await c.start();
      } catch (e) {
        logs.destroy();
        const msg = engineMessage(e);
        throw new Error(/executable file not found|no such file or directory/i.test(msg) ? `could not start "${last?.argv[0] ?? 'the image command'}": program not found` : `the container could not start: ${msg}`);
      }
      info = await c.inspect();
    } catch (e) {
      await gone();
      throw this.fail(note, `the app cannot start: ${(e as Error).message}`);
    }
    const ip = info.NetworkSettings.Networks[net]?.IPAddress;
    if (!ip) {
      logs.destroy();
      await gone();
      throw this.fail(note, `the app cannot start: the container has no address on the network ${net}`);
    }
    const inst = this.track(c, info, ip, spec, deps, logFile, logs);
    note(`starting ${spec.deploymentId} in the container ${name} at ${ip} port ${spec.port} (pid ${info.State.Pid})`);
    const healthy = await waitHealthy(inst.upstream, inst.exited, deps.healthTimeoutMs ?? 30000);
    if (!healthy.ok) {
      await this.stop(inst, deps.graceMs);
      throw this.fail(note, `the app did not become healthy: ${healthy.reason}`);
    }
    return inst;
  }

  /**
   * Runs the start steps before the last one (migrations, ...) to completion, each in its own
   * container, and returns the last (the app's command).
   */
  private async runSteps(spec: ReleaseSpec, plan: ContainerPlan, logFile: LogFile, note: (l: string) => void): Promise<CommandStep> {
    let steps: CommandStep[];
    try {
      steps = spec.steps(plan.env);
    } catch (e) {
      throw this.fail(note, `the start command cannot run: ${(e as Error).message}`);
    }
    if (!steps.length) throw this.fail(note, 'the start command is empty');
    for (const step of steps.slice(0, -1)) {
      const p = runOneOff(this.ctx.engine, plan.options(step, 'step'));
      redactedLines(p, spec.secrets, (stream, line) => logFile.append({ ts: new Date().toISOString(), stream, line }));
      const r = await p.exited;
      if (r.code !== 0) throw this.fail(note, `start step "${step.argv[0]}" ${r.error ? `could not run: ${r.error.message}` : `exited with ${r.signal ? `signal ${r.signal}` : `code ${r.code}`}`}`);
    }
    return steps[steps.length - 1]!;
  }

  /**
   * The Instance of a running container: its output (redacted, line by line) into the runtime log,
   * `exited` from the engine's wait. A container that exits on its own is removed (the supervisor
   * starts a new one); `detach()` lets go of it as it runs.
   */
  private track(c: Docker.Container, info: Docker.ContainerInspectInfo, ip: string, spec: ReleaseSpec, deps: InstanceDeps, logFile: LogFile, logs: Readable | null): Instance {
    const { engine } = this.ctx;
    const out = new PassThrough();
    const err = new PassThrough();
    if (logs) {
      engine.api.modem.demuxStream(logs, out, err);
      const end = () => {
        out.end();
        err.end();
      };
      logs.once('end', end);
      logs.once('close', end);
      logs.once('error', end);
    }
    redactedLines({ stdout: out, stderr: err }, spec.secrets, (stream, line) => logFile.append({ ts: new Date().toISOString(), stream, line }));
    const ac = new AbortController();
    let detached = false;
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      void waitExit(c, ac.signal).then((code) => {
        if (detached) return;
        resolve(code === null ? { code: null, signal: 'SIGKILL' } : exitOf(code));
      });
    });
    const upstream: Upstream = { host: ip, port: spec.port, key: `${ip}:${spec.port}` };
    const graceS = Math.max(1, Math.ceil((deps.graceMs ?? 5000) / 1000));
    const remove = async () => {
      await c.remove({ force: true }).catch(() => {});
      this.mine.delete(c.id);
      logs?.destroy();
    };
    const inst: Instance = {
      spec,
      upstream,
      pid: info.State.Pid || undefined,
      startedAt: new Date().toISOString(),
      stopping: false,
      exited,
      box: {
        signalAll: (signal: NodeJS.Signals) => {
          void c.kill({ signal }).catch(() => {});
        },
        dispose: async () => {
          await c.stop({ t: graceS }).catch(() => {});
          await remove();
        },
        // The metrics sampler's reading (issue 38): the Engine's stats of the container.
        usage: () => containerUsage(c),
      },
      detach: () => {
        detached = true;
        ac.abort();
        logs?.destroy();
      },
    };
    // A crash: the exited container goes (its output is in the runtime log); the supervisor makes a new one.
    void exited.then(() => {
      if (!inst.stopping) void remove();
    });
    return inst;
  }

  /** SIGTERM, the grace period, then the container is removed. */
  private async stop(inst: Instance, graceMs = 5000): Promise<void> {
    inst.stopping = true;
    inst.box.signalAll('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([inst.exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    if (timer) clearTimeout(timer);
    await inst.box.dispose();
  }

  private fail(note: (l: string) => void, message: string): StartError {
    note(message);
    return new StartError(message);
  }

  /** Removes the app containers of this server that no start() made or adopted since this runner was made. */
  async sweepUnadopted(): Promise<void> {
    const { engine, key } = this.ctx;
    let list: Docker.ContainerInfo[];
    try {
      list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key, 'berth.kind': 'app' }) });
    } catch {
      return;
    }
    const names = (c: Docker.ContainerInfo) => c.Names.map((x) => x.replace(/^\//, ''));
    await Promise.all(
      list
        .filter((c) => !this.mine.has(c.Id) && !swarmTask(c.Labels) && !names(c).some((x) => this.pending.has(x)))
        .map((c) =>
          engine.api
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {}),
        ),
    );
  }

  /** Removes one app's containers (a preview environment's: label `berth.app`) and its network. */
  async forgetApp(app: string): Promise<void> {
    await this.removeContainers({ 'berth.app': app });
    await this.ctx.networks.remove(app);
  }

  /** Removes the project's containers (any kind, any state) and its network. */
  async forgetProject(projectId: string): Promise<void> {
    const { engine, key, networks } = this.ctx;
    await this.removeContainers({ 'berth.project': projectId });
    await networks.remove(projectId);
    // Its release images go too (they carry the project's label from the build).
    for (const img of await engine.api.listImages({ filters: labelFilter({ 'berth.instance': key, 'berth.project': projectId }) })) {
      await engine.api
        .getImage(img.Id)
        .remove({ force: true })
        .catch((e) => {
          if (statusOf(e) !== 404) throw e;
        });
    }
  }

  /** Removes this instance's containers (not Swarm tasks) carrying `labels`, whatever their state. */
  private async removeContainers(labels: Record<string, string>): Promise<void> {
    const { engine, key } = this.ctx;
    const list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key, ...labels }) });
    await Promise.all(
      list.filter((c) => !swarmTask(c.Labels)).map(async (c) => {
        this.mine.delete(c.Id);
        await engine.api
          .getContainer(c.Id)
          .remove({ force: true })
          .catch((e) => {
            if (statusOf(e) !== 404) throw e;
          });
      }),
    );
  }
}
