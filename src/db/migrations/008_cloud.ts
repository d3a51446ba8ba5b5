import type { Kysely } from 'kysely';

/** Cloud area: the local project id ↔ cloud project id mapping of a linked self-hosted instance. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cloud_links')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('cloud_project_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cloud_links_org_idx').on('cloud_links').column('org_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('cloud_links').ifExists().execute();
}
