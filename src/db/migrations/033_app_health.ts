import type { Kysely } from 'kysely';

/**
 * Health after go-live (issue 38, contract section 20): per project `config.healthPath` (the path a
 * running app is checked at; null: a TCP connect) and `config.autoRollback` (1/0; null: off).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('health_path', 'text').execute();
  await db.schema.alterTable('projects').addColumn('auto_rollback', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('auto_rollback').execute();
  await db.schema.alterTable('projects').dropColumn('health_path').execute();
}
