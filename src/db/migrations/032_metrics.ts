import type { Kysely } from 'kysely';
import { sql } from '../kysely.js';
import { isPostgres } from './dialect.js';

/**
 * Metrics (issue 38 point 1, contract section 20): what each app and managed service used and what the
 * edge served, one row per target per step. Points name their target by a small integer and hold
 * numbers only (a point is ~40 bytes on SQLite), keyed by (target, step, ts) without a rowid.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await db.schema
    .createTable('metric_targets')
    .addColumn('id', pg ? 'serial' : 'integer', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('metric_targets_name_uq').on('metric_targets').columns(['kind', 'name']).unique().execute();
  await db.schema.createIndex('metric_targets_org').on('metric_targets').columns(['org_id', 'project_id']).execute();
  let points = db.schema
    .createTable('metric_points')
    .addColumn('target_id', 'integer', (c) => c.notNull().references('metric_targets.id').onDelete('cascade'))
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('ts', 'bigint', (c) => c.notNull())
    .addColumn('cpu_milli', 'integer')
    .addColumn('mem_bytes', 'bigint')
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
    .addPrimaryKeyConstraint('metric_points_pk', ['target_id', 'step', 'ts']);
  if (!pg) points = points.modifyEnd(sql`without rowid`);
  await points.execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('metric_points').execute();
  await db.schema.dropTable('metric_targets').execute();
}
