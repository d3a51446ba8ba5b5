import type { Kysely } from 'kysely';

/**
 * Managed services (issue 37, contract section 19): a database Berth runs for a project. Names are
 * unique per project here; the service checks them against the attached services too.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('managed_services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('runtime', 'text', (c) => c.notNull())
    .addColumn('desired', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('cpu_cores', 'double precision', (c) => c.notNull())
    .addColumn('memory_mb', 'integer', (c) => c.notNull())
    .addColumn('disk_mb', 'integer', (c) => c.notNull())
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('credentials', 'text', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('managed_services_name_uq').on('managed_services').columns(['project_id', 'name']).unique().execute();
  await db.schema.createIndex('managed_services_org').on('managed_services').columns(['org_id', 'project_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('managed_services').execute();
}
