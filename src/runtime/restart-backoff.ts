/** How the supervisor paces restarts of an app that keeps crashing. */

const MAX_BACKOFF_MS = 30000;

/** After this many failures in a row the app is left `failed` until the next deploy or enable. */
export const MAX_CONSECUTIVE_FAILURES = 8;

/** Wait before the next restart: 250 ms doubling per failure in a row, at most 30 s. */
export function restartDelayMs(consecutiveFailures: number): number {
  return Math.min(MAX_BACKOFF_MS, 250 * 2 ** (consecutiveFailures - 1));
}
