// The supervisor's per-app state machine (a slot: current instance, start in flight, crash
// restart timer, generation) stays in this one file although it runs past 300 lines: deploy, acquire
// (wake), stop and crash restart all read and bump the same slot fields, and their ordering rules
// (generation checks, who clears `starting`) are easier to check side by side. Starting and stopping
// one instance lives in app-instance.ts, its health check in app-health.ts, its log capture in
// app-output.ts, the restart pacing in restart-backoff.ts, the release types in release-spec.ts and
// the supervisor's own public types in supervisor-types.ts.
import type { UsageTarget } from './usage.js';
import { startInstance, stopInstance, type Instance } from './app-instance.js';
import { appOf, StartError, type ReleaseSpec, type Upstream } from './release-spec.js';
import { MAX_CONSECUTIVE_FAILURES, restartDelayMs } from './restart-backoff.js';
import { watchSilence } from './silent-step.js';

export type { ReleaseSpec, Upstream } from './release-spec.js';
export type { RuntimeSnapshot, RuntimeStateName, StartProgress, SupervisorOptions } from './supervisor-types.js';
import type { RuntimeSnapshot, RuntimeStateName, StartProgress, SupervisorOptions } from './supervisor-types.js';
export { appOf } from './release-spec.js';

interface Slot {
  /** The app's key (`appOf(spec)`): the project's id for production, a preview environment's key. */
  app: string;
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
  /** The project the app belongs to (from the specs it ran; the key itself until one ran). */
  projectId: string;
}

/**
 * Runs each app's current release as a process group on an allocated port, restarts it with
 * backoff when it crashes, health-checks a new release before it takes traffic (then stops the old
 * one: zero-downtime swap), and stops groups gracefully (SIGTERM, SIGKILL after a grace).
 *
 * An app is keyed by `appOf(spec)`: a project's production app by the project's id, a preview
 * environment's by its own key, so the two run side by side. Every method taking `app` takes that key.
 */
export class Supervisor {
  private readonly slots = new Map<string, Slot>();
  private closed = false;
  private seq = 0;

  constructor(private readonly opts: SupervisorOptions) {}

  snapshot(app: string): RuntimeSnapshot | null {
    const s = this.slots.get(app);
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

  /** Apps with a slot (any state): projects' ids (production) and preview environments' keys. */
  apps(): string[] {
    return [...this.slots.keys()];
  }

  /** The apps with a slot that run releases of `projectId` (its production app and its previews'). */
  appsOf(projectId: string): string[] {
    return [...this.slots.values()].filter((s) => s.projectId === projectId).map((s) => s.app);
  }

  /** The apps running now, as the metrics sampler reads them (usage.ts): none of those asleep or stopped. */
  usageTargets(): UsageTarget[] {
    const out: UsageTarget[] = [];
    for (const s of this.slots.values()) {
      const c = s.current;
      if (!c || s.state !== 'running' || !c.box.usage) continue;
      const box = c.box;
      out.push({ kind: 'app', name: s.app, orgId: c.spec.orgId, projectId: c.spec.projectId, label: c.spec.app ? 'preview' : 'production', usage: () => box.usage!() });
    }
    return out;
  }

  /** Milliseconds since the app's last recorded activity (edge request or start). */
  idleMs(app: string): number {
    const s = this.slots.get(app);
    return s ? Date.now() - s.lastActivity : Infinity;
  }

  /** The state name alone (no allocation; the edge asks on every request). */
  stateOf(app: string): RuntimeStateName | undefined {
    return this.slots.get(app)?.state;
  }

  /** The address of the running instance (and records activity), or null when none runs now. */
  upstreamNow(app: string): Upstream | null {
    const s = this.slots.get(app);
    if (!s || !s.current || s.state !== 'running') return null;
    s.lastActivity = Date.now();
    return s.current.upstream;
  }

  /** The running instance's address without recording activity (health checks must not keep an app awake). */
  upstreamOf(app: string): Upstream | null {
    const s = this.slots.get(app);
    return s?.current && s.state === 'running' ? s.current.upstream : null;
  }

  /** The project an app runs releases of. */
  projectOf(app: string): string {
    return this.slots.get(app)?.projectId ?? app;
  }

  touch(app: string): void {
    const s = this.slots.get(app);
    if (s) s.lastActivity = Date.now();
  }

  /**
   * Starts `spec` beside whatever runs now; once it answers its health check it takes traffic and
   * the previous instance is stopped. On failure the previous instance keeps serving and this throws.
   */
  async deploy(spec: ReleaseSpec, progress?: StartProgress): Promise<RuntimeSnapshot> {
    const slot = this.slot(appOf(spec), spec.projectId);
    slot.generation++;
    this.clearRestart(slot);
    const gen = slot.generation;
    const wasRunning = !!slot.current;
    if (!wasRunning) this.setState(slot, 'starting');
    let inst: Instance;
    // Any line of the app's runtime log (every driver writes the start's output there) counts as output.
    const silence = progress ? watchSilence(progress.step, progress.log, progress.silentMs) : null;
    const unsubscribe = silence ? this.opts.logs.runtime(appOf(spec)).subscribe(() => silence.output()) : null;
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
      unsubscribe?.();
      silence?.stop();
    }
    await this.promote(slot, inst, gen);
    return this.snapshot(slot.app)!;
  }

  /**
   * The address to send a request to: the running instance's, or after starting `spec` (wake from
   * sleep, after a stop, while a crash restart is pending). Waits at most `timeoutMs`.
   */
  async acquire(app: string, loadSpec: () => Promise<ReleaseSpec | null>, timeoutMs: number): Promise<Upstream> {
    const slot = this.slot(app);
    slot.lastActivity = Date.now();
    if (slot.current && slot.state === 'running') return slot.current.upstream;
    let p = slot.starting;
    if (!p) {
      const spec = slot.current?.spec ?? (await loadSpec());
      if (!spec) throw new StartError('the project has no release to run');
      slot.projectId = spec.projectId;
      if (slot.starting) p = slot.starting;
      else if (slot.current && slot.state === 'running') return slot.current.upstream;
      else p = this.startInto(slot, spec);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, rej) => {
      timer = setTimeout(() => rej(new StartError('the app did not become ready in time')), timeoutMs);
    });
    try {
      for (;;) {
        try {
          return (await Promise.race([p, timeout])).upstream;
        } catch (e) {
          // The start it waited for was superseded (a deploy or promote began meanwhile): the release
          // that replaces it answers instead. A stop leaves nothing starting or running: the error stands.
          if (!(e instanceof StartError) || !e.superseded) throw e;
          if (slot.current && slot.state === 'running') return slot.current.upstream;
          if (!slot.starting || slot.starting === p) throw e;
          p = slot.starting;
        }
      }
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Stops the app (disable, sleep, shutdown, delete); `state` is what it is then. */
  async stop(app: string, state: 'stopped' | 'sleeping' = 'stopped'): Promise<void> {
    const slot = this.slots.get(app);
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

  forget(app: string): void {
    this.slots.delete(app);
  }

  /**
   * Server shutdown: stops every app, except those the driver keeps running for the next start to
   * adopt (containers: AppRunner.survivesShutdown), which are let go of as they run.
   */
  async stopAll(): Promise<void> {
    this.closed = true;
    if (this.opts.driver.apps?.survivesShutdown) {
      for (const slot of this.slots.values()) {
        this.clearRestart(slot);
        slot.generation++;
        if (slot.current?.spec.image && slot.current.detach) {
          slot.current.detach();
          slot.current = null;
        }
      }
    }
    await Promise.all([...this.slots.keys()].map((id) => this.stop(id, 'stopped').catch(() => {})));
  }

  // ---- internals ----

  /** The app's slot, made when missing (`projectId`: the project of the spec it is about to run). */
  private slot(app: string, projectId?: string): Slot {
    let s = this.slots.get(app);
    if (s && projectId) s.projectId = projectId;
    if (!s) {
      s = {
        app,
        projectId: projectId ?? app,
        state: 'stopped',
        current: null,
        starting: null,
        restarts: 0,
        consecutiveFailures: 0,
        restartTimer: null,
        lastActivity: Date.now(),
        generation: 0,
      };
      this.slots.set(app, s);
    }
    return s;
  }

  private setState(slot: Slot, state: RuntimeStateName): void {
    slot.state = state;
    try {
      this.opts.onState?.(slot.app, this.snapshot(slot.app)!);
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
        await this.promote(slot, inst, gen);
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

  /**
   * Makes a started, healthy instance the one that takes traffic (a deploy, a wake, a crash restart),
   * then stops the one it replaces. When the app was stopped or superseded while it started (`gen` is
   * no longer the slot's generation) or the server is closing, the new instance never takes traffic:
   * it is stopped and this throws, and whatever ran keeps running.
   */
  private async promote(slot: Slot, inst: Instance, gen: number): Promise<void> {
    if (gen !== slot.generation || this.closed) {
      await this.stopInstance(inst);
      throw new StartError('the app was stopped while it was starting', true);
    }
    const old = slot.current;
    slot.current = inst;
    slot.consecutiveFailures = 0;
    slot.lastActivity = Date.now();
    this.watch(slot, inst);
    this.setState(slot, 'running');
    if (old && old !== inst) {
      // The edge may send requests to the old address until it has heard of the new one (a worker thread).
      await this.opts.promoted?.(slot.app).catch(() => {});
      await this.stopInstance(old);
    }
  }

  private watch(slot: Slot, inst: Instance): void {
    void inst.exited.then(({ code, signal }) => {
      if (inst.stopping || slot.current !== inst || this.closed) return;
      // A crash: the instance that served traffic went away on its own.
      slot.current = null;
      slot.restarts++;
      slot.consecutiveFailures++;
      const logFile = this.opts.logs.runtime(slot.app);
      if (slot.consecutiveFailures > MAX_CONSECUTIVE_FAILURES) {
        logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] the app exited (${signal ?? `code ${code}`}) ${slot.consecutiveFailures} times in a row; giving up until the next deploy or enable` });
        this.setState(slot, 'failed');
        return;
      }
      const delay = restartDelayMs(slot.consecutiveFailures);
      logFile.append({ ts: new Date().toISOString(), stream: 'stderr', line: `[berth] the app exited (${signal ?? `code ${code}`}); restarting in ${delay} ms` });
      this.setState(slot, 'crashed');
      const gen = slot.generation;
      slot.restartTimer = setTimeout(() => {
        slot.restartTimer = null;
        if (gen !== slot.generation || this.closed || slot.current || slot.starting) return;
        this.startInto(slot, inst.spec).catch((e) => {
          this.opts.log.warn({ projectId: slot.projectId, app: slot.app, err: (e as Error).message }, 'app restart failed');
          if (gen !== slot.generation || this.closed) return;
          slot.consecutiveFailures++;
          if (slot.consecutiveFailures > MAX_CONSECUTIVE_FAILURES) return;
          // Try again later with a longer backoff.
          const again = restartDelayMs(slot.consecutiveFailures);
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

  private async startInstance(spec: ReleaseSpec): Promise<Instance> {
    if (this.closed) throw new StartError('the server is shutting down');
    const deps = {
      logs: this.opts.logs,
      driver: this.opts.driver,
      baseEnv: this.opts.baseEnv,
      healthTimeoutMs: this.opts.healthTimeoutMs,
      graceMs: this.opts.graceMs,
      boxName: (app: string) => `app-${app}-${++this.seq}`,
    };
    // A release that is an image (docker driver) runs as a container or a Swarm service.
    if (spec.image) {
      if (!this.opts.driver.apps) throw new StartError(`the release is an image (${spec.image}) and the ${this.opts.driver.name} runtime cannot run images: run Berth with BERTH_RUNTIME=docker, or deploy again`);
      return this.opts.driver.apps.start(spec, deps);
    }
    return startInstance(spec, deps);
  }

  private stopInstance(inst: Instance): Promise<void> {
    return stopInstance(inst, this.opts.graceMs);
  }
}
