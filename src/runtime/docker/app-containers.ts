import { mkdirSync } from 'node:fs';
import { prepareVolume, volumeNotLimited } from '../disk-limits.js';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { pathWithBin } from '../app-commands.js';
import { waitHealthy } from '../app-health.js';
import type { Instance, InstanceDeps } from '../app-instance.js';
import { redactedLines } from '../app-output.js';
import type { CommandStep } from '../command.js';
import type { AppRunner, Identity } from '../driver.js';
import { chownTree } from '../identity.js';
import type { LogFile } from '../logs.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from '../release-spec.js';
import { toolchainEnv } from '../toolchains.js';
import {
  BOX_PATH,
  engineMessage,
  envList,
  exitOf,
  hostConfig,
  labelFilter,
  labelsOf,
  numericUser,
  ownerOf,
  runOneOff,
  statusOf,
  swarmTask,
  userOf,
  waitExit,
  type DockerContext,
} from './containers.js';

/**
 * Apps as containers (contract section 13): one container per instance of a release, from its image,
 * on the project's network, with `/data` the project's volume and the limits and security of every
 * container (containers.ts). The edge and the health check reach it at its address on that network
 * (the host reaches every bridge; other projects' containers do not). The containers outlive the
 * server (`survivesShutdown`): the next start adopts the one running the deployment it starts, and
 * `sweepUnadopted` removes the rest, so one release never runs twice.
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
    const { engine, key, networks, root } = this.ctx;
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
    const imageEnv = envOf(img.Config?.Env ?? []);

    // Who it runs as: the image's own user (a Dockerfile that sets one), else the project's, else 1000:1000.
    const imageUser = (img.Config?.User ?? '').trim();
    const user = spec.imageCommand && imageUser ? imageUser : userOf(spec.identity, root);
    let owner: Identity | null = numericUser(user);
    if (!owner) owner = await this.resolveUser(image, user);

    // The project's volume, on its size-limited image when disk limits are enforced, belongs to that user.
    await prepareVolume(spec.dataDir, spec.diskMb, owner).catch((e: Error) => note(volumeNotLimited(e)));
    try {
      mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
      if (owner && root && ownerOf(spec.dataDir) !== owner.uid) await chownTree(spec.dataDir, owner);
    } catch (e) {
      throw this.fail(note, `the app cannot start: the volume cannot be prepared: ${(e as Error).message}`);
    }
    if (!owner) note(`the image's user "${user}" is not in its /etc/passwd: /data may not be writable for it`);
    else if (!root && ownerOf(spec.dataDir) !== owner.uid) note(`/data belongs to uid ${ownerOf(spec.dataDir)} and the app runs as ${user}: it may not be writable (run Berth as root to hand it over)`);

    const rel = path.relative(spec.appRoot, spec.cwd);
    const cwdInside = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? path.posix.join('/app', ...rel.split(path.sep)) : '/app';
    const env: Record<string, string> = {};
    if (deps.baseEnv.LANG) env.LANG = deps.baseEnv.LANG;
    if (deps.baseEnv.TZ) env.TZ = deps.baseEnv.TZ;
    if (!spec.imageCommand) {
      // Plan images: the release's own programs first, then the image's.
      env.PATH = pathWithBin(cwdInside, imageEnv.PATH ?? BOX_PATH, '/app');
      Object.assign(env, toolchainEnv('/app'));
      env.HOME = '/tmp';
    }
    Object.assign(env, { HOST: '0.0.0.0', NODE_ENV: 'production' }, spec.env, {
      PORT: String(spec.port),
      DATA_DIR: '/data',
      BERTH_PROJECT_ID: spec.projectId,
      BERTH_DEPLOYMENT_ID: spec.deploymentId,
    });

    const base = (cmd: CommandStep | null, kind: 'app' | 'step'): Docker.ContainerCreateOptions => {
      const o: Docker.ContainerCreateOptions = {
        Image: image,
        Env: envList(cmd ? { ...env, ...cmd.env } : env),
        User: user,
        Labels: { ...labelsOf(key, spec.projectId, kind, spec.deploymentId), 'berth.port': String(spec.port), ...(spec.app ? { 'berth.app': spec.app } : {}) },
        Tty: false,
        OpenStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: hostConfig(spec.limits, [`${spec.dataDir}:/data:rw`], net, { init: kind === 'app' }),
      };
      if (cmd) Object.assign(o, { Cmd: cmd.argv, Entrypoint: [], WorkingDir: cwdInside });
      return o;
    };

    let last: CommandStep | null = null;
    if (!spec.imageCommand) {
      let steps: CommandStep[];
      try {
        steps = spec.steps(env);
      } catch (e) {
        throw this.fail(note, `the start command cannot run: ${(e as Error).message}`);
      }
      if (!steps.length) throw this.fail(note, 'the start command is empty');
      // Steps before the last one (migrations, ...) run to completion first, each in its own container.
      for (const step of steps.slice(0, -1)) {
        const p = runOneOff(engine, base(step, 'step'));
        redactedLines(p, spec.secrets, (stream, line) => logFile.append({ ts: new Date().toISOString(), stream, line }));
        const r = await p.exited;
        if (r.code !== 0) throw this.fail(note, `start step "${step.argv[0]}" ${r.error ? `could not run: ${r.error.message}` : `exited with ${r.signal ? `signal ${r.signal}` : `code ${r.code}`}`}`);
      }
      last = steps[steps.length - 1]!;
    }

    // The container, attached before it starts so no output is lost.
    const opts = base(last, 'app');
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

  /** A named user of an image (`node`, `app:app`) as numbers, from the image's /etc/passwd; null when it is not there. */
  private async resolveUser(image: string, user: string): Promise<Identity | null> {
    const [name, group] = user.split(':');
    let c: Docker.Container | null = null;
    try {
      c = await this.ctx.engine.api.createContainer({ Image: image, Entrypoint: [], Cmd: ['/nonexistent'], Labels: { 'berth.instance': this.ctx.key, 'berth.kind': 'step' }, NetworkDisabled: true });
      const passwd = fileFromTar(await streamToBuffer((await c.getArchive({ path: '/etc/passwd' })) as unknown as Readable));
      if (passwd === null) return null;
      for (const line of passwd.split('\n')) {
        const f = line.split(':');
        if (f[0] === name || f[2] === name) {
          const uid = Number(f[2]);
          const gid = group && /^\d+$/.test(group) ? Number(group) : Number(f[3]);
          return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
        }
      }
      return null;
    } catch {
      return null;
    } finally {
      if (c) await c.remove({ force: true }).catch(() => {});
    }
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

function envOf(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of list) {
    const i = kv.indexOf('=');
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

function streamToBuffer(s: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    s.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 1024 * 1024) chunks.push(c);
    });
    s.once('end', () => resolve(Buffer.concat(chunks)));
    s.once('error', reject);
  });
}

/** The first regular file of a tar archive (the engine's archive of one path), as text. */
function fileFromTar(buf: Buffer): string | null {
  let i = 0;
  while (i + 512 <= buf.length) {
    const header = buf.subarray(i, i + 512);
    if (header.every((b) => b === 0)) return null;
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(header[156]!);
    if (type === '0' || type === '\0') return buf.subarray(i + 512, i + 512 + size).toString('utf8');
    i += 512 + Math.ceil(size / 512) * 512;
  }
  return null;
}
