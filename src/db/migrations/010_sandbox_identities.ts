import type { Kysely } from 'kysely';

/**
 * Isolation: the uid/gid each project's builds and apps run as under the sandbox driver. A uid is
 * never handed out twice: the row stays when its project is deleted (files the project's user left,
 * in a backup say, never become another project's).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sandbox_identities')
    .addColumn('project_id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('uid', 'integer', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sandbox_identities').ifExists().execute();
}
