import type { Kysely } from 'kysely';
import { sql } from '../kysely.js';
import { isPostgres } from './dialect.js';

/**
 * The bus trigger on `environments` (024) announces every statement that writes the table, and every
 * env PATCH bumps its environment's `env_revision` (the ETag): each PATCH dropped the project-read
 * and edge-route caches of every instance, though neither holds the revision. The trigger now fires
 * on inserts, deletes and updates of the other columns only (`UPDATE OF` lists what a statement sets;
 * the revision bump sets nothing else). A column added to `environments` later that a cache reads
 * must be added to this list. PostgreSQL only, as 024.
 */
const ANNOUNCED_COLUMNS = ['id', 'org_id', 'project_id', 'name', 'type', 'branch', 'slug', 'created_at'];

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`DROP TRIGGER IF EXISTS berth_notify_environments ON environments`.execute(db);
  await sql`CREATE TRIGGER berth_notify_environments
    AFTER INSERT OR DELETE OR UPDATE OF ${sql.join(ANNOUNCED_COLUMNS.map((c) => sql.id(c)))} ON environments
    FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_table()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`DROP TRIGGER IF EXISTS berth_notify_environments ON environments`.execute(db);
  await sql`CREATE TRIGGER berth_notify_environments AFTER INSERT OR UPDATE OR DELETE ON environments
    FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_table()`.execute(db);
}
