/** Fixed-window counter per client address (the backup webhook's limit). */
export class RateLimiter {
  private readonly hits = new Map<string, { start: number; n: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs = 60000,
  ) {}

  /** Seconds to wait, or 0 when the hit is allowed. */
  hit(key: string, now = Date.now()): number {
    if (this.hits.size > 10000) {
      for (const [k, v] of this.hits) if (now - v.start >= this.windowMs) this.hits.delete(k);
    }
    const cur = this.hits.get(key);
    if (!cur || now - cur.start >= this.windowMs) {
      this.hits.set(key, { start: now, n: 1 });
      return 0;
    }
    cur.n++;
    if (cur.n > this.limit) return Math.max(1, Math.ceil((cur.start + this.windowMs - now) / 1000));
    return 0;
  }
}
