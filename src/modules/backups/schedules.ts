import { nextCronRun } from '../../lib/cron.js';
import type { BackupsCtx } from './backups.audit.js';
import * as store from './backups.store.js';
import { triggerRun } from './runs.service.js';

/** Cron schedules of backup policies (the leader's `backups.cron` ticker). */

type Ctx = BackupsCtx;

/** Starts every due cron run once (a schedule missed while down runs once) and moves nextRunAt on. */
export async function runDueSchedules(ctx: Ctx): Promise<number> {
  const now = new Date(ctx.clock.now());
  const due = await store.duePolicies(ctx.db, now.toISOString());
  let started = 0;
  for (const p of due) {
    let next: string | null = null;
    try {
      next = nextCronRun(p.cronExpression!, now, p.timezone)?.toISOString() ?? null;
    } catch {
      next = null;
    }
    if (!(await store.claimNextRun(ctx.db, p.id, p.nextRunAt!, next))) continue;
    try {
      const r = await triggerRun(ctx, p, 'cron');
      if (r.created) started++;
    } catch (e) {
      ctx.log.error({ policyId: p.id, err: (e as Error).message }, 'scheduled backup could not start');
    }
  }
  return started;
}
