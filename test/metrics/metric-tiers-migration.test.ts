/**
 * Migration 036 (issue 38 point 1, docs/observability.md "Kept and pruned"): the points 032 kept in one
 * table move to one table per step with memory in KiB, and read back through the store as before
 * (memory in bytes, to the KiB).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrateToLatest, openDatabase, type Database } from '../../src/db/client.js';
import { Migrator, sql } from '../../src/db/kysely.js';
import { migrations } from '../../src/db/migrations/index.js';
import { pointsAnyOrg } from '../../src/modules/metrics/metrics.store.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';

describe('migration 036: metric points by step, memory in KiB', () => {
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let database: Database;

  before(async () => {
    if (usingPostgres()) pg = await freshPostgresDatabase();
    database = openDatabase({ dataDir: tempDir(), databaseUrl: pg?.url });
  });
  after(async () => {
    await database.close();
    await pg?.drop();
  });

  it("keeps a database's points readable: each step's points, memory rounded to the KiB, the rest unchanged", async () => {
    const db = database.db;
    const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true }).migrateTo('035_service_environments');
    assert.equal(error, undefined);
    const now = new Date().toISOString();
    await sql`insert into orgs (id, name, is_team, created_at) values ('org_m', 'm', 0, ${now})`.execute(db);
    await sql`insert into projects (id, org_id, name, slug, status, location, port, source_type, sleep_mode, resources, created_at, updated_at)
      values ('prj_m', 'org_m', 'm', 'm', 'ready', 'local', 3000, 'local', 'always_on', '{}', ${now}, ${now})`.execute(db);
    await sql`insert into metric_targets (org_id, project_id, kind, name, label) values ('org_m', 'prj_m', 'app', 'prj_m', 'production')`.execute(db);
    const { id } = (await sql<{ id: number }>`select id from metric_targets`.execute(db)).rows[0]!;
    for (const [step, ts, mem] of [[10, 1_800_000_000, 50_000_000], [10, 1_800_000_010, null], [60, 1_800_000_000, 1023], [3600, 1_799_996_400, 5_000_000_000]] as const) {
      await sql`insert into metric_points (target_id, step, ts, cpu_milli, mem_bytes, net_rx, req2xx, p99_us, resp_bytes)
        values (${id}, ${step}, ${ts}, 250, ${mem}, 1200, 7, 9000, 31000)`.execute(db);
    }

    await migrateToLatest(db);

    const raw = await pointsAnyOrg(db, 10, 0, 2_000_000_000);
    assert.deepEqual(
      raw.map((p) => [p.step, p.ts, p.memBytes]),
      [
        [10, 1_800_000_000, 48_828 * 1024],
        [10, 1_800_000_010, null],
      ],
    );
    assert.deepEqual([raw[0]!.cpuMilli, Number(raw[0]!.netRx), raw[0]!.req2xx, Number(raw[0]!.p99Us), Number(raw[0]!.respBytes), raw[0]!.netTx], [250, 1200, 7, 9000, 31000, null]);
    assert.deepEqual((await pointsAnyOrg(db, 60, 0, 2_000_000_000)).map((p) => [p.ts, p.memBytes]), [[1_800_000_000, 1024]]);
    assert.deepEqual((await pointsAnyOrg(db, 3600, 0, 2_000_000_000)).map((p) => [p.ts, p.memBytes]), [[1_799_996_400, 4_882_813 * 1024]]);
  });
});
