/**
 * `disk.near_limit` (contract section 20): every BERTH_DISK_CHECK_SECONDS (default 300) the volume of
 * every app this server has (production and previews) is measured as `info.runtime.disk` measures it
 * (statfs of its size-limited image, else the bounded walk of disk-usage.ts) against its limit
 * (`resources.production.diskMb`; on its image, what the image's filesystem holds when that is less:
 * ext4 keeps a few MB of its own), and so is every volume another area lists on
 * `ctx.ports.watchedVolumes` (the services area: each managed service's data against its
 * `resources.diskMb`). A volume at NEAR_LIMIT of its limit or more is told once: a line in the app's
 * runtime log (the service's log), an audit event (`disk.near_limit`, no actor) and `ctx.ports.diskNearLimit`'s
 * listeners (the notifications area). It is told again only after it went below REARM_BELOW (files
 * removed, or diskMb raised). What was told lives in this server's memory: a restart may tell a volume
 * that is still full once more.
 */
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { volumeDiskUsage } from '../../runtime/disk-limits.js';
import type { LogStore } from '../../runtime/logs.js';
import type { Supervisor } from '../../runtime/supervisor.js';
import { insertAuditEvent } from '../audit/index.js';
import { hostReads } from '../projects/index.js';
import { appWhere } from './app-where.js';
import type { DiskNearLimit, WatchedVolume } from './ports.js';
import { envNumber, type Releases } from './releases.js';

/** The share of diskMb at which a volume is told. */
export const NEAR_LIMIT = 0.9;
/** The share it must go below before it can be told again. */
export const REARM_BELOW = 0.8;

/** The parts of the runtime the watch reads (BerthRuntime). */
export interface DiskWatchedRuntime {
  readonly ctx: AppContext;
  readonly supervisor: Supervisor;
  readonly logs: LogStore;
  readonly releases: Releases;
}

export class DiskWatch {
  /** Apps told and not below REARM_BELOW since. */
  private readonly told = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  /** 0: never (`BERTH_DISK_CHECK_SECONDS=0`). */
  readonly intervalMs = process.env.BERTH_DISK_CHECK_SECONDS?.trim() === '0' ? 0 : envNumber('BERTH_DISK_CHECK_SECONDS', 300) * 1000;

  constructor(private readonly rt: DiskWatchedRuntime) {}

  start(): void {
    if (this.timer || this.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.round().catch((err) => this.rt.ctx.log.warn({ err: (err as Error).message }, 'disk check round failed')), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  forget(app: string): void {
    this.told.delete(app);
  }

  /** One round: every app's volume and every volume the other areas list, one after another (a walk reads the disk). */
  async round(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      // Stopped apps are not measured: their volume does not grow, and another instance may run them.
      for (const app of this.rt.supervisor.apps().filter((a) => this.rt.supervisor.stateOf(a) !== 'stopped')) {
        await this.checkApp(app).catch((err) => this.rt.ctx.log.warn({ app, err: (err as Error).message }, 'could not measure an app volume'));
      }
      const others = this.rt.ctx.ports.watchedVolumes.flatMap((list) => list());
      for (const v of others) {
        await this.checkVolume(v).catch((err) => this.rt.ctx.log.warn({ key: v.key, err: (err as Error).message }, 'could not measure a volume'));
      }
      // Volumes gone since (a service deleted) start afresh if they come back.
      const now = new Set(others.map((v) => v.key));
      for (const k of this.told) if (k.startsWith('volume:') && !now.has(k.slice(7))) this.told.delete(k);
    } finally {
      this.checking = false;
    }
  }

  private async checkApp(app: string): Promise<void> {
    const { ctx, releases } = this.rt;
    const where = await appWhere(ctx, this.rt.supervisor, app);
    if (!where) return;
    const facts = await hostReads.projectRuntimeFacts(ctx.db, where.orgId, where.projectId);
    if (!facts) return;
    const limitMb = releases.diskMbOf(facts.resources, 'production');
    const dir = where.environment === 'production' ? releases.volumeDir(where.projectId) : releases.previewVolumeDir(where.projectId, where.environment);
    const near = await this.measure(app, dir, limitMb);
    if (!near) return;
    const pct = Math.floor(near.share * 100);
    this.rt.logs.runtime(app).append({ ts: nowIso(), stream: 'stderr', line: `[berth] the volume is ${pct}% full: ${near.usedMb} MB of its ${limitMb} MB (resources.production.diskMb)` });
    await this.tell({ ...where, ...near, limitMb });
  }

  private async checkVolume(v: WatchedVolume): Promise<void> {
    const near = await this.measure(`volume:${v.key}`, v.dir, v.limitMb);
    if (!near) return;
    v.note(`the data is ${Math.floor(near.share * 100)}% full: ${near.usedMb} MB of its ${v.limitMb} MB (resources.diskMb)`);
    await this.tell({ orgId: v.orgId, projectId: v.projectId, environment: v.environment, service: v.service, limitMb: v.limitMb, ...near });
  }

  /** The volume's use when it is to be told now (at NEAR_LIMIT or more, not told since it was below REARM_BELOW); else null. */
  private async measure(key: string, dir: string, limitMb: number): Promise<Pick<DiskNearLimit, 'usedMb' | 'enforced' | 'share'> | null> {
    const disk = await volumeDiskUsage(dir, limitMb, this.rt.releases.diskLimits, true);
    // On its image the volume is full a little before diskMb (ext4 keeps blocks of its own).
    const share = disk.usedMb / (disk.enforced && disk.sizeMb ? Math.min(limitMb, disk.sizeMb) : limitMb);
    if (share < REARM_BELOW) {
      this.told.delete(key);
      return null;
    }
    if (share < NEAR_LIMIT || this.told.has(key)) return null;
    this.told.add(key);
    return { usedMb: disk.usedMb, enforced: disk.enforced, share };
  }

  /** The audit entry, then every listener (a listener's failure is logged and changes nothing). */
  private async tell(near: DiskNearLimit): Promise<void> {
    const { ctx } = this.rt;
    const details = { environment: near.environment, ...(near.service ? { service: near.service } : {}), usedMb: near.usedMb, limitMb: near.limitMb, enforced: near.enforced };
    await insertAuditEvent(ctx.db, { orgId: near.orgId, actorId: null, action: 'disk.near_limit', resourceType: 'project', resourceId: near.projectId, details }).catch((err) =>
      ctx.log.warn({ projectId: near.projectId, err: (err as Error).message }, 'could not record a volume near its limit'),
    );
    for (const listener of ctx.ports.diskNearLimit) {
      try {
        await listener(ctx, near);
      } catch (err) {
        ctx.log.warn({ projectId: near.projectId, err: (err as Error).message }, 'a disk listener failed');
      }
    }
  }
}
