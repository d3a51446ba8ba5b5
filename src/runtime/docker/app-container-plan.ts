import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { pathWithBin } from '../app-commands.js';
import type { InstanceDeps } from '../app-instance.js';
import type { CommandStep } from '../command.js';
import { prepareVolume, volumeNotLimited } from '../disk-limits.js';
import type { Identity } from '../driver.js';
import { chownTree } from '../identity.js';
import type { ReleaseSpec } from '../release-spec.js';
import { toolchainEnv } from '../toolchains.js';
import { BOX_PATH, envList, hostConfig, labelsOf, numericUser, ownerOf, userOf, type DockerContext } from './containers.js';

/**
 * What an app's container is made of, before any runs (app-containers.ts runs them): the user it
 * runs as and its volume handed to that user, its working directory and environment, and the
 * engine's create options of its start steps and of the app itself.
 */
export interface ContainerPlan {
  /** The user the containers run as (`uid:gid`, or the image's own user name). */
  user: string;
  /** The folder the start command runs in, inside the container (`/app` or below). */
  cwd: string;
  /** The environment of every step (a step's own env is added to it). */
  env: Record<string, string>;
  /** The create options of a step's container (`kind` 'step') or of the app's (`cmd` null: the image's command). */
  options(cmd: CommandStep | null, kind: 'app' | 'step'): Docker.ContainerCreateOptions;
}

/**
 * Plans the containers of a release from its image (on the project's network `net`), and prepares
 * its volume for the user they run as. `note` tells the runtime log what may go wrong later (a
 * volume not size-limited, a /data the user may not write). Throws when the volume cannot be made.
 */
export async function planContainers(ctx: DockerContext, spec: ReleaseSpec, deps: InstanceDeps, img: Docker.ImageInspectInfo, net: string, note: (line: string) => void): Promise<ContainerPlan> {
  const image = spec.image!;
  // Who it runs as: the image's own user (a Dockerfile that sets one), else the project's, else 1000:1000.
  const imageUser = (img.Config?.User ?? '').trim();
  const user = spec.imageCommand && imageUser ? imageUser : userOf(spec.identity, ctx.root);
  const owner: Identity | null = numericUser(user) ?? (await resolveUser(ctx, image, user));

  // The project's volume, on its size-limited image when disk limits are enforced, belongs to that user.
  await prepareVolume(spec.dataDir, spec.diskMb, owner).catch((e: Error) => note(volumeNotLimited(e)));
  try {
    mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
    if (owner && ctx.root && ownerOf(spec.dataDir) !== owner.uid) await chownTree(spec.dataDir, owner);
  } catch (e) {
    throw new Error(`the volume cannot be prepared: ${(e as Error).message}`);
  }
  if (!owner) note(`the image's user "${user}" is not in its /etc/passwd: /data may not be writable for it`);
  else if (!ctx.root && ownerOf(spec.dataDir) !== owner.uid) note(`/data belongs to uid ${ownerOf(spec.dataDir)} and the app runs as ${user}: it may not be writable (run Berth as root to hand it over)`);

  const rel = path.relative(spec.appRoot, spec.cwd);
  const cwd = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? path.posix.join('/app', ...rel.split(path.sep)) : '/app';
  const env = appEnv(spec, deps.baseEnv, envOf(img.Config?.Env ?? []).PATH, cwd);
  const options = (cmd: CommandStep | null, kind: 'app' | 'step'): Docker.ContainerCreateOptions => {
    const o: Docker.ContainerCreateOptions = {
      Image: image,
      Env: envList(cmd ? { ...env, ...cmd.env } : env),
      User: user,
      Labels: { ...labelsOf(ctx.key, spec.projectId, kind, spec.deploymentId), 'berth.port': String(spec.port), ...(spec.app ? { 'berth.app': spec.app } : {}) },
      Tty: false,
      OpenStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      HostConfig: hostConfig(spec.limits, [`${spec.dataDir}:/data:rw`], net, { init: kind === 'app' }),
    };
    if (cmd) Object.assign(o, { Cmd: cmd.argv, Entrypoint: [], WorkingDir: cwd });
    return o;
  };
  return { user, cwd, env, options };
}

/** The app's environment: the release's (PORT, DATA_DIR, ...) over the image's PATH and the toolchains' for plan images. */
function appEnv(spec: ReleaseSpec, baseEnv: Record<string, string>, imagePath: string | undefined, cwd: string): Record<string, string> {
  const env: Record<string, string> = {};
  if (baseEnv.LANG) env.LANG = baseEnv.LANG;
  if (baseEnv.TZ) env.TZ = baseEnv.TZ;
  if (!spec.imageCommand) {
    // Plan images: the release's own programs first, then the image's.
    env.PATH = pathWithBin(cwd, imagePath ?? BOX_PATH, '/app');
    Object.assign(env, toolchainEnv('/app'));
    env.HOME = '/tmp';
  }
  return Object.assign(env, { HOST: '0.0.0.0', NODE_ENV: 'production' }, spec.env, {
    PORT: String(spec.port),
    DATA_DIR: '/data',
    BERTH_PROJECT_ID: spec.projectId,
    BERTH_DEPLOYMENT_ID: spec.deploymentId,
  });
}

/** A named user of an image (`node`, `app:app`) as numbers, from the image's /etc/passwd; null when it is not there. */
async function resolveUser(ctx: DockerContext, image: string, user: string): Promise<Identity | null> {
  const [name, group] = user.split(':');
  let c: Docker.Container | null = null;
  try {
    c = await ctx.engine.api.createContainer({ Image: image, Entrypoint: [], Cmd: ['/nonexistent'], Labels: { 'berth.instance': ctx.key, 'berth.kind': 'step' }, NetworkDisabled: true });
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
