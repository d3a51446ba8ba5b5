/**
 * The time as Berth's services read it: `ctx.clock.now()` is milliseconds since the epoch, like
 * `Date.now()`. Services that decide by age or expiry (invitations, upload sessions, API tokens, jobs, backups, certificates) read
 * it instead of `Date.now()`, so a test can move the server's time with a test clock
 * (`test/support/clock.ts`) instead of rewriting timestamps in the database.
 */
export interface Clock {
  now(): number;
}

/** The machine's clock (what every running server uses). */
export const systemClock: Clock = { now: () => Date.now() };

/** ISO 8601 text of a clock's current time plus `ms`. */
export function clockIso(clock: Clock, ms = 0): string {
  return new Date(clock.now() + ms).toISOString();
}
