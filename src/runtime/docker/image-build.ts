import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, existsSync, constants as fsConstants, mkdirSync, mkdtempSync, realpathSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ImageBuilder, ImageBuildInput } from '../driver.js';
import { redactedLines } from '../app-output.js';
import { Redactor } from '../redact.js';
import type { DockerEngine } from './engine.js';
import { ensureBaseImage } from './base-images.js';
import { installEgressRules } from './egress-rules.js';
import { findProgram } from '../sandbox-driver.js';
import { acquireContextAlias } from './build-context.js';

/**
 * The docker runtime's image builder (contract section 13): `docker build` of the 20.10 CLI with
 * BuildKit over a context folder, for the project's own Dockerfile or one Berth generated from the
 * build plan. The CLI runs with an argument array and an environment of its own (PATH, DOCKER_HOST,
 * DOCKER_BUILDKIT, an empty DOCKER_CONFIG, the secret values), never the server's. Secrets go in as
 * BuildKit secrets read from the CLI's environment (`--secret id=K,env=...`): never an argument, a
 * build arg, a label or a layer; every output line is redacted of them before it reaches the log.
 */

/** The base image of each runtime when `BERTH_IMAGE_<RUNTIME>` does not name one. */
export const DEFAULT_BASE_IMAGES: Readonly<Record<string, string>> = {
  node: 'node:20-bookworm-slim',
  bun: 'oven/bun:1',
  python: 'python:3.12-slim-bookworm',
  go: 'golang:1.22-bookworm',
  ruby: 'ruby:3.3-slim-bookworm',
  php: 'php:8.2-cli-bookworm',
  rust: 'rust:1-slim-bookworm',
  static: 'node:20-bookworm-slim',
};

/** The environment variable naming a runtime's base image: `BERTH_IMAGE_NODE`, `BERTH_IMAGE_PYTHON`, ... */
export function baseImageVar(runtime: string): string {
  return `BERTH_IMAGE_${runtime.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** The docker CLI that builds (its 20.10 release has BuildKit built in; newer ones need buildx). */
export const DEFAULT_DOCKER_CLI = '/usr/bin/docker';
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const INSTALL_HINT = 'install docker.io (its docker CLI builds images)';
/** The last output lines kept to say why a build failed. */
const TAIL_LINES = 40;
const MAX_MESSAGE = 600;
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Secrets larger than this go to the CLI as files (`src=`) rather than environment variables (`env=`). */
const MAX_ENV_SECRET = 64 * 1024;

export interface GeneratedDockerfileOptions {
  base: string;
  uid: number;
  gid: number;
  /** Where the app's commands run inside the image (default `/app`). */
  workdir?: string;
}

/**
 * The Dockerfile of the image Berth makes from a built plan: the release folder (built on the host
 * by the build steps) copied to `/app`, owned by the project's identity, which the image runs as.
 * No CMD: Berth gives the command when it starts the container.
 */
export function generatedDockerfile(opts: GeneratedDockerfileOptions): string {
  const { base, uid, gid } = opts;
  const workdir = opts.workdir ?? '/app';
  if (!base || /[\s\x00-\x1f\x7f]/.test(base)) throw new Error(`the base image "${base}" is not an image reference`);
  for (const [name, v] of [
    ['uid', uid],
    ['gid', gid],
  ] as const) {
    if (!Number.isInteger(v) || v < 0) throw new Error(`the ${name} of a generated image must be a non-negative integer (it is ${v})`);
  }
  if (!workdir.startsWith('/') || /[\x00-\x1f\x7f]/.test(workdir)) throw new Error(`the workdir "${workdir}" of a generated image must be an absolute path on one line`);
  return [`FROM ${base}`, `COPY --chown=${uid}:${gid} . /app`, `WORKDIR ${workdir}`, `USER ${uid}:${gid}`, ''].join('\n');
}

export interface DockerImageBuilderOptions {
  /** For DOCKER_HOST, BERTH_IMAGE_<RUNTIME>, BERTH_DOCKER_CLI and PATH. */
  env: NodeJS.ProcessEnv;
  engine: DockerEngine;
  instanceKey: string;
}

/** One field of a `--secret` value: the CLI reads it as CSV, so a field with a comma or quote is quoted. */
function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export class DockerImageBuilder implements ImageBuilder {
  private readonly env: NodeJS.ProcessEnv;
  private readonly engine: DockerEngine;
  readonly instanceKey: string;
  /** Context links (build-context.ts) a build is using now. */
  private readonly aliases = new Set<string>();

  constructor(opts: DockerImageBuilderOptions) {
    this.env = opts.env;
    this.engine = opts.engine;
    this.instanceKey = opts.instanceKey;
  }

  baseImage(runtime: string): string | null {
    const configured = this.env[baseImageVar(runtime)]?.trim();
    if (configured) return configured;
    return Object.hasOwn(DEFAULT_BASE_IMAGES, runtime) ? DEFAULT_BASE_IMAGES[runtime]! : null;
  }

  ensureBaseImage(runtime: string): Promise<string> {
    return ensureBaseImage(this.engine, runtime, this.baseImage(runtime));
  }

  /** The docker CLI to run: `BERTH_DOCKER_CLI`, else /usr/bin/docker when it is there, else `docker` on PATH. */
  cli(): string {
    const configured = this.env.BERTH_DOCKER_CLI?.trim();
    if (configured) return configured;
    try {
      accessSync(DEFAULT_DOCKER_CLI, fsConstants.X_OK);
      return DEFAULT_DOCKER_CLI;
    } catch {
      return 'docker';
    }
  }

  async build(input: ImageBuildInput): Promise<void> {
    if (!input.dockerfile === !input.dockerfileText) throw new Error('an image build takes either a Dockerfile path or a generated Dockerfile text');
    if (input.signal.aborted) throw new Error('the build was cancelled');
    if (Date.now() >= input.deadline) throw new Error('the image build timed out');

    const secretValues = Object.values(input.secrets);
    const redactor = new Redactor(secretValues);
    const work = mkdtempSync(path.join(os.tmpdir(), 'berth-image-build-'));
    let release = () => {};
    try {
      // A DOCKER_CONFIG of its own: no credentials, contexts or plugins of the server's user.
      const configDir = path.join(work, 'config');
      mkdirSync(configDir, { mode: 0o700 });
      writeFileSync(path.join(configDir, 'config.json'), '{}\n', { mode: 0o600 });
      // The CLI keys BuildKit's kept context by this node id and the context's path: one id per Berth, not a new one per build.
      writeFileSync(path.join(configDir, '.buildNodeID'), createHash('sha256').update(`berth-build-node:${this.instanceKey}`).digest('hex'), { mode: 0o600 });

      let dockerfile = input.dockerfile ? path.resolve(input.dockerfile) : '';
      if (input.dockerfileText !== undefined) {
        // Outside the context, with a Dockerfile-specific ignore file beside it: BuildKit reads
        // `<Dockerfile>.dockerignore` instead of the context's `.dockerignore`, so a generated image
        // gets the whole built release (node_modules, build output) whatever the project ignores.
        const dir = path.join(work, 'dockerfile');
        mkdirSync(dir, { mode: 0o700 });
        dockerfile = path.join(dir, 'Dockerfile');
        writeFileSync(dockerfile, input.dockerfileText, { mode: 0o600 });
        writeFileSync(path.join(dir, 'Dockerfile.dockerignore'), '.git\n', { mode: 0o600 });
      }

      const childEnv: Record<string, string> = {
        PATH: this.env.PATH || DEFAULT_PATH,
        DOCKER_BUILDKIT: '1',
        DOCKER_CONFIG: configDir,
      };
      if (this.env.DOCKER_HOST) childEnv.DOCKER_HOST = this.env.DOCKER_HOST;
      // `--flag=value` throughout: a value that starts with `-` is never read as a flag.
      const args = ['build', '--progress=plain', '--pull=false', `--tag=${input.tag}`, `--file=${dockerfile}`];
      if (input.noCache) args.push('--no-cache');
      const labels = { 'berth.instance': this.instanceKey, ...input.labels };
      for (const [k, v] of Object.entries(labels)) args.push(`--label=${k}=${v}`);
      for (const [k, v] of Object.entries(input.buildArgs)) args.push(`--build-arg=${k}=${v}`);
      Object.entries(input.secrets).forEach(([k, v], i) => {
        const id = csvField(`id=${k}`);
        if (v.includes('\0') || Buffer.byteLength(v) > MAX_ENV_SECRET) {
          // Too big for one environment string (Linux caps each at 128 KiB), or not one at all: a
          // file in the build's own 0700 folder, removed with it.
          const dir = path.join(work, 'secrets');
          mkdirSync(dir, { recursive: true, mode: 0o700 });
          const file = path.join(dir, String(i));
          writeFileSync(file, v, { mode: 0o600 });
          args.push(`--secret=${id},${csvField(`src=${file}`)}`);
          return;
        }
        // The value reaches the CLI through its environment under a name of ours, never an argument.
        const envName = `BERTH_BUILD_SECRET_${i}`;
        childEnv[envName] = v;
        args.push(`--secret=${id},env=${envName}`);
      });
      if (input.dockerfile) await readableContext(input.contextDir);
      const context = acquireContextAlias(input.contextAlias, input.contextDir, this.aliases);
      release = context.release;
      args.push('--', context.path);
      // BuildKit runs RUN steps on the engine's default bridge (it takes no other network): the
      // host's egress rules for it are in place before a step runs (root with nftables).
      const nft = process.getuid?.() === 0 ? findProgram('nft') : null;
      if (nft) await installEgressRules(nft, this.engine, this.env);
      const storage = input.diskMb ? await this.storageRoot() : null;
      await this.run(this.cli(), args, childEnv, input, redactor, storage);
    } finally {
      release();
      rmSync(work, { recursive: true, force: true });
    }
  }

  private storage: Promise<string | null> | null = null;

  /**
   * The engine's storage folder (`DockerRootDir`) when it is on this machine (a local socket and the
   * folder here), else null: where a build's `RUN` layers are written.
   */
  storageRoot(): Promise<string | null> {
    this.storage ??= (async () => {
      const host = this.env.DOCKER_HOST?.trim();
      if (host && !host.startsWith('unix://')) return null;
      try {
        const root = ((await this.engine.api.info()) as { DockerRootDir?: string }).DockerRootDir;
        return root && existsSync(root) ? root : null;
      } catch {
        return null;
      }
    })();
    return this.storage;
  }

  private run(cli: string, args: string[], env: Record<string, string>, input: ImageBuildInput, redactor: Redactor, storage: string | null = null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const tail: string[] = [];
      let stopped: 'cancelled' | 'timeout' | 'disk' | null = null;
      let spawnError: NodeJS.ErrnoException | null = null;

      let child: ChildProcess;
      try {
        child = spawn(cli, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        // Node names an argument or variable it refuses, with its value: redact it.
        return reject(new Error(`cannot run the docker CLI (${cli}): ${redactor.redactString((e as Error).message)}`));
      }
      redactedLines(child, Object.values(input.secrets), (_stream, line) => {
        tail.push(line);
        if (tail.length > TAIL_LINES) tail.shift();
        input.log('stdout', line);
      });

      const stop = (why: 'cancelled' | 'timeout' | 'disk') => {
        if (stopped) return;
        stopped = why;
        // BuildKit cancels the build in the daemon when the CLI's session goes away.
        child.kill('SIGKILL');
      };
      const onAbort = () => stop('cancelled');
      input.signal.addEventListener('abort', onAbort, { once: true });
      // setTimeout takes at most 2^31-1 ms (24 days); a longer delay would fire at once.
      const timer = setTimeout(() => stop('timeout'), Math.min(MAX_TIMER_MS, Math.max(0, input.deadline - Date.now())));
      const disk = storage && input.diskMb ? watchStorage(storage, input.diskMb, () => stop('disk')) : null;

      child.on('error', (e: NodeJS.ErrnoException) => {
        spawnError = e;
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        disk?.stop();
        input.signal.removeEventListener('abort', onAbort);
        if (stopped === 'cancelled') return reject(new Error('the build was cancelled'));
        if (stopped === 'disk') {
          const line = `the build's image layers are full: Docker's storage grew by ${disk!.grownMb()} MB while it ran, past the ${input.diskMb} MB build.diskMb allows (raise resources.build.diskMb)`;
          input.log('stderr', `[berth] ${line}`);
          return reject(new Error(line));
        }
        if (stopped === 'timeout') return reject(new Error('the image build timed out'));
        if (spawnError) {
          if (spawnError.code === 'ENOENT') return reject(new Error(`no docker CLI (${cli}): ${INSTALL_HINT}`));
          return reject(new Error(`cannot run the docker CLI (${cli}): ${redactor.redactString(spawnError.message)}: ${INSTALL_HINT}`));
        }
        if (code === 0) return resolve();
        reject(new Error(failureMessage(cli, tail)));
      });
    });
  }

  async tag(from: string, to: string): Promise<void> {
    const at = to.lastIndexOf(':');
    if (at <= 0 || to.includes('@')) throw new Error(`not an image tag: ${to}`);
    await this.engine.api.getImage(from).tag({ repo: to.slice(0, at), tag: to.slice(at + 1) });
  }

  async remove(tags: string[]): Promise<void> {
    let failure: Error | null = null;
    for (const tag of tags) {
      try {
        await this.engine.api.getImage(tag).remove({ force: false, noprune: false });
      } catch (e) {
        const status = (e as { statusCode?: number }).statusCode;
        // Gone already, or still used by a container (the next prune takes it).
        if (status === 404 || status === 409) continue;
        failure ??= new Error(`cannot remove the image ${tag}: ${(e as Error).message}`);
      }
    }
    if (failure) throw failure;
  }
}

/** How often a build's growth of the engine's storage is read (statfs: a few microseconds). */
const STORAGE_POLL_MS = 200;

/**
 * Watches the filesystem of the engine's storage while a build runs and calls `over` once it holds
 * more than `limitMb` beyond what it held at the start. A build's `RUN` layers are written there, in
 * the engine's folders, so the build's own folder image cannot bound them; this bounds what the build
 * can take from the host. It counts every write to that filesystem meanwhile, so two large builds or
 * a busy volume at once stop a build earlier than its own layers would (docs/runtime.md "Disk limits").
 */
function watchStorage(root: string, limitMb: number, over: () => void): { stop(): void; grownMb(): number } {
  const free = () => {
    const s = statfsSync(root);
    return s.bavail * s.bsize;
  };
  const start = free();
  let grown = 0;
  const timer = setInterval(() => {
    try {
      grown = Math.max(grown, start - free());
    } catch {
      return;
    }
    if (grown > limitMb * 1024 * 1024) over();
  }, STORAGE_POLL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer), grownMb: () => Math.round(grown / 1024 ** 2) };
}

/**
 * Gives a project Dockerfile's context the modes a checkout made with umask 022 has (files 0644,
 * folders and executables 0755): Berth writes sources under umask 077, so their files are 0600, and
 * a `COPY` without `--chown` (root-owned files, modes kept) would leave them unreadable to the
 * image's non-root user. Berth builds from a release folder in the data dir, below folders only root
 * can enter: nothing else on the host can read it. `chmod -R` never follows the links it meets
 * inside; a context reached through a link is left alone.
 */
function readableContext(dir: string): Promise<void> {
  const resolved = path.resolve(dir);
  try {
    if (realpathSync(resolved) !== resolved) return Promise.resolve();
  } catch {
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const child = spawn('chmod', ['-R', 'go+rX', '--', resolved], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (err.length < 1000) err += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`could not make the build context readable: ${err.trim() || `exit ${code}`}`))));
  });
}

/**
 * Why a build failed, from the CLI's last (already redacted) lines: BuildKit ends a failed build with
 * ` > [2/4] RUN ...:` between `------` rules (the failing step), then the error itself.
 */
function failureMessage(cli: string, tail: string[]): string {
  const text = tail.join('\n');
  if (/buildx component is missing/i.test(text)) {
    return `the docker CLI at ${cli} cannot build with BuildKit: ${INSTALL_HINT}, or point BERTH_DOCKER_CLI at a docker 20.10 CLI`;
  }
  const lines = tail.map((l) => l.trim()).filter((l) => l && l !== '------');
  let step: string | null = null;
  for (const l of lines) {
    const m = /^> (.*):$/.exec(l);
    if (m) step = m[1]!;
  }
  const last = lines.at(-1) ?? 'the docker CLI exited without saying why';
  const errLine = [...lines].reverse().find((l) => /^#\d+ ERROR: /.test(l));
  const reason = last.startsWith('> ') && errLine ? errLine.replace(/^#\d+ ERROR: /, '') : last;
  const msg = step ? `the Dockerfile build failed at ${step}: ${reason}` : `the Dockerfile build failed: ${reason}`;
  return msg.length > MAX_MESSAGE ? `${msg.slice(0, MAX_MESSAGE - 1)}…` : msg;
}
