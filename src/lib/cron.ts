import { Cron } from 'croner';

/** Is `expr` a cron expression that fires at least once in the next ~5 years (in `timezone`)? */
/** Whether `expr` is a valid schedule, and its next time after `after` (default now). */
export function validateCron(expr: string, timezone?: string, after?: Date): { ok: true; next: Date } | { ok: false; reason: string } {
  let job: Cron;
  try {
    job = new Cron(expr, { paused: true, timezone });
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  const next = job.nextRun(after);
  job.stop();
  if (!next) return { ok: false, reason: 'the expression never fires' };
  return { ok: true, next };
}

/** The next time `expr` fires strictly after `after`, or null. */
export function nextCronRun(expr: string, after: Date, timezone?: string): Date | null {
  const job = new Cron(expr, { paused: true, timezone });
  const next = job.nextRun(after);
  job.stop();
  return next;
}
