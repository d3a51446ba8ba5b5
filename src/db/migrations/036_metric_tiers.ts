import type { Kysely } from 'kysely';
import { sql } from '../kysely.js';
import { isPostgres } from './dialect.js';

/**
 * Metrics take less room (issue 38 point 1: under 50 MB for 50 apps over 7 days on SQLite): each step
 * gets its own table (`metric_points_raw` 10 s, `metric_points_minute` 60 s, `metric_points_hour`
 * 3600 s), so no row carries its step, and memory is kept in KiB (`mem_kib`; the store answers bytes).
 * About 3 bytes less a point on SQLite (docs/benchmarks.md). The points of 032's `metric_points` move
 * over, memory rounded to the KiB.
 */
const TIERS = [
  { table: 'metric_points_raw', step: 10 },
  { table: 'metric_points_minute', step: 60 },
  { table: 'metric_points_hour', step: 3600 },
] as const;

const VALUES = ['cpu_milli', 'net_rx', 'net_tx', 'disk_read', 'disk_write', 'req1xx', 'req2xx', 'req3xx', 'req4xx', 'req5xx', 'p50_us', 'p95_us', 'p99_us', 'resp_bytes'] as const;

async function createTier(db: Kysely<any>, table: string): Promise<void> {
  let t = db.schema
    .createTable(table)
    .addColumn('target_id', 'integer', (c) => c.notNull().references('metric_targets.id').onDelete('cascade'))
    .addColumn('ts', 'bigint', (c) => c.notNull())
    .addColumn('cpu_milli', 'integer')
    .addColumn('mem_kib', 'bigint')
    .addColumn('net_rx', 'bigint')
    .addColumn('net_tx', 'bigint')
    .addColumn('disk_read', 'bigint')
    .addColumn('disk_write', 'bigint')
    .addColumn('req1xx', 'integer')
    .addColumn('req2xx', 'integer')
    .addColumn('req3xx', 'integer')
    .addColumn('req4xx', 'integer')
    .addColumn('req5xx', 'integer')
    .addColumn('p50_us', 'bigint')
    .addColumn('p95_us', 'bigint')
    .addColumn('p99_us', 'bigint')
    .addColumn('resp_bytes', 'bigint')
    .addPrimaryKeyConstraint(`${table}_pk`, ['target_id', 'ts']);
  if (!isPostgres(db)) t = t.modifyEnd(sql`without rowid`);
  await t.execute();
}

export async function up(db: Kysely<any>): Promise<void> {
  const values = sql.join(VALUES.map((c) => sql.ref(c)));
  for (const { table, step } of TIERS) {
    await createTier(db, table);
    await sql`insert into ${sql.table(table)} (target_id, ts, mem_kib, ${values})
      select target_id, ts, (mem_bytes + 512) / 1024, ${values} from metric_points where step = ${sql.lit(step)}`.execute(db);
  }
  await db.schema.dropTable('metric_points').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  let points = db.schema
    .createTable('metric_points')
    .addColumn('target_id', 'integer', (c) => c.notNull().references('metric_targets.id').onDelete('cascade'))
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('ts', 'bigint', (c) => c.notNull())
    .addColumn('cpu_milli', 'integer')
    .addColumn('mem_bytes', 'bigint');
  for (const c of VALUES.slice(1)) points = points.addColumn(c, c.startsWith('req') ? 'integer' : 'bigint');
  points = points.addPrimaryKeyConstraint('metric_points_pk', ['target_id', 'step', 'ts']);
  if (!isPostgres(db)) points = points.modifyEnd(sql`without rowid`);
  await points.execute();
  const values = sql.join(VALUES.map((c) => sql.ref(c)));
  for (const { table, step } of TIERS) {
    await sql`insert into metric_points (target_id, step, ts, mem_bytes, ${values})
      select target_id, ${sql.lit(step)}, ts, mem_kib * 1024, ${values} from ${sql.table(table)}`.execute(db);
    await db.schema.dropTable(table).execute();
  }
}
