import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { Box, BoxProcess, BoxSpec, ExecOptions } from '../driver.js';
import { chownTree } from '../identity.js';
import { ensureImage } from './base-images.js';
import { engineMessage, envList, exitOf, hostConfig, labelsOf, numericUser, ownerOf, userOf, type DockerContext } from './containers.js';

/**
 * A managed service's box under the docker runtime (docs/services.md "How they run (docker runtime)"):
 * one container of the kind's image (BERTH_IMAGE_POSTGRES, ...) on the project's network, with the
 * limits and security of every container (containers.ts: the project's uid, no capabilities,
 * no-new-privileges), `/data` the service's data folder and `/app` its configuration (read-only).
 * The container's own process only keeps it alive (`sleep` under the engine's init); every process
 * of the service (its first-start initialisation, the server, readiness checks, dump programs) is a
 * `docker exec` in it with an argument array, so the box outlives a crash of the server and keeps its
 * address, as a sandbox box does. The image's own PATH applies (its programs are where it put them).
 */

/** What the container runs to stay up: every Debian, Ubuntu, Alpine and busybox image has `sleep`. */
const KEEP_ALIVE = ['sleep', '2147483647'];

/** The image is not on this machine and could not be pulled: trying again will not help. */
export class ServiceImageMissing extends Error {
  override name = 'ServiceImageMissing';
}

/** Opens the box: the image (pulled once when missing), the project's network, the container started. */
export async function openServiceBox(ctx: DockerContext, spec: BoxSpec): Promise<Box> {
  const image = spec.image!;
  try {
    await ensureImage(ctx.engine, image.ref, image.fix);
  } catch (e) {
    throw new ServiceImageMissing((e as Error).message);
  }
  const user = userOf(spec.identity, ctx.root);
  const id = numericUser(user)!;
  const dataDir = spec.dataDir!;
  for (const dir of [spec.appDir, dataDir]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The service's uid has a name inside (PostgreSQL's programs look it up): the image's own users are not its.
  const passwd = path.join(spec.appDir, 'etc-passwd');
  const group = path.join(spec.appDir, 'etc-group');
  writeFileSync(passwd, `root:x:0:0:root:/root:/bin/sh\nservice:x:${id.uid}:${id.gid}:service:/data:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n`, { mode: 0o644 });
  writeFileSync(group, `root:x:0:\nservice:x:${id.gid}:\nnogroup:x:65534:\n`, { mode: 0o644 });
  if (ctx.root) {
    for (const dir of [spec.appDir, dataDir]) if (ownerOf(dir) !== id.uid) await chownTree(dir, id);
  }
  const network = await ctx.networks.ensure(spec.projectId);
  const binds = [`${spec.appDir}:/app:ro`, `${dataDir}:/data:rw`, `${passwd}:/etc/passwd:ro`, `${group}:/etc/group:ro`];
  const name = `berth-${ctx.key}-${spec.name}`;
  const api = ctx.engine.api;
  // A container of that name a crash of the server left behind goes first.
  await api
    .getContainer(name)
    .remove({ force: true })
    .catch(() => {});
  let container: Docker.Container;
  try {
    container = await api.createContainer({
      name,
      Image: image.ref,
      Entrypoint: [],
      Cmd: KEEP_ALIVE,
      Env: ['HOME=/data', 'LANG=C.UTF-8'],
      User: user,
      WorkingDir: '/data',
      Labels: { ...labelsOf(ctx.key, spec.projectId, 'service'), 'berth.box': spec.name },
      Tty: false,
      OpenStdin: false,
      HostConfig: hostConfig(spec.limits, binds, network, { init: true }),
    });
    await container.start();
  } catch (e) {
    await api
      .getContainer(name)
      .remove({ force: true })
      .catch(() => {});
    throw new Error(`the service's container could not start: ${engineMessage(e)}`);
  }
  const info = await container.inspect();
  const ip = info.NetworkSettings.Networks[network]?.IPAddress;
  if (!ip) {
    await container.remove({ force: true }).catch(() => {});
    throw new Error(`the service's container has no address on the network ${network}`);
  }
  return new ServiceContainerBox(ctx, spec, container, ip, user);
}

interface Tracked {
  proc: BoxProcess;
  pid: number | undefined;
}

class ServiceContainerBox implements Box {
  readonly port = null;
  readonly bindHost = '0.0.0.0';
  readonly paths = { app: '/app', data: '/data', home: null, tmp: '/tmp' };
  private readonly procs = new Set<Tracked>();

  constructor(
    private readonly ctx: DockerContext,
    private readonly spec: BoxSpec,
    private readonly container: Docker.Container,
    readonly host: string,
    private readonly user: string,
  ) {}

  inside(hostPath: string): string {
    for (const [from, to] of [[this.spec.appDir, '/app'], [this.spec.dataDir!, '/data']] as const) {
      const rel = path.relative(from, hostPath);
      if (!rel.startsWith('..') && !path.isAbsolute(rel)) return rel ? path.posix.join(to, ...rel.split(path.sep)) : to;
    }
    throw new Error(`${hostPath} is outside the box`);
  }

  exec(argv: string[], opts: ExecOptions): BoxProcess {
    if (argv.length === 0) throw new Error('empty command');
    // The image's PATH, not the host's: its programs are where the image put them.
    const { PATH: _hostPath, ...env } = opts.env;
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const tracked: Tracked = { proc: null as unknown as BoxProcess, pid: undefined };
    const exited = (async (): Promise<{ code: number | null; signal: string | null; error?: Error }> => {
      try {
        const exec = await this.container.exec({ Cmd: argv, Env: envList(env), WorkingDir: this.inside(opts.cwd), User: this.user, AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
        const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Readable;
        const ended = new Promise<void>((resolve) => {
          stream.once('end', resolve);
          stream.once('close', resolve);
          stream.once('error', () => resolve());
        });
        this.ctx.engine.api.modem.demuxStream(stream, stdout, stderr);
        let over = false;
        void ended.then(() => (over = true));
        // The engine reports the process's host pid a moment after it started.
        void (async () => {
          for (let i = 0; i < 100 && !over && !tracked.pid; i++) {
            const info = await exec.inspect().catch(() => null);
            if (info?.Pid) tracked.pid = info.Pid;
            else await new Promise((r) => setTimeout(r, 50));
          }
        })();
        await ended;
        for (let i = 0; ; i++) {
          const info = await exec.inspect();
          if (!info.Running) return info.ExitCode === null ? { code: null, signal: 'SIGKILL' } : exitOf(info.ExitCode);
          if (i > 100) return { code: null, signal: 'SIGKILL' };
          await new Promise((r) => setTimeout(r, 50));
        }
      } catch (e) {
        return { code: null, signal: null, error: new Error(engineMessage(e)) };
      } finally {
        stdout.end();
        stderr.end();
        this.procs.delete(tracked);
      }
    })();
    tracked.proc = {
      get pid() {
        return tracked.pid;
      },
      stdout,
      stderr,
      exited,
    };
    this.procs.add(tracked);
    return tracked.proc;
  }

  /** Signals the processes run in the box (from the host: the engine signals only the container's own process). */
  signalAll(signal: NodeJS.Signals): void {
    for (const t of this.procs) if (t.pid) kill(t.pid, signal);
  }

  /** Kills every process in the container but the one keeping it up, and waits for the execs to end. */
  async killAll(): Promise<void> {
    const info = await this.container.inspect().catch(() => null);
    const keep = info?.State.Pid;
    const top = await this.container.top().catch(() => null);
    const pidCol = top?.Titles.indexOf('PID') ?? -1;
    const ppidCol = top?.Titles.indexOf('PPID') ?? -1;
    for (const row of top?.Processes ?? []) {
      const pid = Number(row[pidCol]);
      if (!pid || pid === keep || (Number(row[ppidCol]) === keep && row.join(' ').includes(KEEP_ALIVE[1]!))) continue;
      kill(pid, 'SIGKILL');
    }
    for (const t of this.procs) if (t.pid) kill(t.pid, 'SIGKILL');
    await Promise.all([...this.procs].map((t) => t.proc.exited.catch(() => {})));
  }

  async dispose(): Promise<void> {
    await this.container.remove({ force: true }).catch(() => {});
    await Promise.all([...this.procs].map((t) => t.proc.exited.catch(() => {})));
  }

  pids(): number[] {
    return [...this.procs].map((t) => t.pid).filter((p): p is number => typeof p === 'number');
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone already */
  }
}
