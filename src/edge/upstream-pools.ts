import type { Pool } from 'undici';
import type { EdgeUpstream } from './backend.js';

/** One keep-alive connection pool per app address; pools unused for a minute are closed. */
export class UpstreamPools {
  private readonly pools = new Map<string, { pool: Pool; used: number }>();
  private readonly sweep: NodeJS.Timeout;

  constructor() {
    this.sweep = setInterval(() => {
      const now = Date.now();
      for (const [key, p] of this.pools) {
        if (now - p.used > 60000) {
          this.pools.delete(key);
          void p.pool.close().catch(() => {});
        }
      }
    }, 30000);
    this.sweep.unref();
  }

  /**
   * The pool for one request to the app (made on first use; undici is passed in, loaded by the caller):
   * the address `app.pick()` answers when the app has several (balanced per request), else its own.
   */
  get(app: EdgeUpstream, undici: typeof import('undici')): Pool {
    const up = app.pick?.() ?? app;
    let p = this.pools.get(up.key);
    if (!p) {
      p = { pool: new undici.Pool(`http://${up.key}`, { connections: 256, pipelining: 1, keepAliveTimeout: 4000, headersTimeout: 0, bodyTimeout: 0 }), used: Date.now() };
      this.pools.set(up.key, p);
    } else p.used = Date.now();
    return p.pool;
  }

  /** Stops the sweep and destroys every pool. */
  async close(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all([...this.pools.values()].map((p) => p.pool.destroy().catch(() => {})));
    this.pools.clear();
  }
}
