import type { Kysely } from 'kysely';

/** Does this migration run on PostgreSQL (the migrations that only PostgreSQL needs: triggers, NOTIFY)? */
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter.constructor.name === 'PostgresAdapter';
}
