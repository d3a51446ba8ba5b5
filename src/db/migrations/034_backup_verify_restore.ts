import type { Kysely } from 'kysely';

/**
 * Backups of managed services (issue 37 point 4): a policy's `verifyRestore` (each new run is restored
 * into a throwaway instance), and on a run when that restore answered (`verified_at`) or why it did
 * not (`verify_error`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('backup_policies').addColumn('verify_restore', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('backup_runs').addColumn('verified_at', 'text').execute();
  await db.schema.alterTable('backup_runs').addColumn('verify_error', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('backup_runs').dropColumn('verify_error').execute();
  await db.schema.alterTable('backup_runs').dropColumn('verified_at').execute();
  await db.schema.alterTable('backup_policies').dropColumn('verify_restore').execute();
}
