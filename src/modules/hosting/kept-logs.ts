import type { RequestEntry } from '../../edge/requests.js';
import { sweepLogs } from '../../runtime/log-retention.js';
import type { BerthRuntime } from './host.js';

/** How often retention looks at the kept logs (and once at start). */
const SWEEP_EVERY_MS = 10 * 60_000;

/**
 * Logs kept on disk (docs/logs.md): the edge's requests of each app written beside its runtime log
 * (`requests.log`), and retention (BERTH_LOG_RETENTION_DAYS, BERTH_LOG_MAX_MB) applied at start and
 * every SWEEP_EVERY_MS. Every instance sharing a data dir sweeps it; removing a file twice is harmless.
 */
export class KeptLogs {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly rt: BerthRuntime) {}

  start(): void {
    const { logs, requests, ctx } = this.rt;
    requests.onRecord = (app, e) => logs.requests<RequestEntry>(app).append(e);
    const sweep = () => {
      try {
        sweepLogs(logs, { maxAgeMs: ctx.config.logs.retentionDays * 86_400_000, maxBytes: ctx.config.logs.maxMb * 1024 * 1024 });
      } catch (err) {
        ctx.log.warn({ err: (err as Error).message }, 'log retention failed');
      }
    };
    sweep();
    this.timer = setInterval(sweep, SWEEP_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.rt.requests.onRecord = null;
  }
}
