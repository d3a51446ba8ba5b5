import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer, type TestServerOptions } from '../support/harness.js';
import { parseSseBlock, type SseEvent } from '../support/http.js';
import { waitFor } from '../support/wait.js';

/**
 * Two servers ("instances") on one PostgreSQL database and one data dir, with one secret key, as
 * `berth serve` twice behind a load balancer (docs/scale-out.md). PostgreSQL only: on SQLite one
 * instance serves a data dir.
 */
export interface Pair {
  a: TestServer;
  b: TestServer;
  close(): Promise<void>;
}

export async function startPair(opts: { a?: TestServerOptions; b?: TestServerOptions } = {}): Promise<Pair> {
  if (!usingPostgres()) throw new Error('startPair needs DATABASE_URL');
  const pg = await freshPostgresDatabase();
  const dataDir = tempDir('berth-pair-');
  const env = { BERTH_SECRET_KEY: randomBytes(32).toString('base64') };
  // Each its own instance name, as two instances must have (docs/scale-out.md): one name is one instance.
  const a = await startTestServer({ ...opts.a, dataDir, databaseUrl: pg.url, env: { ...env, BERTH_INSTANCE_NAME: 'a', ...opts.a?.env } });
  const b = await startTestServer({ ...opts.b, dataDir, databaseUrl: pg.url, env: { ...env, BERTH_INSTANCE_NAME: 'b', ...opts.b?.env } });
  return {
    a,
    b,
    async close() {
      await b.close();
      await a.close();
      await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An SSE stream read as it arrives: the events so far, and whether it ended. */
export interface LiveSse {
  status: number;
  events: SseEvent[];
  ended: boolean;
  /** Waits (bounded) until `check(events)` holds. */
  until(check: (events: SseEvent[]) => boolean, what: string, timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
}

export async function openSse(url: string, token: string, timeoutMs = 30000): Promise<LiveSse> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  timer.unref();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  const live: LiveSse = {
    status: res.status,
    events: [],
    ended: false,
    until: (check, what, ms = 15000) => waitFor(() => (check(live.events) ? live.events : null), what, ms, 20),
    close: () => {
      clearTimeout(timer);
      abort.abort();
    },
  };
  if (!res.body) {
    live.ended = true;
    return live;
  }
  void (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const ev = parseSseBlock(block);
          if (ev) live.events.push(ev);
        }
      }
    } catch {
      /* aborted */
    } finally {
      live.ended = true;
      clearTimeout(timer);
    }
  })();
  return live;
}
