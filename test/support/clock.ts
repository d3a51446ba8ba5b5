import type { Clock } from '../../src/lib/clock.js';

export interface TestClock extends Clock {
  /** Moves this clock (and the server reading it) `ms` forward. */
  advance(ms: number): void;
  /** Moves this clock to a second past `at` (an ISO time or epoch ms); no move when it is already past. */
  advancePast(at: string | number): void;
}

/**
 * A clock for `startTestServer({ clock })`: the machine's time plus an offset that `advance` grows,
 * so time keeps running (timestamps stay ordered) and a test moves it forward instead of rewriting
 * `expiresAt`/`createdAt` in the database.
 */
export function testClock(): TestClock {
  let offset = 0;
  const now = () => Date.now() + offset;
  const advance = (ms: number) => {
    if (!(ms >= 0)) throw new Error('a test clock moves forward only');
    offset += ms;
  };
  return {
    now,
    advance,
    advancePast(at: string | number) {
      const target = typeof at === 'number' ? at : Date.parse(at);
      if (Number.isNaN(target)) throw new Error(`not a time: ${at}`);
      advance(Math.max(0, target + 1000 - now()));
    },
  };
}
