import { rmSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { EdgeServer, type EdgeTarget } from '../../edge/proxy.js';
import { RequestLog } from '../../edge/requests.js';
import { compileRules, type CompiledRule } from '../../edge/rules.js';
import { nowIso } from '../../lib/ids.js';
import { DEFAULT_PIDS_MAX, type Limits } from '../../runtime/cgroups.js';
import type { Identity, RuntimeDriver } from '../../runtime/driver.js';
import { createDriver } from '../../runtime/drivers.js';
import { uidBase } from '../../runtime/identity.js';
import { LogStore } from '../../runtime/logs.js';
import { pathWithBin, startSteps } from '../../runtime/build.js';
import { Supervisor, type ReleaseSpec, type RuntimeSnapshot, type Upstream } from '../../runtime/supervisor.js';
import { resolveEnvForRuntime } from '../projects/env.service.js';
import { listDomains, listRouteRules } from '../projects/projects.store.js';
import type { RuntimePort, RuntimeState } from '../projects/runtime-port.js';
import * as store from './deployments.store.js';

/** Seconds an `auto_sleep` app may be idle before it is stopped (BERTH_SLEEP_IDLE_SECONDS, default 300). */
function sleepIdleMs(): number {
  const n = Number(process.env.BERTH_SLEEP_IDLE_SECONDS ?? 300);
  return (Number.isFinite(n) && n > 0 ? n : 300) * 1000;
}

function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** After this, a host's cached project, release and route rules are refreshed in the background. */
const ROUTE_TTL_MS = 400;
/** Older than this, a cached answer is not served while it is refreshed (rule changes: within 1 s). */
const ROUTE_STALE_MS = 800;

type RouteValue = { project: store.EdgeProject; hasRelease: boolean; rules: CompiledRule[] };

interface RouteEntry {
  at: number;
  value: Promise<RouteValue | null>;
  /** Set once loaded (null: no project at this host). */
  resolved?: RouteValue | null;
  refreshing: boolean;
  /** The target answered while the project can serve (reused, no allocation per request). */
  ok?: EdgeTarget;
}

/**
 * Build and run for one running Berth (one AppContext): the supervisor of apps, the log store, the
 * edge proxy and its request log, the builds in flight, and the sleep sweeper.
 */
export class BerthRuntime {
  readonly logs: LogStore;
  readonly supervisor: Supervisor;
  readonly driver: RuntimeDriver;
  readonly requests = new RequestLog(1000);
  /** AbortControllers of the builds running in this process, by deployment id. */
  readonly building = new Map<string, AbortController>();
  edge: EdgeServer | null = null;
  edgeUrl: string | null = null;
  /** Resolves when the apps that ran before the last shutdown are back (tests wait on it). */
  restored: Promise<void> = Promise.resolve();
  private readonly routes = new Map<string, RouteEntry>();
  private sweeper: NodeJS.Timeout | null = null;
  private shuttingDown = false;
  readonly healthTimeoutMs = envNumber('BERTH_HEALTH_TIMEOUT_SECONDS', 30) * 1000;

  constructor(private readonly ctx: AppContext) {
    this.logs = new LogStore(ctx.config.dataDir);
    this.driver = createDriver(ctx.config.runtime, ctx.config.dataDir);
    this.supervisor = new Supervisor({
      logs: this.logs,
      driver: this.driver,
      log: ctx.log,
      baseEnv: this.baseEnv(),
      healthTimeoutMs: this.healthTimeoutMs,
      graceMs: envNumber('BERTH_STOP_GRACE_SECONDS', 10) * 1000,
      onState: (projectId, snap) => this.persist(projectId, snap),
    });
  }

  /** What every app and build starts from: never the server's own environment (it holds its secrets). */
  baseEnv(): Record<string, string> {
    const e: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: process.env.LANG ?? 'C.UTF-8' };
    if (process.env.TZ) e.TZ = process.env.TZ;
    return e;
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
    const edge = new EdgeServer(
      {
        lookup: (host) => this.lookup(host),
        upstream: (projectId) => this.upstream(projectId),
      },
      this.requests,
      this.ctx.log,
    );
    let addr: { host: string; port: number };
    try {
      addr = await edge.listen(this.ctx.config.edgeHost, this.ctx.config.edgePort);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new Error(
        `the edge proxy cannot listen on ${this.ctx.config.edgeHost}:${this.ctx.config.edgePort}` +
          (code === 'EADDRINUSE' ? ': the port is in use (set --edge-port / BERTH_EDGE_PORT, 0 picks a free one)' : `: ${(e as Error).message}`),
      );
    }
    this.edge = edge;
    const h = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
    this.edgeUrl = `http://${h}:${addr.port}`;
    const tick = Math.max(200, Math.min(5000, Math.floor(sleepIdleMs() / 4)));
    this.sweeper = setInterval(() => void this.sweep().catch((err) => this.ctx.log.warn({ err }, 'sleep sweep failed')), tick);
    this.sweeper.unref();
    this.restored = this.restore().catch((err) => this.ctx.log.error({ err }, 'could not restore running apps'));
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  async stop(): Promise<void> {
    this.shuttingDown = true;
    if (this.sweeper) clearInterval(this.sweeper);
    for (const c of this.building.values()) c.abort();
    await this.edge?.close();
    await this.supervisor.stopAll();
    this.logs.closeAll();
  }

  /** Marks builds a dead process left behind as failed, then starts what should run. */
  private async restore(): Promise<void> {
    for (const d of await store.staleInFlight(this.ctx.db)) {
      if (this.building.has(d.id)) continue;
      await store.transition(this.ctx.db, d.orgId, d.id, ['building', 'deploying'], { status: 'failed', error: 'interrupted by a server restart', finishedAt: nowIso() });
    }
    const states = new Map((await store.allRuntimeStates(this.ctx.db)).map((s) => [s.projectId, s]));
    const projects = await store.runnableProjects(this.ctx.db);
    await Promise.all(
      projects.map(async (p) => {
        const prev = states.get(p.id);
        const wasUp = prev && ['running', 'starting', 'crashed'].includes(prev.state);
        if (p.sleepMode === 'auto_sleep' && !wasUp) return;
        try {
          const spec = await this.specFor(p.orgId, p.id);
          if (spec) await this.supervisor.deploy(spec);
        } catch (err) {
          this.ctx.log.warn({ projectId: p.id, err: (err as Error).message }, 'could not start the app after restart');
        }
      }),
    );
  }

  private persist(projectId: string, snap: RuntimeSnapshot): void {
    if (this.shuttingDown) return;
    void (async () => {
      const p = await this.ctx.db.selectFrom('projects').select(['id', 'orgId']).where('id', '=', projectId).executeTakeFirst();
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

  /** Stops `auto_sleep` apps idle longer than BERTH_SLEEP_IDLE_SECONDS. */
  private async sweep(): Promise<void> {
    if (this.shuttingDown) return;
    const idle = sleepIdleMs();
    // A project with an open request or WebSocket connection is busy, not idle.
    for (const id of this.supervisor.projectIds()) if (this.edge && this.edge.openConnections(id) > 0) this.supervisor.touch(id);
    const candidates = this.supervisor.projectIds().filter((id) => this.supervisor.snapshot(id)?.state === 'running' && this.supervisor.idleMs(id) > idle);
    if (candidates.length === 0) return;
    const rows = await this.ctx.db.selectFrom('projects').select(['id', 'sleepMode']).where('id', 'in', candidates).execute();
    for (const r of rows) {
      if (r.sleepMode !== 'auto_sleep') continue;
      if (this.supervisor.idleMs(r.id) <= idle) continue;
      this.logs.runtime(r.id).append({ ts: nowIso(), stream: 'stderr', line: `[berth] idle for ${Math.round(idle / 1000)} s: going to sleep until the next request` });
      await this.supervisor.stop(r.id, 'sleeping');
    }
  }

  // ---------------------------------------------------------------- releases

  /** The spec of the project's current production release, or null when it has none. */
  async specFor(orgId: string, projectId: string): Promise<ReleaseSpec | null> {
    const rel = await store.currentRelease(this.ctx.db, orgId, projectId, 'production');
    if (!rel || !rel.releaseDir || !rel.startCommand) return null;
    const project = await this.ctx.db.selectFrom('projects').select(['resources', 'port']).where('orgId', '=', orgId).where('id', '=', projectId).executeTakeFirst();
    if (!project) return null;
    const { env, secrets } = await resolveEnvForRuntime(this.ctx, projectId, 'production');
    return this.releaseSpec(orgId, projectId, rel.id, rel.releaseDir, rel.startCommand, project, env, secrets);
  }

  /** The spec of one release (its folder and start command) with the project's env and limits. */
  async releaseSpec(
    orgId: string,
    projectId: string,
    deploymentId: string,
    appDir: string,
    command: string,
    project: { resources: string; port: number },
    env: Record<string, string>,
    secrets: string[],
  ): Promise<ReleaseSpec> {
    const base = this.baseEnv();
    return {
      projectId,
      orgId,
      deploymentId,
      appRoot: this.releaseRootOf(appDir),
      cwd: appDir,
      steps: (finalEnv) => startSteps(appDir, command, finalEnv),
      env,
      secrets,
      dataDir: this.volumeDir(projectId),
      limits: this.limitsOf(project.resources, 'production'),
      identity: await this.identityOf(orgId, projectId),
      port: Number(project.port) > 0 ? Number(project.port) : 3000,
      path: (cwdInside) => env.PATH ?? pathWithBin(cwdInside, base.PATH),
    };
  }

  /**
   * The folder a release is shown at `/app` from: `<builds>/<projectId>/<deploymentId>/src`, whatever
   * root directory below it the app runs in.
   */
  releaseRootOf(releaseDir: string): string {
    const base = path.join(this.ctx.config.dataDir, 'builds');
    const rel = path.relative(base, path.resolve(releaseDir)).split(path.sep);
    if (rel.length >= 3 && rel[0] !== '..' && rel[2] === 'src') return path.join(base, rel[0]!, rel[1]!, 'src');
    return releaseDir;
  }

  /**
   * The project's own uid/gid when the driver switches users (sandbox as root), allocated on first
   * use (the supervisor hands the volume to it, the build the source).
   */
  async identityOf(orgId: string, projectId: string): Promise<Identity | null> {
    if (this.driver.isolation !== 'sandbox' || process.getuid?.() !== 0) return null;
    const uid = await store.sandboxUid(this.ctx.db, orgId, projectId, uidBase(), nowIso());
    return { uid, gid: uid };
  }

  volumeDir(projectId: string): string {
    return path.join(this.ctx.config.dataDir, 'volumes', path.basename(projectId), 'data');
  }

  limitsOf(resources: string, which: 'production' | 'build'): Limits {
    const pidsMax = envNumber('BERTH_PIDS_MAX', DEFAULT_PIDS_MAX);
    const def = which === 'production' ? { cpuCores: 1, memoryMb: 512, pidsMax } : { cpuCores: 2, memoryMb: 2048, pidsMax };
    try {
      const r = JSON.parse(resources)?.[which] ?? {};
      return {
        cpuCores: Number(r.cpuCores) > 0 ? Number(r.cpuCores) : def.cpuCores,
        memoryMb: Number(r.memoryMb) > 0 ? Number(r.memoryMb) : def.memoryMb,
        pidsMax: Number(r.pidsMax) > 0 ? Number(r.pidsMax) : def.pidsMax,
      };
    } catch {
      return def;
    }
  }

  /** Drops release folders of a project but the newest `keep` ready ones. */
  async pruneReleases(orgId: string, projectId: string, keep = 3): Promise<void> {
    const keepIds = await store.readyDeploymentIds(this.ctx.db, orgId, projectId, keep);
    const running = this.supervisor.snapshot(projectId)?.deploymentId;
    if (running) keepIds.push(running);
    for (const r of await store.oldReleaseDirs(this.ctx.db, orgId, projectId, keepIds)) {
      const base = path.join(this.ctx.config.dataDir, 'builds');
      const dir = path.resolve(r.releaseDir);
      if (!dir.startsWith(base + path.sep)) continue;
      // releaseDir is <builds>/<projectId>/<deploymentId>/src[/root]: remove the deployment's folder.
      const rel = path.relative(base, dir).split(path.sep);
      if (rel.length < 2) continue;
      rmSync(path.join(base, rel[0]!, rel[1]!), { recursive: true, force: true });
      await store.updateBuild(this.ctx.db, orgId, r.deploymentId, { releaseDir: null });
    }
  }

  // ---------------------------------------------------------------- edge backend

  /**
   * Drops the edge's cached routes (enable, disable, deploy, delete, routing retry). The cache is small
   * and short-lived, so everything goes: the next request of any host reloads.
   */
  invalidate(_projectId?: string): void {
    this.routes.clear();
  }

  private async load(host: string): Promise<RouteValue | null> {
    let project = await store.projectByDomain(this.ctx.db, host);
    const suffix = '.' + this.ctx.config.appsDomain.toLowerCase();
    if (!project && host.endsWith(suffix)) {
      const slug = host.slice(0, -suffix.length);
      if (slug && !slug.includes('.')) project = await store.projectBySlug(this.ctx.db, slug);
    }
    if (!project || project.location !== 'local') return null;
    const rel = await store.currentRelease(this.ctx.db, project.orgId, project.id, 'production');
    const rules = compileRules(await listRouteRules(this.ctx.db, project.orgId, project.id));
    return { project, hasRelease: !!rel, rules };
  }

  /**
   * The edge's view of a host. Fresh cache hits answer synchronously; an entry older than the TTL is
   * refreshed in the background while the previous answer is still served (so a change is seen within
   * the TTL plus one query), and a host not cached yet waits for its first load.
   */
  private lookup(host: string): EdgeTarget | null | Promise<EdgeTarget | null> {
    const now = Date.now();
    let e = this.routes.get(host);
    if (!e) {
      const entry: RouteEntry = { at: now, value: this.load(host), refreshing: false };
      this.routes.set(host, entry);
      if (this.routes.size > 10000) this.routes.clear();
      entry.value.then(
        (v) => {
          entry.resolved = v;
        },
        () => this.routes.delete(host),
      );
      e = entry;
    } else if (now - e.at > ROUTE_TTL_MS && e.resolved !== undefined) {
      const entry = e;
      if (!entry.refreshing) {
        entry.refreshing = true;
        entry.value = this.load(host);
        entry.value.then(
          (v) => {
            entry.resolved = v;
            entry.ok = undefined;
            entry.at = Date.now();
            entry.refreshing = false;
          },
          () => {
            entry.refreshing = false;
            this.routes.delete(host);
          },
        );
      }
      // Within the bound a change must be enforced in, the previous answer is still good enough;
      // an older one waits for the fresh load.
      if (now - entry.at > ROUTE_STALE_MS) return entry.value.then((v) => this.targetOf(entry, v ?? null));
    }
    const entry = e;
    if (entry.resolved === undefined) return entry.value.then((v) => this.targetOf(entry, v ?? null));
    return this.targetOf(entry, entry.resolved);
  }

  private targetOf(entry: RouteEntry, v: RouteValue | null): EdgeTarget | null {
    if (!v) return null;
    let unavailable: string | null = null;
    if (v.project.status !== 'enabled') unavailable = 'This project is disabled.';
    else if (!v.hasRelease) unavailable = 'This project has not been deployed yet.';
    else if (this.supervisor.stateOf(v.project.id) === 'failed') unavailable = 'The app failed to start; check its logs.';
    if (unavailable) return { projectId: v.project.id, unavailable, rules: v.rules };
    if (!entry.ok || entry.ok.rules !== v.rules) entry.ok = { projectId: v.project.id, unavailable: null, rules: v.rules };
    return entry.ok;
  }

  private upstream(projectId: string): Upstream | Promise<Upstream> {
    const up = this.supervisor.upstreamNow(projectId);
    if (up) return up;
    return this.supervisor.acquire(
      projectId,
      async () => {
        const p = await this.ctx.db.selectFrom('projects').select(['orgId', 'status']).where('id', '=', projectId).executeTakeFirst();
        if (!p || p.status !== 'enabled') return null;
        return this.specFor(p.orgId, projectId);
      },
      this.healthTimeoutMs + 5000,
    );
  }

  // ---------------------------------------------------------------- the projects area's port

  port(): RuntimePort {
    return {
      state: async (_ctx, orgId, projectId) => this.state(orgId, projectId),
      bringOnline: async (_ctx, orgId, projectId) => {
        this.invalidate(projectId);
        const p = await store.projectById(this.ctx.db, orgId, projectId);
        if (!p) return;
        const spec = await this.specFor(orgId, projectId);
        if (!spec) return;
        // always_on apps start now; auto_sleep apps start on their next request.
        if (p.sleepMode === 'always_on' || this.supervisor.snapshot(projectId)?.state === 'failed') {
          await this.supervisor.deploy(spec).catch((err) => this.ctx.log.warn({ projectId, err: (err as Error).message }, 'app did not start on enable'));
        }
      },
      takeOffline: async (_ctx, _orgId, projectId) => {
        this.invalidate(projectId);
        await this.supervisor.stop(projectId, 'stopped');
      },
      syncRouting: async () => {
        this.invalidate();
        return { status: 'synced' };
      },
      removeProject: async (_ctx, _orgId, projectId) => {
        this.invalidate(projectId);
        for (const d of await this.ctx.db.selectFrom('deployments').select('id').where('projectId', '=', projectId).where('status', 'in', [...store.IN_FLIGHT]).execute()) {
          this.building.get(d.id)?.abort();
        }
        await this.supervisor.stop(projectId, 'stopped');
        this.supervisor.forget(projectId);
        this.logs.removeProject(projectId);
        this.requests.forget(projectId);
      },
    };
  }

  async state(orgId: string, projectId: string): Promise<RuntimeState | null> {
    const p = await this.ctx.db.selectFrom('projects').select(['id', 'slug', 'port', 'status', 'sleepMode']).where('orgId', '=', orgId).where('id', '=', projectId).executeTakeFirst();
    if (!p) return null;
    const domains = await listDomains(this.ctx.db, orgId, projectId);
    const host = domains.find((d) => d.isPrimary === 1)?.domain ?? `${p.slug}.${this.ctx.config.appsDomain}`;
    const edgePort = this.edgePort();
    const url = `http://${host}${edgePort && edgePort !== 80 ? `:${edgePort}` : ''}`;
    const snap = this.supervisor.snapshot(projectId);
    const limits = {
      isolation: this.driver.isolation,
      ...(this.driver.limits.enforced ? {} : { limitsEnforced: false }),
      ...(this.driver.limits.note ? { limitsNote: this.driver.limits.note } : {}),
    };
    if (snap && snap.state !== 'stopped') {
      return { state: snap.state, url, port: snap.port ?? p.port, ...(snap.pid ? { pid: snap.pid } : {}), ...(snap.startedAt ? { startedAt: snap.startedAt } : {}), ...limits } as RuntimeState;
    }
    const rel = await store.currentRelease(this.ctx.db, orgId, projectId, 'production');
    let state = 'not_deployed';
    if (rel) state = p.status !== 'enabled' ? 'stopped' : p.sleepMode === 'auto_sleep' ? 'sleeping' : 'stopped';
    return { state, url, port: p.port, ...limits } as RuntimeState;
  }

  edgePort(): number {
    const a = this.edge?.server.address();
    return a && typeof a === 'object' ? a.port : this.ctx.config.edgePort;
  }
}

const runtimes = new WeakMap<AppContext, BerthRuntime>();

/** The runtime of a running Berth (made on first use). */
export function getRuntime(ctx: AppContext): BerthRuntime {
  let r = runtimes.get(ctx);
  if (!r) {
    r = new BerthRuntime(ctx);
    runtimes.set(ctx, r);
  }
  return r;
}

/** The projects area's runtime port: dispatches to the runtime of the calling context. */
export const runtimePort: RuntimePort = {
  state: (ctx, orgId, projectId) => getRuntime(ctx).port().state(ctx, orgId, projectId),
  bringOnline: (ctx, orgId, projectId) => getRuntime(ctx).port().bringOnline(ctx, orgId, projectId),
  takeOffline: (ctx, orgId, projectId) => getRuntime(ctx).port().takeOffline(ctx, orgId, projectId),
  syncRouting: (ctx, orgId, projectId, freeDomain) => getRuntime(ctx).port().syncRouting(ctx, orgId, projectId, freeDomain),
  removeProject: (ctx, orgId, projectId) => getRuntime(ctx).port().removeProject(ctx, orgId, projectId),
};

/** The edge URL once the edge listens (printed by `berth serve`), else null. */
export function edgeUrlOf(ctx: AppContext): string | null {
  return runtimes.get(ctx)?.edgeUrl ?? null;
}
