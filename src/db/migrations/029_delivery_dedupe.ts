import type { Kysely } from 'kysely';

/**
 * What a GitHub delivery is about (issue 33 point 6): `dedupe_key` names its event and content (a
 * push's repository, ref and commit; a pull request's number, action and head commit; else a hash of
 * the body), so the same signed body sent again under a new delivery id within the hour is
 * acknowledged and not queued again. Rows stored before have none (they are older than the hour).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('gitprovider_deliveries').addColumn('dedupe_key', 'text').execute();
  await db.schema.createIndex('gitprovider_deliveries_dedupe').on('gitprovider_deliveries').columns(['dedupe_key', 'received_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('gitprovider_deliveries_dedupe').execute();
  await db.schema.alterTable('gitprovider_deliveries').dropColumn('dedupe_key').execute();
}
