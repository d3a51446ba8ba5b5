import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { constants as osConstants } from 'node:os';
import type Docker from 'dockerode';
import { DEFAULT_PIDS_MAX, type Limits } from '../cgroups.js';
import type { BoxProcess, Identity } from '../driver.js';
import type { DockerEngine } from './engine.js';
import { CA_VARIABLES } from '../host-ca.js';
import { installEgressRules } from './egress-rules.js';

/**
 * What every container Berth makes has in common (contract section 13, the driver's design): the
 * labels that say whose it is, the project's network, the limits and the security options, the host
 * CA files a build may need, and the one-off container a build step (or a start step) is.
 *
 * Security of every container: the project's uid/gid (else 1000:1000; an image's own user only for
 * Dockerfile images that set one), no capabilities, `no-new-privileges`, not privileged, no devices,
 * the project's memory (no swap beyond it), cpus and process count, a private `/tmp`, no restart by the
 * engine (Berth's supervisor restarts with backoff), and an environment that is exactly what Berth
 * passes (never the server's own).
 */

/** PATH in build boxes (the base image's programs, never the host's). */
export const BOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Who builds and plan images run as when the project has no identity of its own (the server is root). */
export const DEFAULT_USER = '1000:1000';
/** How much of an app's output the engine keeps on disk (json-file, rotated): enough to adopt it. */
const LOG_CONFIG = { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } };

export type ContainerKind = 'build' | 'app' | 'step' | 'service';

/** Whatever the driver's parts share: the engine, this Berth's key, the project networks. */
export interface DockerContext {
  engine: DockerEngine;
  /** instanceKeyOf(dataDir): 12 hex. */
  key: string;
  networks: ProjectNetworks;
  /** The server runs as root: volumes and folders are handed to the container's uid. */
  root: boolean;
}

export function labelsOf(key: string, projectId: string, kind: ContainerKind, deploymentId?: string): Record<string, string> {
  const l: Record<string, string> = { 'berth.instance': key, 'berth.project': projectId, 'berth.kind': kind };
  if (deploymentId) l['berth.deployment'] = deploymentId;
  return l;
}

/** Label filters for listing: `{ label: ['berth.instance=<key>', ...] }`. */
export function labelFilter(labels: Record<string, string>): { label: string[] } {
  return { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) };
}

/** A task container of a Swarm service: the Swarm runner's, never touched by the container runner or reclaim. */
export function swarmTask(labels: Record<string, string> | undefined): boolean {
  return !!labels && 'com.docker.swarm.service.id' in labels;
}

export function networkName(key: string, projectId: string): string {
  return `berth-${key}-${projectId}`;
}

/** The host side of a project's bridge: `bbr` + 12 hex (15 characters, the longest name Linux allows). */
export function bridgeName(key: string, projectId: string): string {
  return `bbr${createHash('sha256').update(`${key}/${projectId}`).digest('hex').slice(0, 12)}`;
}

/**
 * The user of a build step or a plan image: the project's identity, else 1000:1000; a server that is
 * not root cannot hand folders to another uid, so its containers run as its own (never 0) uid instead.
 */
export function userOf(identity: Identity | null | undefined, root = process.getuid?.() === 0): string {
  if (identity) return `${identity.uid}:${identity.gid}`;
  if (!root && process.getuid && process.getgid) return `${process.getuid()}:${process.getgid()}`;
  return DEFAULT_USER;
}

/** `uid[:gid]` as numbers (a named user is null: it means something only inside its image). */
export function numericUser(user: string): Identity | null {
  const m = /^(\d+)(?::(\d+))?$/.exec(user.trim());
  if (!m) return null;
  const uid = Number(m[1]);
  return { uid, gid: m[2] !== undefined ? Number(m[2]) : uid };
}

/** The limits and security options every container gets, with its mounts and network. */
export function hostConfig(limits: Limits, binds: string[], network: string, opts: { init?: boolean } = {}): Docker.HostConfig {
  const memory = Math.max(6, Math.round(limits.memoryMb)) * 1024 * 1024;
  return {
    Binds: binds,
    NetworkMode: network,
    CapDrop: ['ALL'],
    CapAdd: [],
    SecurityOpt: ['no-new-privileges'],
    Privileged: false,
    Devices: [],
    Memory: memory,
    MemorySwap: memory,
    NanoCpus: Math.max(1, Math.round(limits.cpuCores * 1e9)),
    PidsLimit: limits.pidsMax ?? DEFAULT_PIDS_MAX,
    Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=256m' },
    RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
    Init: opts.init ?? false,
    LogConfig: LOG_CONFIG,
  };
}

/**
 * Read-only binds of the host CA files the environment names (at the same path), so package managers
 * behind a TLS-inspecting proxy trust what the host trusts. Nothing below `hidden` (the data dir).
 */
export function caBinds(env: Record<string, string>, hidden: string | null): string[] {
  const out = new Set<string>();
  for (const k of CA_VARIABLES) {
    const v = env[k];
    if (!v || !/^\/[\w./-]+$/.test(v) || v.includes('..')) continue;
    if (hidden && (v === hidden || v.startsWith(hidden + path.sep))) continue;
    if (!existsSync(v)) continue;
    out.add(`${v}:${v}:ro`);
  }
  return [...out];
}

export function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

/** What the engine said, without the status-code preamble dockerode adds. */
export function engineMessage(e: unknown): string {
  const err = e as { json?: { message?: string } | null; message?: string; reason?: string; code?: string };
  const m = err?.json?.message ?? err?.message ?? String(e);
  return String(m).trim();
}

export function statusOf(e: unknown): number | undefined {
  return (e as { statusCode?: number })?.statusCode;
}

/** 128+N from the engine (the process was killed by signal N) as that signal, like the sandbox does. */
export function exitOf(code: number): { code: number | null; signal: string | null } {
  if (code > 128 && code <= 128 + 31) {
    const name = Object.entries(osConstants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name) return { code: null, signal: name };
  }
  return { code, signal: null };
}

/**
 * Waits until the container is no longer running; its exit code. A wait cut short (the engine
 * restarting, a dropped connection) is retried while the container runs; `signal` gives up (null).
 */
export async function waitExit(container: Docker.Container, signal?: AbortSignal): Promise<number | null> {
  for (;;) {
    if (signal?.aborted) return null;
    try {
      const r = (await container.wait({ condition: 'not-running', abortSignal: signal } as object)) as { StatusCode: number };
      return r.StatusCode;
    } catch (e) {
      if (signal?.aborted) return null;
      if (statusOf(e) === 404) return null;
      try {
        const info = await container.inspect();
        if (!info.State.Running) return info.State.ExitCode;
      } catch (e2) {
        if (statusOf(e2) === 404) return null;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A one-off container run as a BoxProcess (a build step, a start step). */
export interface OneOffProcess extends BoxProcess {
  /** Signals the container (SIGKILL: it goes, and is removed). */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Whether the container is (about to be) running. */
  readonly running: boolean;
}

/** Error of a program that is not in the image (the build says `program "X" not found`). */
function notFound(program: string, detail: string): Error {
  const err = new Error(`program "${program}" not found in the image (${detail})`) as NodeJS.ErrnoException;
  err.code = 'ENOENT';
  return err;
}

/** Resolves once a stream has ended (or a second later: nobody reads it). */
function drained(s: Readable): Promise<void> {
  if (s.readableEnded || s.destroyed) return Promise.resolve();
  if (s.readableFlowing === null) s.resume();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 1000);
    const done = () => {
      clearTimeout(t);
      resolve();
    };
    s.once('end', done);
    s.once('close', done);
  });
}

/**
 * Runs one container to its end: `prepare` (image, network), create, attach (before start, so no
 * output is lost; demultiplexed into `stdout` and `stderr`), start, wait, remove. `exited` resolves
 * after the container is removed; a container that could not be created or started resolves with
 * `error` (a program missing from the image: code ENOENT).
 */
export function runOneOff(engine: DockerEngine, create: Docker.ContainerCreateOptions, prepare?: () => Promise<void>): OneOffProcess {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let container: Docker.Container | null = null;
  let pid: number | undefined;
  let killed: NodeJS.Signals | null = null;
  let running = false;
  let finished = false;
  const program = create.Cmd?.[0] ?? 'the command';

  const exited = (async (): Promise<{ code: number | null; signal: string | null; error?: Error }> => {
    try {
      await prepare?.();
      if (killed) return { code: null, signal: killed };
      container = await engine.api.createContainer(create);
      if (killed) return { code: null, signal: killed };
      const stream = (await container.attach({ stream: true, stdout: true, stderr: true, logs: false })) as unknown as Readable;
      const streamEnded = new Promise<void>((resolve) => {
        stream.once('end', resolve);
        stream.once('close', resolve);
        stream.once('error', () => resolve());
      });
      engine.api.modem.demuxStream(stream, stdout, stderr);
      running = true;
      try {
        await container.start();
      } catch (e) {
        running = false;
        stream.destroy();
        const msg = engineMessage(e);
        if (/executable file not found|no such file or directory/i.test(msg)) return { code: null, signal: null, error: notFound(program, msg.replace(/^.*?(exec: )/s, '$1')) };
        return { code: null, signal: null, error: new Error(`the container could not start: ${msg}`) };
      }
      if (killed) await container.kill({ signal: killed }).catch(() => {});
      container
        .inspect()
        .then((i) => {
          if (i.State.Pid) pid = i.State.Pid;
        })
        .catch(() => {});
      const code = await waitExit(container);
      running = false;
      // The last output arrives before the attach stream closes.
      await Promise.race([streamEnded, new Promise((r) => setTimeout(r, 2000))]);
      stream.destroy();
      if (killed === 'SIGKILL') return { code: null, signal: 'SIGKILL' };
      return code === null ? { code: null, signal: 'SIGKILL' } : exitOf(code);
    } catch (e) {
      return { code: null, signal: null, error: new Error(engineMessage(e)) };
    } finally {
      running = false;
      const c = container as Docker.Container | null;
      if (c) await c.remove({ force: true }).catch(() => {});
      stdout.end();
      stderr.end();
      await Promise.all([drained(stdout), drained(stderr)]);
      finished = true;
    }
  })();

  return {
    get pid() {
      return pid;
    },
    stdout,
    stderr,
    exited,
    get running() {
      return !finished;
    },
    async kill(signal: NodeJS.Signals): Promise<void> {
      if (finished) return;
      if (signal === 'SIGKILL' || !running) killed = killed ?? signal;
      const c = container as Docker.Container | null;
      if (c && running) await c.kill({ signal }).catch(() => {});
    },
  };
}

/**
 * Project networks: `berth-<key>-<projectId>`, a bridge whose host side is `bbr…` (so the host's
 * firewall matches every project bridge), created on demand and idempotent (a concurrent create that
 * finds it made is fine). When the server is root and nftables is there, the host's `input` hook drops
 * new connections that come in from a project bridge: an app cannot reach the host's own services
 * (bound on 0.0.0.0 or the bridge's gateway address), only answers to connections the host opened,
 * and the `forward` hook drops link-local, private and loopback destinations (egress-rules.ts).
 * The rest of forwarding (outbound internet, the engine's isolation between networks) is the engine's.
 */
export class ProjectNetworks {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(
    private readonly engine: DockerEngine,
    private readonly key: string,
    /** `nft` when the server is root and has it, else null (no host rules). */
    private readonly nft: string | null,
  ) {}

  /** The host rules apply (root with nftables). */
  get hostRulesApply(): boolean {
    return !!this.nft;
  }

  nameOf(projectId: string): string {
    return networkName(this.key, projectId);
  }

  /** The project's network (made when missing: one look-up, and one create at a time per project); its name. */
  ensure(projectId: string): Promise<string> {
    let p = this.inflight.get(projectId);
    if (!p) {
      p = this.create(projectId);
      this.inflight.set(projectId, p);
      const done = () => this.inflight.delete(projectId);
      p.then(done, done);
    }
    return p;
  }

  private async create(projectId: string): Promise<string> {
    await this.hostRules();
    const name = this.nameOf(projectId);
    const api = this.engine.api;
    try {
      await api.getNetwork(name).inspect();
      return name;
    } catch (e) {
      if (statusOf(e) !== 404) throw new Error(`the Docker Engine could not look up the network ${name}: ${engineMessage(e)}`);
    }
    try {
      await api.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Labels: labelsOf(this.key, projectId, 'app'),
        Options: { 'com.docker.network.bridge.name': bridgeName(this.key, projectId) },
      } as Docker.NetworkCreateOptions);
    } catch (e) {
      if (statusOf(e) !== 409) throw new Error(`the Docker Engine could not create the network ${name}: ${engineMessage(e)}`);
    }
    return name;
  }

  /** Removes the project's network (its containers must be gone); a missing one is fine. */
  async remove(projectId: string): Promise<void> {
    const name = this.nameOf(projectId);
    try {
      await this.engine.api.getNetwork(name).remove();
    } catch (e) {
      if (statusOf(e) !== 404) throw new Error(`the Docker Engine could not remove the network ${name}: ${engineMessage(e)}`);
    }
  }

  /** One nftables table, rewritten whole (atomic, idempotent; every Berth on the machine writes the same). */
  hostRules(): Promise<void> {
    if (!this.nft) return Promise.resolve();
    return installEgressRules(this.nft, this.engine, process.env);
  }
}

/** The uid that owns a host folder (null when it is not there). */
export function ownerOf(dir: string): number | null {
  try {
    return statSync(dir).uid;
  } catch {
    return null;
  }
}
