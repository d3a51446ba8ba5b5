import type { AppContext } from '../../context.js';
import { RequestLog } from '../../edge/requests.js';
import { nowIso } from '../../lib/ids.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import { createDriver } from '../../runtime/drivers.js';
import { LogStore } from '../../runtime/logs.js';
import { Supervisor, type RuntimeSnapshot, type Upstream } from '../../runtime/supervisor.js';
import type { DriverStatus } from '../../runtime/driver.js';
import { startEgressCheck, type EgressCheck } from '../../runtime/egress.js';
import { uidBase } from '../../runtime/identity.js';
import { projectQueries, hostReads } from '../projects/index.js';
import { hmacSha256Hex } from '../../lib/crypto.js';
import { AppOwnership } from './app-owners.js';
import * as store from '../deployments/index.js';
import { deploymentSettled } from '../deployments/index.js';
import { EdgeRoutes } from './edge-routes.js';
import { appKeyOf, isPreviewApp, projectOfAppKey } from '../../runtime/app-key.js';
import { startDiskLimits } from '../../runtime/disk-limits.js';
import { baseEnv, envNumber, Releases } from './releases.js';
import { LogRelay } from './log-relay.js';
import { span, timed } from '../../lib/spans.js';
import { AppHealthWatch } from './app-health-watch.js';
import { KeptLogs } from './kept-logs.js';
import { startEdge, type RunningEdge } from './edge-start.js';

/** Seconds an `auto_sleep` app may be idle before it is stopped (BERTH_SLEEP_IDLE_SECONDS, default 300). */
function sleepIdleMs(): number {
  const n = Number(process.env.BERTH_SLEEP_IDLE_SECONDS ?? 300);
  return (Number.isFinite(n) && n > 0 ? n : 300) * 1000;
}

/**
 * Build and run for one running Berth (made once per server by the hosting module's `provides`,
 * reached as `ctx.ports.runtimeHost`): the supervisor of apps, the log store, the edge proxy and its
 * request log, the builds in flight, and its lifecycle (start, restore after a restart, the sleep
 * sweeper, stop). Releases (releases.ts) and the edge's host cache (edge-routes.ts) are its parts.
 */
export class BerthRuntime {
  readonly logs: LogStore;
  readonly supervisor: Supervisor;
  readonly driver: RuntimeDriver;
  readonly releases: Releases;
  /** Which instance runs each app when several share one PostgreSQL (app-owners.ts; off on SQLite). */
  readonly owners: AppOwnership;
  readonly requests = new RequestLog(1000);
  /** AbortControllers of the builds running in this process, by deployment id. */
  readonly building = new Map<string, AbortController>();
  /** The deployment-settled listeners running now (settled.ts); a stop waits for them briefly. */
  readonly settling = new Set<Promise<void>>();
  /** The edge proxy and its TLS listener, on a worker thread of their own unless scale-out (edge-start.ts). */
  edge: RunningEdge | null = null;
  edgeUrl: string | null = null;
  httpsUrl: string | null = null;
  /** Resolves when the apps that ran before the last shutdown are back (tests wait on it). */
  restored: Promise<void> = Promise.resolve();
  private readonly routes: EdgeRoutes;
  /** The tail of each project's chain of release swaps (releaseSwap). */
  private readonly swaps = new Map<string, Promise<unknown>>();
  private sweeper: NodeJS.Timeout | null = null;
  private shuttingDown = false;
  /** The periodic check behind `runtime.egress` (egress.ts). */
  private egress: EgressCheck | null = null;
  readonly healthTimeoutMs = envNumber('BERTH_HEALTH_TIMEOUT_SECONDS', 30) * 1000;
  /** Health after go-live: running apps checked, degraded and recovered (app-health-watch.ts). */
  readonly health: AppHealthWatch = new AppHealthWatch(this);
  readonly keptLogs = new KeptLogs(this); // request logs on disk, log retention

  constructor(readonly ctx: AppContext) {
    this.logs = new LogStore(ctx.config.dataDir);
    this.driver = createDriver(ctx.config.runtime, ctx.config.dataDir, {}, ctx.config.docker, ctx.config.instance.name, ctx.uidRange);
    this.supervisor = new Supervisor({
      logs: this.logs,
      driver: this.driver,
      log: ctx.log,
      baseEnv: baseEnv(),
      healthTimeoutMs: this.healthTimeoutMs,
      graceMs: envNumber('BERTH_STOP_GRACE_SECONDS', 10) * 1000,
      onState: (app, snap) => this.onState(app, snap),
      promoted: () => this.edgeCaughtUp(),
    });
    this.releases = new Releases(ctx, this.driver, this.supervisor);
    this.routes = new EdgeRoutes(ctx, this.supervisor);
    this.routes.onInvalidate = () => this.edge?.invalidate();
    this.owners = new AppOwnership(ctx, {
      lost: (app) => this.supervisor.stop(app, 'stopped'),
      tookOver: (apps) => this.takeOver(apps),
    });
  }

  /**
   * Resolves once the edge sends no new request to an address the supervisor just replaced: the
   * threaded edge has handled every message posted before (the state change that dropped its cached
   * address comes first); the main-thread edge at once. Bounded, so that a stuck worker cannot hold a
   * swap: after 2 s the old instance is stopped anyway.
   */
  private async edgeCaughtUp(): Promise<void> {
    const edge = this.edge;
    if (!edge?.thread) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([edge.flush(), new Promise<void>((r) => (timer = setTimeout(r, 2000)))]);
    clearTimeout(timer);
  }

  /**
   * An app's state changed here. An app that came up here (a deploy, rollback, promotion or enable
   * run by this instance) is this instance's from now on: its lease moves here, and the instance that
   * ran it before stops its copy at its next tick (docs/scale-out.md). A start that failed here for an
   * app another instance runs leaves no trace here (the edge keeps forwarding to the running one).
   */
  private onState(app: string, snap: RuntimeSnapshot): void {
    this.health.onState(app, snap);
    this.edge?.appChanged(app);
    if (snap.state === 'running' && !this.owners.isMine(app) && !this.shuttingDown) void this.owners.claim(app, true);
    if (snap.state === 'failed' && this.owners.heldElsewhere(app)) {
      queueMicrotask(() => {
        if (this.supervisor.stateOf(app) === 'failed' && this.owners.heldElsewhere(app)) this.supervisor.forget(app);
      });
    }
    if (this.owners.isMine(app)) this.persist(app, snap);
  }

  /** What every app and build starts from: never the server's own environment (it holds its secrets). */
  baseEnv(): Record<string, string> {
    return baseEnv();
  }

  /**
   * Drops the edge's cached routes (enable, disable, deploy, delete, routing retry): the next
   * request of any host reloads.
   */
  invalidate(projectId?: string): void {
    this.routes.invalidate(projectId);
  }

  /**
   * Runs `fn` when no other release swap of the project runs in this server: a deploy's start,
   * health check and pointer move, a rollback's, and the pruning of release folders happen one at
   * a time per project, so what the supervisor runs and the current pointer agree.
   */
  releaseSwap<T>(projectId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.swaps.get(projectId) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.swaps.set(projectId, tail);
    void tail.then(() => {
      if (this.swaps.get(projectId) === tail) this.swaps.delete(projectId);
    });
    return run;
  }

  // ---------------------------------------------------------------- lifecycle

  async start(): Promise<void> {
    if (this.driver.isolation === 'none') {
      this.ctx.log.warn('BERTH_RUNTIME=process: builds and apps run WITHOUT isolation, as the server\'s own user, and can read its secret key and every project\'s data; use it only for code you trust');
    }
    const status = this.driver.status();
    if (!status.ready) this.ctx.log.error({ driver: status.driver }, `the ${status.driver} runtime cannot run builds or apps: ${status.reason}`);
    // What a previous run left (after a crash or kill -9): killed, before anything is started again.
    await this.driver.reclaim().catch((err) => this.ctx.log.error({ err: (err as Error).message }, 'could not reclaim what the previous run left'));
    // Disk limits: decided now, volume images mounted again, builds' images a stop left removed (disk-limits.ts).
    const disk = await startDiskLimits(this.ctx.config.dataDir, this.ctx.config.diskLimits, this.ctx.log, { swarm: this.ctx.config.docker.swarm });
    this.releases.diskLimits = disk;
    if (!disk.enforced && disk.mode !== 'off') this.ctx.log.warn(`disk limits are not enforced: ${disk.reason}`);
    this.egress = status.ready ? startEgressCheck(this.driver, envNumber('BERTH_EGRESS_CHECK_SECONDS', 300) * 1000, uidBase(this.ctx.uidRange) - 1) : null;
    const { edge, port } = await startEdge(this, this.routes, (app) => this.upstream(app));
    this.edge = edge;
    const h = this.ctx.config.edgeHost.includes(':') ? `[${this.ctx.config.edgeHost}]` : this.ctx.config.edgeHost;
    this.edgeUrl = `http://${h}:${port}`;
    const tlsPort = edge.httpsPort();
    if (tlsPort !== null) this.httpsUrl = `https://${h}:${tlsPort}`;
    this.owners.start(this.ctx.config.instance.url ?? `http://${loopbackOf(this.ctx.config.edgeHost)}:${port}`);
    const tick = Math.max(200, Math.min(5000, Math.floor(sleepIdleMs() / 4)));
    this.sweeper = setInterval(() => void this.sweep().catch((err) => this.ctx.log.warn({ err }, 'sleep sweep failed')), tick);
    this.sweeper.unref();
    this.health.start();
    this.keptLogs.start();
    this.restored = this.restore().catch((err) => this.ctx.log.error({ err }, 'could not restore running apps'));
  }

  /** This server's log relay: other instances' streams of the logs written here, and this one's of theirs (log-relay.ts). */
  get logRelay(): LogRelay {
    return (this.#relay ??= new LogRelay(this.ctx.bus, this.logs, this.requests));
  }
  #relay: LogRelay | undefined;

  /** The driver's status with the last egress check (GET /api/health `runtime`). */
  status(): DriverStatus {
    const egress = this.egress?.status();
    return egress ? { ...this.driver.status(), egress } : this.driver.status();
  }

  get isShuttingDown(): boolean { return this.shuttingDown; } // prettier-ignore

  async stop(): Promise<void> {
    this.shuttingDown = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.health.stop();
    this.keptLogs.stop();
    for (const c of this.building.values()) c.abort();
    await this.edge?.close();
    // The other instances take this one's apps over at their next tick (their runtime states say what ran).
    await this.owners.stop();
    if (this.settling.size) await Promise.race([Promise.all([...this.settling]), new Promise((r) => setTimeout(r, 5000).unref())]);
    this.driver.shuttingDown?.();
    await this.supervisor.stopAll();
    await this.egress?.stop();
    await this.driver.close?.().catch((err) => this.ctx.log.warn({ err: (err as Error).message }, 'could not remove the runtime\'s host rules'));
    this.logs.closeAll();
  }

  /** Marks builds a dead process left behind as failed, then starts what should run. */
  private async restore(): Promise<void> {
    // Several instances: builds in flight may be another live instance's; they are left alone then.
    const others = await this.owners.othersAlive().catch(() => 0);
    for (const d of others > 0 ? [] : await store.staleInFlight(this.ctx.db)) {
      if (this.building.has(d.id)) continue;
      if (await store.transition(this.ctx.db, d.orgId, d.id, ['building', 'deploying'], { status: 'failed', error: 'interrupted by a server restart', finishedAt: nowIso() })) deploymentSettled(this.ctx, d.orgId, d.id);
    }
    await this.startWhatRan(null, 'could not start the app after restart');
    // Containers a previous run left that no release adopted (a project since disabled, slept or deleted) go.
    await this.driver.apps?.sweepUnadopted().catch((err) => this.ctx.log.warn({ err: (err as Error).message }, 'could not remove the containers nothing adopted'));
  }

  /**
   * Starts the production apps that should run (enabled, with a ready release; an `auto_sleep` one
   * only when it was up): every one after a restart (`only` null), or the ones this instance just took
   * over. With several instances, only apps whose lease this instance holds or gets (a live owner
   * elsewhere keeps its own); a preview's app starts on its next request.
   */
  private async startWhatRan(only: Set<string> | null, failure: string): Promise<void> {
    const states = new Map((await store.allRuntimeStates(this.ctx.db)).map((s) => [s.projectId, s]));
    const projects = (await hostReads.projectsToRestore(this.ctx.db, store.readyProductionProjectIds(this.ctx.db))).filter((p) => !only || only.has(p.id));
    await Promise.all(
      projects.map(async (p) => {
        const prev = states.get(p.id);
        const wasUp = prev && ['running', 'starting', 'crashed'].includes(prev.state);
        if (p.sleepMode === 'auto_sleep' && !wasUp) return;
        if (!(await this.owners.claim(p.id))) return;
        try {
          await this.supervisor.acquire(p.id, () => this.releases.specFor(p.orgId, p.id), this.healthTimeoutMs + 5000);
        } catch (err) {
          this.ctx.log.warn({ projectId: p.id, err: (err as Error).message }, failure);
        }
      }),
    );
  }

  /** Apps taken over from an instance that stopped renewing its leases (app-owners.ts). */
  private async takeOver(apps: string[]): Promise<void> {
    if (this.shuttingDown) return;
    this.invalidate();
    await this.startWhatRan(new Set(apps.filter((a) => !isPreviewApp(a))), 'could not start an app taken over from another instance');
  }

  /**
   * Makes the instance that runs an app elsewhere stop it (see AppOwnership.evict): a disable, a
   * static release or a sleeping preview's new release decided here.
   */
  evict(app: string): Promise<void> {
    return this.owners.evict(app);
  }

  /**
   * The secret the edges of instances sharing one database prove a forwarded request with (derived
   * from the shared secret key): such a request's client address and scheme are believed.
   */
  hopToken(): string {
    return hmacSha256Hex(this.ctx.keyring.current.key, 'berth edge hop v1');
  }

  /**
   * Records a production app's state (a restart brings back what ran). A preview environment's app is
   * not recorded: it is started by its first request after a restart as after any sleep.
   */
  private persist(projectId: string, snap: RuntimeSnapshot): void {
    if (this.shuttingDown || isPreviewApp(projectId)) return;
    void (async () => {
      const p = await hostReads.projectOrgAnyOrg(this.ctx.db, projectId);
      if (!p) return;
      await store.saveRuntimeState(this.ctx.db, {
        projectId,
        orgId: p.orgId,
        deploymentId: snap.deploymentId ?? null,
        state: snap.state,
        port: snap.port ?? null,
        pid: snap.pid ?? null,
        startedAt: snap.startedAt ?? null,
        updatedAt: nowIso(),
      });
    })().catch(() => {
      /* the database may be closing */
    });
  }

  /** Stops `auto_sleep` apps, and every preview environment's app, idle longer than BERTH_SLEEP_IDLE_SECONDS. */
  private async sweep(): Promise<void> {
    if (this.shuttingDown) return;
    const idle = sleepIdleMs();
    // An app with an open request or WebSocket connection is busy, not idle.
    for (const id of this.supervisor.apps()) if (this.edge && this.edge.openConnections(id) > 0) this.supervisor.touch(id);
    const candidates = this.supervisor.apps().filter((id) => this.supervisor.snapshot(id)?.state === 'running' && this.supervisor.idleMs(id) > idle);
    if (candidates.length === 0) return;
    // Previews always sleep (contract section 16); production apps when their project says auto_sleep.
    const previews = candidates.filter(isPreviewApp);
    const production = candidates.filter((id) => !isPreviewApp(id));
    const sleepy = production.length ? (await hostReads.sleepModesOf(this.ctx.db, production)).filter((r) => r.sleepMode === 'auto_sleep').map((r) => r.id) : [];
    for (const app of [...sleepy, ...previews]) {
      if (this.supervisor.idleMs(app) <= idle) continue;
      this.logs.runtime(app).append({ ts: nowIso(), stream: 'stderr', line: `[berth] idle for ${Math.round(idle / 1000)} s: going to sleep until the next request` });
      await this.supervisor.stop(app, 'sleeping');
    }
  }

  /**
   * The address of an app for the edge (`app`: the target's key, a project's id or a preview
   * environment's key), starting it when it is not running (an `auto_sleep` app, any preview).
   */
  private upstream(app: string): Upstream | Promise<Upstream> {
    const up = this.supervisor.upstreamNow(app);
    if (up) return up;
    if (this.owners.isMine(app)) return this.wake(app);
    // Several instances: the app runs here once this instance holds its lease (nobody else runs it).
    return this.owners.claim(app).then((held) => {
      if (!held) throw new Error('This app runs on another Berth instance that is not reachable right now; try again in a moment.');
      return this.wake(app);
    });
  }

  /** Starts the app here (wake), or waits for its start in flight. */
  private wake(app: string): Promise<Upstream> {
    const projectId = projectOfAppKey(app);
    const whole = span('wake.total');
    return this.supervisor.acquire(
      app,
      async () => {
        const loaded = span('wake.load-spec');
        const p = await hostReads.projectStatusAnyOrg(this.ctx.db, projectId).finally(loaded);
        if (!p || p.status !== 'enabled') return null;
        if (app === projectId) return timed('wake.spec-for', () => this.releases.specFor(p.orgId, projectId));
        const env = (await projectQueries.listEnvironments(this.ctx.db, p.orgId, projectId)).find((e) => e.type === 'preview' && appKeyOf(projectId, e.name) === app);
        return env ? this.releases.specFor(p.orgId, projectId, env.name) : null;
      },
      this.healthTimeoutMs + 5000,
    ).finally(whole);
  }

  /** The port the edge's TLS listener listens on (its configured one before it listens; null: none). */
  httpsPort(): number | null {
    return this.edge?.httpsPort() ?? this.ctx.config.https.port;
  }

  /** Resolves once every request the edge answered so far is recorded (read the request log or its stats after it). */
  async edgeRecorded(): Promise<void> {
    await this.edge?.flush();
  }

  /** The port the edge listens on (its configured one before it listens). */
  edgePort(): number {
    return this.edge?.port() ?? this.ctx.config.edgePort;
  }
}

/** The address the other instances reach this edge at, by default: loopback for a wildcard or loopback edge host. */
function loopbackOf(edgeHost: string): string {
  if (edgeHost === '0.0.0.0' || edgeHost === '::' || edgeHost === 'localhost' || edgeHost === '') return '127.0.0.1';
  return edgeHost.includes(':') ? `[${edgeHost}]` : edgeHost;
}

/** The runtime of a running Berth (`ctx.ports.runtimeHost`, made by the hosting module's `provides`). */
export function runtimeOf(ctx: Pick<AppContext, 'ports'>): BerthRuntime {
  const rt = ctx.ports.runtimeHost;
  if (!rt) throw new Error('this server has no runtime (the hosting module provides it)');
  return rt;
}

/** The same, under the name tests use. */
export const getRuntime = runtimeOf;

/** The edge URL once the edge listens (printed by `berth serve`), else null. */
export function edgeUrlOf(ctx: Pick<AppContext, 'ports'>): string | null {
  return ctx.ports.runtimeHost?.edgeUrl ?? null;
}
