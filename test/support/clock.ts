import type { Clock } from '../../src/lib/clock.js';

export interface TestClock extends Clock {
  /** Moves this clock (and the server reading it) `ms` forward. */
  advance(ms: number): void;
}

/**
 * A clock for `startTestServer({ clock })`: the machine's time plus an offset that `advance` grows,
 * so time keeps running (timestamps stay ordered) and a test moves it forward instead of rewriting
 * `expiresAt`/`createdAt` in the database.
 */
export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      if (!(ms >= 0)) throw new Error('a test clock moves forward only');
      offset += ms;
    },
  };
}
