import type { Kysely } from 'kysely';

/**
 * Uploads: the bytes an upload holds on disk while it waits to become a project's source (the
 * archive plus the extracted files), for the per-org cap on stored, unconsumed uploads (issue 15).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('upload_sessions').addColumn('stored_bytes', 'bigint').execute();
  await db.schema.createIndex('upload_sessions_creator_idx').on('upload_sessions').columns(['created_by', 'status']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('upload_sessions_creator_idx').execute();
  await db.schema.alterTable('upload_sessions').dropColumn('stored_bytes').execute();
}
