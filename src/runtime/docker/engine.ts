import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import type Docker from 'dockerode';

/**
 * dockerode (with docker-modem and ssh2) is about 7 MB of heap and 20 MB of resident memory once
 * loaded: required when a server first talks to an engine, so servers on the sandbox or process
 * runtime never load it (docs/decisions.md, "Memory: dependencies loaded on first use").
 */
const requireCjs = createRequire(import.meta.url);

/**
 * The Docker Engine client (contract section 13): where the engine is (`DOCKER_HOST`, else
 * `/var/run/docker.sock`), a bounded `ping()` and `version()`, and errors that say what is wrong and
 * how to fix it. The engine API itself is reached through dockerode (`engine.api`).
 */

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';
/** How long a probe (ping, version) waits for the engine. */
export const PROBE_TIMEOUT_MS = 2000;

export type EngineTarget = { kind: 'socket'; socketPath: string } | { kind: 'tcp'; host: string; port: number };

export type EngineErrorKind = 'config' | 'missing' | 'permission' | 'refused' | 'timeout' | 'failed';

export class EngineError extends Error {
  constructor(
    readonly kind: EngineErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export interface EngineVersion {
  version: string;
  apiVersion: string;
}

/** Where the engine is: `DOCKER_HOST` as `unix:///path`, a plain socket path or `tcp://host:port`. */
export function engineTarget(dockerHost: string | undefined): EngineTarget {
  const raw = (dockerHost ?? '').trim();
  if (!raw) return { kind: 'socket', socketPath: DEFAULT_DOCKER_SOCKET };
  if (raw.startsWith('unix://')) return { kind: 'socket', socketPath: raw.slice('unix://'.length) || DEFAULT_DOCKER_SOCKET };
  if (raw.startsWith('/')) return { kind: 'socket', socketPath: raw };
  if (raw.startsWith('tcp://')) {
    let url: URL;
    try {
      url = new URL(`http://${raw.slice('tcp://'.length)}`);
    } catch {
      throw new EngineError('config', `DOCKER_HOST "${raw}" is not a valid tcp://host:port address`);
    }
    if (!url.hostname || url.pathname !== '/') throw new EngineError('config', `DOCKER_HOST "${raw}" is not a valid tcp://host:port address`);
    return { kind: 'tcp', host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : 2375 };
  }
  throw new EngineError('config', `DOCKER_HOST "${raw}" is not supported: use unix:///path/to/docker.sock, a socket path or tcp://host:port`);
}

function describe(target: EngineTarget): string {
  return target.kind === 'socket' ? target.socketPath : `tcp://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
}

/** dockerode takes `{ abortSignal }` on ping and version; its type definitions do not say so. */
interface WithSignal {
  ping(opts: { abortSignal: AbortSignal }): Promise<unknown>;
  version(opts: { abortSignal: AbortSignal }): Promise<Docker.DockerVersion>;
}

export class DockerEngine {
  /** Where the engine is, for messages (`/var/run/docker.sock`, `tcp://host:2375`). */
  readonly where: string;
  private client: Docker | undefined;

  constructor(readonly target: EngineTarget) {
    this.where = describe(target);
  }

  /** The dockerode client (no timeout of its own: container waits and log streams run long), made on first use. */
  get api(): Docker {
    if (!this.client) {
      const Client = requireCjs('dockerode') as typeof Docker;
      const t = this.target;
      this.client = t.kind === 'socket' ? new Client({ socketPath: t.socketPath }) : new Client({ host: t.host, port: t.port, protocol: 'http' });
    }
    return this.client;
  }

  /** The engine named by `DOCKER_HOST` (throws an EngineError of kind `config` when it is malformed). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): DockerEngine {
    return new DockerEngine(engineTarget(env.DOCKER_HOST));
  }

  /** Resolves when the engine answers `/_ping`; an EngineError naming the problem otherwise. */
  async ping(timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
    await this.call(timeoutMs, (abortSignal) => (this.api as unknown as WithSignal).ping({ abortSignal }));
  }

  async version(timeoutMs = PROBE_TIMEOUT_MS): Promise<EngineVersion> {
    const v = await this.call(timeoutMs, (abortSignal) => (this.api as unknown as WithSignal).version({ abortSignal }));
    return { version: v.Version, apiVersion: v.ApiVersion };
  }

  private async call<T>(timeoutMs: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.checkSocket();
    try {
      return await fn(AbortSignal.timeout(timeoutMs));
    } catch (e) {
      throw this.explain(e, timeoutMs);
    }
  }

  /** A socket path that is not there gets the install hint before any connection is tried. */
  private checkSocket(): void {
    if (this.target.kind !== 'socket') return;
    try {
      statSync(this.target.socketPath);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new EngineError('missing', `no Docker Engine at ${this.where}: install docker.io and start dockerd`);
      if (code === 'EACCES') throw this.permission();
      throw new EngineError('failed', `cannot reach the Docker Engine at ${this.where}: ${(e as Error).message}`);
    }
  }

  private permission(): EngineError {
    return new EngineError('permission', `permission denied on the Docker Engine socket ${this.where}: run Berth as root or as a user in the docker group`);
  }

  private explain(e: unknown, timeoutMs: number): EngineError {
    if (e instanceof EngineError) return e;
    const err = e as NodeJS.ErrnoException & { statusCode?: number };
    const code = err.code;
    if (code === 'ENOENT') return new EngineError('missing', `no Docker Engine at ${this.where}: install docker.io and start dockerd`);
    if (code === 'EACCES' || code === 'EPERM') return this.permission();
    if (code === 'ECONNREFUSED') {
      return new EngineError(
        'refused',
        this.target.kind === 'socket'
          ? `the Docker Engine socket ${this.where} refuses connections: dockerd is not running (start dockerd)`
          : `the Docker Engine at ${this.where} refused the connection: is dockerd listening there?`,
      );
    }
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new EngineError('refused', `the Docker Engine host in DOCKER_HOST (${this.where}) does not resolve`);
    if (err.name === 'AbortError' || err.name === 'TimeoutError' || code === 'ABORT_ERR' || code === 'ETIMEDOUT') {
      return new EngineError('timeout', `the Docker Engine at ${this.where} did not answer within ${timeoutMs} ms`);
    }
    if (err.statusCode) return new EngineError('failed', `the Docker Engine at ${this.where} answered ${err.statusCode}: ${err.message}`);
    return new EngineError('failed', `cannot reach the Docker Engine at ${this.where}: ${err.message ?? String(e)}`);
  }
}

/**
 * Splits what the engine answers for the logs of a container without a TTY (frames of an 8-byte
 * header: stream 1 stdout or 2 stderr, 3 zero bytes, a big-endian length) into stdout and stderr.
 */
export function demuxLogs(buf: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const stream = buf[i];
    const len = buf.readUInt32BE(i + 4);
    const chunk = buf.subarray(i + 8, i + 8 + len);
    (stream === 2 ? err : out).push(chunk);
    i += 8 + len;
  }
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}
