import type { Kysely } from 'kysely';
import { sql } from '../kysely.js';

/**
 * Current releases (issue 18): which ready deployment of a project environment serves it is an
 * explicit pointer, `deployments.current` (0/1), so a rollback can point at an older release. The
 * newest ready deployment of each (project, environment) (finished_at desc, id desc, as the release
 * was computed before) becomes current. A partial unique index keeps at most one current deployment
 * per environment and serves the lookup.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployments').addColumn('current', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await sql`
    UPDATE deployments SET "current" = 1 WHERE id IN (
      SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (
          PARTITION BY project_id, environment
          ORDER BY CASE WHEN finished_at IS NULL THEN 1 ELSE 0 END, finished_at DESC, id DESC
        ) AS position
        FROM deployments WHERE status = 'ready'
      ) ranked WHERE position = 1
    )`.execute(db);
  await db.schema
    .createIndex('deployments_current_idx')
    .on('deployments')
    .columns(['project_id', 'environment'])
    .unique()
    .where(sql.ref('current'), '=', 1)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deployments_current_idx').execute();
  await db.schema.alterTable('deployments').dropColumn('current').execute();
}
