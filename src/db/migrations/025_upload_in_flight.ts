import type { Kysely } from 'kysely';

/**
 * Uploads in flight counted in the database (issue 23: several instances share the org's allowance of
 * disk): the bytes an upload being received holds on disk so far, the instance receiving it, and when
 * that instance last said so (a dead instance's count stops counting after a minute).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('upload_sessions').addColumn('in_flight_bytes', 'bigint').execute();
  await db.schema.alterTable('upload_sessions').addColumn('in_flight_by', 'text').execute();
  await db.schema.alterTable('upload_sessions').addColumn('in_flight_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('upload_sessions').dropColumn('in_flight_at').execute();
  await db.schema.alterTable('upload_sessions').dropColumn('in_flight_by').execute();
  await db.schema.alterTable('upload_sessions').dropColumn('in_flight_bytes').execute();
}
