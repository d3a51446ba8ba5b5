import type { Kysely } from 'kysely';

/**
 * Runtime owners (issue 23, docs/scale-out.md): with several instances on one PostgreSQL, exactly one
 * runs each app. `app_owners` holds a lease per app key (a project's production app, a preview
 * environment's app): the instance that runs it, the address the other instances' edges forward its
 * requests to, and when the lease runs out unless renewed. An expired lease is taken over by another
 * instance. `berth_instances` lists the live instances (renewed with their leases): a starting instance
 * leaves the builds in flight alone while another one runs (they may be its). SQLite has one instance
 * per data dir and writes neither.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('app_owners')
    .addColumn('app_key', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('instance_name', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('app_owners_instance_idx').on('app_owners').columns(['instance_id']).execute();
  await db.schema
    .createTable('berth_instances')
    .addColumn('instance_id', 'text', (c) => c.primaryKey())
    .addColumn('instance_name', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('berth_instances').ifExists().execute();
  await db.schema.dropTable('app_owners').ifExists().execute();
}
