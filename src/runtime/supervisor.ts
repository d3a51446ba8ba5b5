import http from 'node:http';
import { mkdirSync, statSync } from 'node:fs';
import { chownTree } from './identity.js';
import type { Logger } from 'pino';
import type { Limits } from './cgroups.js';
import type { CommandStep } from './command.js';
import type { Box, BoxProcess, Identity, RuntimeDriver } from './driver.js';
import type { LogFile, LogStore, LogStream } from './logs.js';
import { LineSplitter, Redactor } from './redact.js';

/** Everything needed to run one release of a project. */
export interface ReleaseSpec {
  projectId: string;
  orgId: string;
  deploymentId: string;
  /** The release's source folder (shown at `/app` in a sandbox). */
  appRoot: string;
  /** The app's working directory: `appRoot` or its root directory below it. */
  cwd: string;
  /**
   * The start command as argument arrays, made with the app's final environment (so `$PORT` expands
   * to the port it listens on); every step but the last must exit 0 first.
   */
  steps(env: Record<string, string>): CommandStep[];
  /** The project's variables (plain and secret) for the environment. */
  env: Record<string, string>;
  /** Secret values, redacted from the app's log lines. */
  secrets: string[];
  /** The project's volume on the host (`/data` in a sandbox, `DATA_DIR`). */
  dataDir: string;
  limits: Limits;
  /** The project's own uid/gid (sandbox driver as root). */
  identity: Identity | null;
  /** The project's configured port: what the app listens on inside its own network. */
  port: number;
  /** `PATH` of the app given the folder it runs in (as the box shows it). */
  path(cwdInside: string): string;
}

/** Where the edge sends a request: the app's address as the server reaches it. */
export interface Upstream {
  host: string;
  port: number;
  /** `host:port`, the key of the edge's connection pool. */
  key: string;
}

export type RuntimeStateName = 'starting' | 'running' | 'sleeping' | 'stopped' | 'crashed' | 'failed';

export interface RuntimeSnapshot {
  state: RuntimeStateName;
  port?: number;
  pid?: number;
  startedAt?: string;
  deploymentId?: string;
  restarts: number;
}

interface Instance {
  spec: ReleaseSpec;
  box: Box;
  upstream: Upstream;
  pid: number;
  startedAt: string;
  stopping: boolean;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

interface Slot {
  projectId: string;
  state: RuntimeStateName;
  current: Instance | null;
  /** The start (deploy, wake, restart) in flight. */
  starting: Promise<Instance> | null;
  restarts: number;
  consecutiveFailures: number;
  restartTimer: NodeJS.Timeout | null;
  lastActivity: number;
  /** Bumped by every deploy/stop so that a stale restart does not resurrect a stopped app. */
  generation: number;
}

export interface SupervisorOptions {
  logs: LogStore;
  driver: RuntimeDriver;
  log: Logger;
  /** Base environment every app gets (PATH, LANG, ...); never the server's own environment. */
  baseEnv: Record<string, string>;
  healthTimeoutMs?: number;
  graceMs?: number;
  /** Called on every state change (persisted by the runtime so a restart can bring apps back). */
  onState?(projectId: string, snap: RuntimeSnapshot): void;
}

export class StartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartError';
  }
}

const MAX_BACKOFF_MS = 30000;
const MAX_CONSECUTIVE_FAILURES = 8;

/**
 * Runs each project's current release as a process group on an allocated port, restarts it with
 * backoff when it crashes, health-checks a new release before it takes traffic (then stops the old
 * one: zero-downtime swap), and stops groups gracefully (SIGTERM, SIGKILL after a grace).
 */
export class Supervisor {
  private readonly slots = new Map<string, Slot>();
  private closed = false;
  private seq = 0;

  constructor(private readonly opts: SupervisorOptions) {}

  snapshot(projectId: string): RuntimeSnapshot | null {
    const s = this.slots.get(projectId);
    if (!s) return null;
    const c = s.current;
    return {
      state: s.state,
      port: c?.upstream.port,
      pid: c?.pid,
      startedAt: c?.startedAt,
      deploymentId: c?.spec.deploymentId,
      restarts: s.restarts,
    };
  }

  /** Projects with a slot (any state). */
  projectIds(): string[] {
    return [...this.slots.keys()];
  }

  /** Milliseconds since the project's last recorded activity (edge request or start). */
  idleMs(projectId: string): number {
    const s = this.slots.get(projectId);
    return s ? Date.now() - s.lastActivity : Infinity;
  }

  /** The state name alone (no allocation; the edge asks on every request). */
  stateOf(projectId: string): RuntimeStateName | undefined {
    return this.slots.get(projectId)?.state;
  }

  /** The address of the running instance (and records activity), or null when none runs now. */
  upstreamNow(projectId: string): Upstream | null {
    const s = this.slots.get(projectId);
    if (!s || !s.current || s.state !== 'running') return null;
    s.lastActivity = Date.now();
    return s.current.upstream;
  }

  touch(projectId: string): void {
    const s = this.slots.get(projectId);
    if (s) s.lastActivity = Date.now();
  }

  /**
   * Starts `spec` beside whatever runs now; once it answers its health check it takes traffic and
   * the previous instance is stopped. On failure the previous instance keeps serving and this throws.
   */
  async deploy(spec: ReleaseSpec): Promise<RuntimeSnapshot> {
    const slot = this.slot(spec.projectId);
    slot.generation++;
    this.clearRestart(slot);
    const gen = slot.generation;
    const wasRunning = !!slot.current;
    if (!wasRunning) this.setState(slot, 'starting');
    let inst: Instance;
    const p = this.startInstance(spec);
    slot.starting = p;
    try {
      inst = await p;
    } catch (e) {
      if (slot.starting === p) slot.starting = null;
      if (!slot.current) this.setState(slot, 'failed');
      throw e;
    } finally {
      if (slot.starting === p) slot.starting = null;
    }
    if (gen !== slot.generation || this.closed) {
      // Stopped (or superseded) while starting: this instance never takes traffic.
      await this.stopInstance(inst);
      throw new StartError('the app was stopped while it was starting');
    }
    const old = slot.current;
    slot.current = inst;
    slot.consecutiveFailures = 0;
    slot.lastActivity = Date.now();
    this.watch(slot, inst);
    this.setState(slot, 'running');
    if (old) await this.stopInstance(old);
    return this.snapshot(spec.projectId)!;
  }

  /**
   * The address to send a request to: the running instance's, or after starting `spec` (wake from
   * sleep, after a stop, while a crash restart is pending). Waits at most `timeoutMs`.
   */
  async acquire(projectId: string, loadSpec: () => Promise<ReleaseSpec | null>, timeoutMs: number): Promise<Upstream> {
    const slot = this.slot(projectId);
    slot.lastActivity = Date.now();
    if (slot.current && slot.state === 'running') return slot.current.upstream;
    let p = slot.starting;
    if (!p) {
      const spec = slot.current?.spec ?? (await loadSpec());
      if (!spec) throw new StartError('the project has no release to run');
      if (slot.starting) p = slot.starting;
      else if (slot.current && slot.state === 'running') return slot.current.upstream;
      else p = this.startInto(slot, spec);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const inst = await Promise.race([
        p,
        new Promise<never>((_, rej) => {
          timer = setTimeout(() => rej(new StartError('the app did not become ready in time')), timeoutMs);
        }),
      ]);
      return inst.upstream;
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Stops the project's app (disable, sleep, shutdown, delete); `state` is what it is then. */
  async stop(projectId: string, state: 'stopped' | 'sleeping' = 'stopped'): Promise<void> {
    const slot = this.slots.get(projectId);
    if (!slot) return;
    slot.generation++;
    this.clearRestart(slot);
    const cur = slot.current;
    slot.current = null;
    const starting = slot.starting;
    this.setState(slot, state);
    if (cur) await this.stopInstance(cur);
    if (starting) {
      try {
        const inst = await starting;
        if (slot.current !== inst) await this.stopInstance(inst);
      } catch {
        /* it failed to start anyway */
      }
    }
  }

  forget(projectId: string): void {
    this.slots.delete(projectId);
  }

  /** Stops every app (server shutdown). */
  async stopAll(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.slots.keys()].map((id) => this.stop(id, 'stopped').catch(() => {})));
  }

  // ---- internals ----

  private slot(projectId: string): Slot {
    let s = this.slots.get(projectId);
    if (!s) {
      s = {
        projectId,
        state: 'stopped',
        current: null,
        starting: null,
        restarts: 0,
        consecutiveFailures: 0,
        restartTimer: null,
        lastActivity: Date.now(),
        generation: 0,
      };
      this.slots.set(projectId, s);
    }
    return s;
  }

  private setState(slot: Slot, state: RuntimeStateName): void {
    slot.state = state;
    try {
      this.opts.onState?.(slot.projectId, this.snapshot(slot.projectId)!);
    } catch {
      /* persistence is best effort */
    }
  }

  private clearRestart(slot: Slot): void {
    if (slot.restartTimer) clearTimeout(slot.restartTimer);
    slot.restartTimer = null;
  }

  /** Starts `spec` and makes it current when healthy (wake, restart). */
  private startInto(slot: Slot, spec: ReleaseSpec): Promise<Instance> {
    const gen = slot.generation;
    if (!slot.current) this.setState(slot, 'starting');
    const p = this.startInstance(spec).then(
      async (inst) => {
        if (slot.starting === p) slot.starting = null;
        if (gen !== slot.generation || this.closed) {
          await this.stopInstance(inst);
          throw new StartError('the app was stopped while it was starting');
        }
        const old = slot.current;
        slot.current = inst;
        slot.consecutiveFailures = 0;
        slot.lastActivity = Date.now();
        this.watch(slot, inst);
        this.setState(slot, 'running');
        if (old && old !== inst) await this.stopInstance(old);
        return inst;
      },
      (e) => {
        if (slot.starting === p) slot.starting = null;
        if (gen === slot.generation && !slot.current) this.setState(slot, 'failed');
        throw e;
      },
    );
    slot.starting = p;
    return p;
  }

  private watch(slot: Slot, inst: Instance): void {
    void inst.exited.then(({ code, signal }) => {
      if (inst.stopping || slot.current !== inst || this.closed) return;
      // A crash: the instance that served traffic went away on its own.
      slot.current = null;
      slot.restarts++;
      slot.consecutiveFailures++;
      const logFile = this.opts.logs.runtime(slot.projectId);
      if (slot.consecutiveFailures > MAX_CONSECUTIVE_FAILURES) {
        logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] the app exited (${signal ?? `code ${code}`}) ${slot.consecutiveFailures} times in a row; giving up until the next deploy or enable` });
        this.setState(slot, 'failed');
        return;
      }
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** (slot.consecutiveFailures - 1));
      logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] the app exited (${signal ?? `code ${code}`}); restarting in ${delay} ms` });
      this.setState(slot, 'crashed');
      const gen = slot.generation;
      slot.restartTimer = setTimeout(() => {
        slot.restartTimer = null;
        if (gen !== slot.generation || this.closed || slot.current || slot.starting) return;
        this.startInto(slot, inst.spec).catch((e) => {
          this.opts.log.warn({ projectId: slot.projectId, err: (e as Error).message }, 'app restart failed');
          if (gen !== slot.generation || this.closed) return;
          slot.consecutiveFailures++;
          if (slot.consecutiveFailures > MAX_CONSECUTIVE_FAILURES) return;
          // Try again later with a longer backoff.
          const again = Math.min(MAX_BACKOFF_MS, 250 * 2 ** (slot.consecutiveFailures - 1));
          this.setState(slot, 'crashed');
          slot.restartTimer = setTimeout(() => {
            slot.restartTimer = null;
            if (gen === slot.generation && !this.closed && !slot.current && !slot.starting) {
              this.startInto(slot, inst.spec).catch(() => {});
            }
          }, again);
        });
      }, delay);
    });
  }

  private pipeOutput(child: BoxProcess, logFile: LogFile, secrets: string[]): void {
    const attach = (stream: NodeJS.ReadableStream | null, name: LogStream) => {
      if (!stream) return;
      const r = new Redactor(secrets);
      const lines = new LineSplitter((line) => logFile.append({ ts: new Date().toISOString(), stream: name, line }));
      stream.on('data', (c: Buffer) => lines.push(r.push(c)));
      stream.on('end', () => {
        lines.push(r.end());
        lines.end();
      });
      stream.on('error', () => {});
    };
    attach(child.stdout, 'stdout');
    attach(child.stderr, 'stderr');
  }

  private async startInstance(spec: ReleaseSpec): Promise<Instance> {
    if (this.closed) throw new StartError('the server is shutting down');
    mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
    // The volume belongs to the project's own user (a restore or an older Berth may have left root's files).
    if (spec.identity && statSync(spec.dataDir).uid !== spec.identity.uid) await chownTree(spec.dataDir, spec.identity);
    const logFile = this.opts.logs.runtime(spec.projectId);
    const note = (line: string) => logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] ${line}` });
    let box: Box;
    try {
      box = await this.opts.driver.open({
        kind: 'app',
        projectId: spec.projectId,
        name: `app-${spec.projectId}-${++this.seq}`,
        identity: spec.identity,
        limits: spec.limits,
        appDir: spec.appRoot,
        dataDir: spec.dataDir,
        port: spec.port,
      });
    } catch (e) {
      note(`the app cannot start: ${(e as Error).message}`);
      throw new StartError(`the app cannot start: ${(e as Error).message}`);
    }
    const port = box.port!;
    const cwd = box.inside(spec.cwd);
    const env: Record<string, string> = {
      ...this.opts.baseEnv,
      PATH: spec.path(cwd),
      HOME: box.paths.home ?? box.paths.tmp,
      HOST: box.bindHost,
      NODE_ENV: 'production',
      ...spec.env,
      PORT: String(port),
      DATA_DIR: box.paths.data ?? spec.dataDir,
      BERTH_PROJECT_ID: spec.projectId,
      BERTH_DEPLOYMENT_ID: spec.deploymentId,
    };
    const fail = async (message: string): Promise<never> => {
      await box.dispose().catch(() => {});
      note(message);
      throw new StartError(message);
    };
    let steps: CommandStep[] = [];
    try {
      steps = spec.steps(env);
    } catch (e) {
      await fail(`the start command cannot run: ${(e as Error).message}`);
    }
    // Steps before the last one (migrations, ...) run to completion first, in the same box.
    for (const step of steps.slice(0, -1)) {
      const p = box.exec(step.argv, { cwd: spec.cwd, env: { ...env, ...step.env } });
      this.pipeOutput(p, logFile, spec.secrets);
      const r = await p.exited;
      if (r.code !== 0) await fail(`start step "${step.argv[0]}" ${r.error ? `could not run: ${r.error.message}` : `exited with code ${r.code}`}`);
    }
    const last = steps[steps.length - 1]!;
    const proc = box.exec(last.argv, { cwd: spec.cwd, env: { ...env, ...last.env } });
    const exited = proc.exited.then(({ code, signal }) => ({ code, signal }));
    if (!proc.pid) {
      await exited;
      await fail(`could not start "${last.argv[0]}": program not found`);
    }
    this.pipeOutput(proc, logFile, spec.secrets);
    const upstream: Upstream = { host: box.host, port, key: `${box.host}:${port}` };
    const inst: Instance = { spec, box, upstream, pid: proc.pid!, startedAt: new Date().toISOString(), stopping: false, exited };
    // Whatever the app left when it exited (children, detached ones) goes with it.
    void exited.then(() => {
      if (!inst.stopping) void box.dispose().catch(() => {});
    });
    note(`starting ${spec.deploymentId} on ${box.host === '127.0.0.1' ? 'port' : `${box.host} port`} ${port} (pid ${proc.pid})`);
    const healthy = await this.healthCheck(inst);
    if (!healthy.ok) {
      await this.stopInstance(inst);
      note(`the app did not become healthy: ${healthy.reason}`);
      throw new StartError(`the app did not become healthy: ${healthy.reason}`);
    }
    return inst;
  }

  /** GET / on the app's port until it answers (any status) or exits, bounded by the health timeout. */
  private async healthCheck(inst: Instance): Promise<{ ok: true } | { ok: false; reason: string }> {
    const deadline = Date.now() + (this.opts.healthTimeoutMs ?? 30000);
    let exited: string | null = null;
    void inst.exited.then(({ code, signal }) => {
      exited = `it exited (${signal ?? `code ${code}`}) before answering on port ${inst.upstream.port}`;
    });
    let delay = 20;
    while (Date.now() < deadline) {
      if (exited) return { ok: false, reason: exited };
      const ok = await new Promise<boolean>((resolve) => {
        const req = http.get({ host: inst.upstream.host, port: inst.upstream.port, path: '/', timeout: 2000, headers: { 'user-agent': 'berth-health' } }, (res) => {
          res.resume();
          resolve(true);
        });
        req.on('error', () => resolve(false));
        req.on('timeout', () => {
          req.destroy();
          resolve(false);
        });
      });
      if (ok) return { ok: true };
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(200, delay * 2);
    }
    return { ok: false, reason: exited ?? `it did not answer on port ${inst.upstream.port} within ${Math.round((this.opts.healthTimeoutMs ?? 30000) / 1000)} s` };
  }

  /** SIGTERM to the app's processes, SIGKILL to the whole box after the grace period; the box is freed. */
  private async stopInstance(inst: Instance): Promise<void> {
    inst.stopping = true;
    const graceMs = this.opts.graceMs ?? 5000;
    inst.box.signalAll('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([inst.exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    if (timer) clearTimeout(timer);
    await inst.box.dispose();
  }
}
