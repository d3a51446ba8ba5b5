import type { AppContext } from '../../context.js';
import { BackupEvents } from './events.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * The backups area's state that lives as long as one running server: its event bus, the abort
 * handles of the runs and restores executing in this process, and the webhook's rate limiter. The
 * module makes one per server (`ctx.state.backups`); no other area uses it.
 */
export interface BackupsRuntime {
  events: BackupEvents;
  /** Abort handles of the runs and restores executing in this process, by record id. */
  aborts: Map<string, AbortController>;
  webhookLimiter: RateLimiter;
}

export function createBackupsRuntime(ctx: Pick<AppContext, 'config' | 'bus'>): BackupsRuntime {
  return { events: new BackupEvents(ctx.bus), aborts: new Map(), webhookLimiter: new RateLimiter(ctx.config.webhookRateLimit) };
}

declare module '../../state.js' {
  interface AreaState {
    backups: BackupsRuntime;
  }
}

/** This server's backups state (made by the module). */
export function backupsRuntime(ctx: Pick<AppContext, 'state'>): BackupsRuntime {
  return ctx.state.backups;
}
