import type { Kysely } from 'kysely';
import { sql } from '../kysely.js';
import { isPostgres } from './dialect.js';

/**
 * The notification bus's messages sent by the database itself (`src/db/notify.ts`), PostgreSQL only
 * (on SQLite one instance serves a data dir and its in-process events suffice):
 * - `tables` `{ t }` after a statement writes one of the tables that read caches of every instance
 *   keep (projects, domains, environments: the project reads; those and route rules and deployments:
 *   the edge's routes);
 * - `jobs` after a statement inserts jobs, so that every instance's worker looks for work at once.
 * NOTIFY inside a trigger is transactional: it is sent when the write commits, never when it rolls
 * back, and identical messages of one transaction are sent once.
 */
const CACHED_TABLES = ['projects', 'domains', 'environments', 'route_rules', 'deployments'];

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    CREATE OR REPLACE FUNCTION berth_notify_table() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('berth', json_build_object('c', 'tables', 'p', json_build_object('t', TG_TABLE_NAME))::text);
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION berth_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('berth', '{"c":"jobs"}');
      RETURN NULL;
    END $$`.execute(db);
  for (const t of CACHED_TABLES) {
    await sql`CREATE TRIGGER ${sql.id(`berth_notify_${t}`)} AFTER INSERT OR UPDATE OR DELETE ON ${sql.table(t)}
      FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_table()`.execute(db);
  }
  await sql`CREATE TRIGGER berth_notify_jobs AFTER INSERT ON jobs FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_jobs()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const t of CACHED_TABLES) await sql`DROP TRIGGER IF EXISTS ${sql.id(`berth_notify_${t}`)} ON ${sql.table(t)}`.execute(db);
  await sql`DROP TRIGGER IF EXISTS berth_notify_jobs ON jobs`.execute(db);
  await sql`DROP FUNCTION IF EXISTS berth_notify_table()`.execute(db);
  await sql`DROP FUNCTION IF EXISTS berth_notify_jobs()`.execute(db);
}
