/**
 * Health after go-live (contract section 20): every app this server runs keeps being checked once it
 * is running (its project's `config.healthPath` answering 200-399, else a TCP connect to its port,
 * every BERTH_HEALTH_CHECK_SECONDS, default 30). An app whose checks fail for
 * BERTH_HEALTH_DEGRADED_SECONDS (default 120), or that the supervisor restarted after crashes 5 times
 * in 10 minutes, is `degraded` (info.runtime.state, with the reason) until a check passes again with
 * fewer restarts than that: `recovered`. Both are written to the app's runtime log and the audit log
 * (`app.degraded`, `app.recovered`) and told to `ctx.ports.appHealthChanged`. With
 * `config.autoRollback` a degraded production app's previous ready release serves again.
 *
 * Apps that are not running (asleep, stopped, starting) are not checked, and a check that fails
 * because the app went to sleep or was replaced meanwhile does not count. Times are `ctx.clock`'s.
 */
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { probeApp } from '../../runtime/app-health.js';
import type { RuntimeSnapshot, Supervisor } from '../../runtime/supervisor.js';
import type { LogStore } from '../../runtime/logs.js';
import { insertAuditEvent } from '../audit/index.js';
import { autoRollback } from '../deployments/index.js';
import { projectQueries, hostReads } from '../projects/index.js';
import { appWhere } from './app-where.js';
import { DiskWatch, type DiskWatchedRuntime } from './disk-watch.js';
import type { AppHealthChange } from './ports.js';
import { envNumber } from './releases.js';

/** Crash restarts within RESTART_WINDOW_MS that make an app degraded. */
export const RESTART_LIMIT = 5;
export const RESTART_WINDOW_MS = 10 * 60_000;

interface Health {
  /** When the checks started failing (ctx.clock), null while they pass. */
  failingSince: number | null;
  lastFailure: string | null;
  /** When the supervisor restarted the app after a crash (ctx.clock), within the window. */
  restarts: number[];
  /** The supervisor's restart count last seen (it only grows). */
  seenRestarts: number;
  deploymentId: string | null;
  degraded: { reason: string; since: string } | null;
}

/** The parts of the runtime the watch reads (BerthRuntime); its volumes' watch reads the releases too. */
export type WatchedRuntime = DiskWatchedRuntime;

export class AppHealthWatch {
  private readonly apps = new Map<string, Health>();
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  /** Check rounds finished (tests wait for rounds instead of time). */
  rounds = 0;
  readonly intervalMs = envNumber('BERTH_HEALTH_CHECK_SECONDS', 30) * 1000;
  readonly degradedAfterMs = envNumber('BERTH_HEALTH_DEGRADED_SECONDS', 120) * 1000;

  /** The volumes near their limit (disk.near_limit), started and stopped with the health checks. */
  readonly disk: DiskWatch;

  constructor(private readonly rt: WatchedRuntime) {
    this.disk = new DiskWatch(rt);
  }

  start(): void {
    this.disk.start();
    this.timer = setInterval(() => void this.round().catch((err) => this.rt.ctx.log.warn({ err: (err as Error).message }, 'health check round failed')), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.disk.stop();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The app's degraded state (reason, since), or null. */
  degraded(app: string): { reason: string; since: string } | null {
    return this.apps.get(app)?.degraded ?? null;
  }

  forget(app: string): void {
    this.disk.forget(app);
    this.apps.delete(app);
  }

  /** A supervisor state change (BerthRuntime.onState): crash restarts counted, a new release starts afresh. */
  onState(app: string, snap: RuntimeSnapshot): void {
    const h = this.healthOf(app);
    const now = this.rt.ctx.clock.now();
    if (snap.deploymentId && snap.deploymentId !== h.deploymentId) {
      h.deploymentId = snap.deploymentId;
      h.failingSince = null;
      h.restarts = [];
    }
    for (let i = h.seenRestarts; i < snap.restarts; i++) h.restarts.push(now);
    h.seenRestarts = snap.restarts;
    h.restarts = h.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    // Asleep or stopped: not checked, and the failure window starts afresh when it runs again.
    if (snap.state === 'sleeping' || snap.state === 'stopped') h.failingSince = null;
    if (!h.degraded && h.restarts.length >= RESTART_LIMIT && snap.state !== 'sleeping' && snap.state !== 'stopped') {
      this.degrade(app, `restarted ${h.restarts.length} times in ${RESTART_WINDOW_MS / 60_000} minutes after crashes`).catch((err) => this.rt.ctx.log.warn({ app, err: (err as Error).message }, 'could not record a degraded app'));
    }
  }

  /** One round: every running app checked once, side by side. */
  async round(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const { supervisor } = this.rt;
      await Promise.all(supervisor.apps().filter((a) => supervisor.stateOf(a) === 'running').map((a) => this.check(a)));
      this.rounds++;
    } finally {
      this.checking = false;
    }
  }

  private healthOf(app: string): Health {
    let h = this.apps.get(app);
    if (!h) {
      h = { failingSince: null, lastFailure: null, restarts: [], seenRestarts: 0, deploymentId: null, degraded: null };
      this.apps.set(app, h);
    }
    return h;
  }

  private async check(app: string): Promise<void> {
    const { supervisor, ctx } = this.rt;
    const before = supervisor.snapshot(app);
    const upstream = supervisor.upstreamOf(app);
    if (!before || !upstream) return;
    const owner = await hostReads.projectOrgAnyOrg(ctx.db, supervisor.projectOf(app));
    if (!owner) return;
    const project = await projectQueries.findProject(ctx.db, owner.orgId, owner.id);
    const result = await probeApp(upstream, project?.healthPath ?? null);
    const h = this.healthOf(app);
    const now = ctx.clock.now();
    h.restarts = h.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    if (result.ok) {
      h.failingSince = null;
      if (h.degraded && h.restarts.length < RESTART_LIMIT) await this.recover(app);
      return;
    }
    // Only a failure of the instance that still runs counts (not one that went to sleep or was replaced).
    const after = supervisor.snapshot(app);
    if (after?.state !== 'running' || after.startedAt !== before.startedAt || after.pid !== before.pid) return;
    h.failingSince ??= now;
    h.lastFailure = result.reason;
    if (!h.degraded && now - h.failingSince >= this.degradedAfterMs) {
      await this.degrade(app, `health check failing for ${Math.round((now - h.failingSince) / 1000)} s: ${result.reason}`);
    }
  }

  private async degrade(app: string, reason: string): Promise<void> {
    const h = this.healthOf(app);
    if (h.degraded) return;
    h.degraded = { reason, since: new Date(this.rt.ctx.clock.now()).toISOString() };
    this.note(app, `degraded: ${reason}`);
    const change = await this.changeOf(app, 'degraded', reason, h.deploymentId);
    if (!change) return;
    if (change.environment === 'production') {
      const project = await projectQueries.findProject(this.rt.ctx.db, change.orgId, change.projectId);
      if (project?.autoRollback === 1) {
        try {
          const done = await autoRollback(this.rt.ctx, project, `the app is degraded: ${reason}`);
          if (done) change.rolledBackTo = done.to;
        } catch (err) {
          const message = `automatic rollback not possible: ${(err as Error).message}`;
          this.note(app, message);
          if (h.deploymentId) this.rt.logs.build(change.projectId, h.deploymentId).append({ ts: nowIso(), stream: 'stderr', line: `[berth] ${message}` });
        }
      }
    }
    await this.tell(change);
  }

  private async recover(app: string): Promise<void> {
    const h = this.healthOf(app);
    const was = h.degraded;
    if (!was) return;
    h.degraded = null;
    const reason = `checks pass again (degraded since ${was.since}: ${was.reason})`;
    this.note(app, `recovered: ${reason}`);
    const change = await this.changeOf(app, 'recovered', reason, h.deploymentId);
    if (change) await this.tell(change);
  }

  private note(app: string, line: string): void {
    this.rt.logs.runtime(app).append({ ts: nowIso(), stream: 'stderr', line: `[berth] ${line}` });
  }

  /** The change as listeners see it: the app's org, project and environment (null when the project is gone). */
  private async changeOf(app: string, state: AppHealthChange['state'], reason: string, deploymentId: string | null): Promise<AppHealthChange | null> {
    const where = await appWhere(this.rt.ctx, this.rt.supervisor, app);
    return where ? { ...where, state, reason, deploymentId } : null;
  }

  /** The audit entry, then every listener (a listener's failure is logged and changes nothing). */
  private async tell(change: AppHealthChange): Promise<void> {
    const { ctx } = this.rt;
    const details = { environment: change.environment, reason: change.reason, deploymentId: change.deploymentId, ...(change.rolledBackTo ? { rolledBackTo: change.rolledBackTo } : {}) };
    await insertAuditEvent(ctx.db, { orgId: change.orgId, actorId: null, action: `app.${change.state}`, resourceType: 'project', resourceId: change.projectId, details }).catch((err) =>
      ctx.log.warn({ projectId: change.projectId, err: (err as Error).message }, 'could not record an app health change'),
    );
    for (const listener of ctx.ports.appHealthChanged) {
      try {
        await listener(ctx, change);
      } catch (err) {
        ctx.log.warn({ projectId: change.projectId, err: (err as Error).message }, 'an app-health listener failed');
      }
    }
  }
}
