import type { Kysely } from 'kysely';

/**
 * Backups: the identity of the artifact a restore's prepare step verified (a local file's device,
 * inode, size and change times). Apply reads exactly that file and skips a second sha256 pass.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('backup_restores').addColumn('artifact_identity', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('backup_restores').dropColumn('artifact_identity').execute();
}
