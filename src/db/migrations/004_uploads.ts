import type { Kysely } from 'kysely';

/** Folder-upload sessions (portable SQLite/PostgreSQL). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('upload_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text')
    .addColumn('name', 'text')
    .addColumn('size_hint', 'bigint')
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('files', 'integer')
    .addColumn('scan', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('uploaded_at', 'text')
    .addColumn('consumed_at', 'text')
    .execute();
  await db.schema.createIndex('upload_sessions_org_idx').on('upload_sessions').columns(['org_id', 'created_at']).execute();
  await db.schema.createIndex('upload_sessions_project_idx').on('upload_sessions').columns(['project_id', 'status']).execute();
  await db.schema.createIndex('upload_sessions_expiry_idx').on('upload_sessions').columns(['status', 'expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('upload_sessions').execute();
}
