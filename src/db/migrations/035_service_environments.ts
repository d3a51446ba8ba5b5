import type { Kysely } from 'kysely';

/**
 * Managed services per environment and with a stable address (issue 37 points 3 and 6): a preview
 * environment's own instance of a production service (`environment`, `source_id` naming the
 * production service), whether previews start seeded from production's last backup (`seed_from`),
 * and the address the service had (`address`), asked for again at its next start. Names are unique
 * per project and environment.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('managed_services').addColumn('environment', 'text', (c) => c.notNull().defaultTo('production')).execute();
  await db.schema.alterTable('managed_services').addColumn('source_id', 'text').execute();
  await db.schema.alterTable('managed_services').addColumn('seed_from', 'text').execute();
  await db.schema.alterTable('managed_services').addColumn('address', 'text').execute();
  await db.schema.dropIndex('managed_services_name_uq').execute();
  await db.schema.createIndex('managed_services_name_uq').on('managed_services').columns(['project_id', 'environment', 'name']).unique().execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('managed_services_name_uq').execute();
  await db.deleteFrom('managed_services').where('environment', '<>', 'production').execute();
  await db.schema.createIndex('managed_services_name_uq').on('managed_services').columns(['project_id', 'name']).unique().execute();
  for (const c of ['address', 'seed_from', 'source_id', 'environment']) await db.schema.alterTable('managed_services').dropColumn(c).execute();
}
