import type { Kysely } from 'kysely';

/**
 * A domain's `tls` is the certificates area's (its `certificates` rows, migration 017): the column
 * 015 added for it was never written with anything but 'none'.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').dropColumn('tls').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').addColumn('tls', 'text', (c) => c.notNull().defaultTo('none')).execute();
}
