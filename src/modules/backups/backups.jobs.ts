import type { AppContext } from '../../context.js';
import { recoverStale, sweepVolumes } from './recovery.js';
import { executeRestore } from './restore-executor.js';
import { RESTORE_JOB } from './restores.service.js';
import { executeRun } from './run-executor.js';
import { RUN_JOB } from './runs.service.js';
import { runDueSchedules } from './schedules.js';
import { executeVerify, VERIFY_JOB } from './verify-executor.js';

/** The backups area's background work: its jobs and tickers, and what it recovers when a server starts. */

type Job = { id: string; orgId: string };

/** Job handlers (runs and restores execute once: a retry would be a second backup) and the leader's tickers. */
export function registerBackupJobs(ctx: AppContext): void {
  ctx.jobs.register<Job>(RUN_JOB, (p, _job, signal) => executeRun(ctx, p.id, p.orgId, signal), { maxAttempts: 1 });
  ctx.jobs.register<Job>(RESTORE_JOB, (p, _job, signal) => executeRestore(ctx, p.id, p.orgId, signal), { maxAttempts: 1 });
  ctx.jobs.register<Job>(VERIFY_JOB, (p, _job, signal) => executeVerify(ctx, p.id, p.orgId, signal), { maxAttempts: 1 });
  ctx.scheduler.add({ name: 'backups.cron', everyMs: 5000, run: async () => void (await runDueSchedules(ctx)) });
  // Runs whose heartbeat stopped (their instance died) become server_error.
  ctx.scheduler.add({ name: 'backups.sweep', everyMs: 10000, run: async () => void (await recoverStale(ctx, 5000, false)) });
}

/**
 * At start: what a stop interrupted becomes `server_error`. SQLite: the data-dir lock makes this the
 * only instance, so whatever is in flight is dead (and half-swapped volumes are repaired). PostgreSQL:
 * only rows whose heartbeat stopped; the sweep ticker catches the rest.
 */
export async function recoverAtStart(ctx: AppContext): Promise<void> {
  const n = await recoverStale(ctx, ctx.dialect === 'sqlite' ? null : 5000, true);
  if (n) ctx.log.warn({ recovered: n }, 'backup runs and restores interrupted by a stop were marked server_error');
  if (ctx.dialect === 'sqlite') await sweepVolumes(ctx).catch((e) => ctx.log.warn({ err: (e as Error).message }, 'volume sweep failed'));
  if (ctx.dialect === 'postgres') setTimeout(() => void recoverStale(ctx, 5000, true).catch(() => {}), 6000).unref();
}
