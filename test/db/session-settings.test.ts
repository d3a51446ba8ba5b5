import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Db } from '../../src/db/client.js';
import { startTestServer, usingPostgres } from '../support/harness.js';

/**
 * Issue 32 point 6: Berth's PostgreSQL sessions commit with the configured `synchronous_commit`
 * (BERTH_PG_SYNCHRONOUS_COMMIT, default off: docs/decisions.md, "PostgreSQL durability"), set by the
 * app's own pool on every connection it opens, whatever the server's setting.
 */

const skip = usingPostgres() ? false : 'session settings exist on PostgreSQL only (set DATABASE_URL)';

interface Setting {
  setting: string;
  source: string;
}

/**
 * The setting as `count` connections of the pool see it at once: each holds a transaction open
 * until all have read it, so the pool must open (or reuse) that many distinct connections.
 */
async function onConnections(db: Db, count: number): Promise<Array<Setting & { pid: number }>> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return Promise.all(
    Array.from({ length: count }, () =>
      db.transaction().execute(async (tx) => {
        const shown = (await sql<{ synchronousCommit: string }>`show synchronous_commit`.execute(tx)).rows[0]!;
        const row = (await sql<{ source: string; pid: number }>`select source, pg_backend_pid() as pid from pg_settings where name = 'synchronous_commit'`.execute(tx)).rows[0]!;
        if (++arrived === count) release();
        await all;
        return { setting: shown.synchronousCommit, source: row.source, pid: row.pid };
      }),
    ),
  );
}

describe('PostgreSQL sessions of Berth', { skip }, () => {
  for (const [label, env, expected] of [
    ['commit without waiting for the disk by default (synchronous_commit off)', {}, 'off'],
    ['commit as BERTH_PG_SYNCHRONOUS_COMMIT=on says, whatever the server is set to', { BERTH_PG_SYNCHRONOUS_COMMIT: 'on' }, 'on'],
    ['commit as BERTH_PG_SYNCHRONOUS_COMMIT=local says', { BERTH_PG_SYNCHRONOUS_COMMIT: 'local' }, 'local'],
  ] as const) {
    it(`${label}, on every connection of the app's pool`, async () => {
      const server = await startTestServer({ env: { ...env } });
      try {
        const db = server.ctx.db as Db;
        const seen = await onConnections(db, 3);
        assert.equal(new Set(seen.map((s) => s.pid)).size, 3, 'three connections at once');
        for (const s of seen) assert.deepEqual({ setting: s.setting, source: s.source }, { setting: expected, source: 'session' });
      } finally {
        await server.close();
      }
    });
  }
});
