import type { Kysely } from 'kysely';

/**
 * HTTPS per project (issue 20, contract section 14): `config.httpsRedirect` (1/0; null: redirect once the
 * project's host has a certificate) and `config.hsts` (1/0; null: off).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('https_redirect', 'integer').execute();
  await db.schema.alterTable('projects').addColumn('hsts', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('hsts').execute();
  await db.schema.alterTable('projects').dropColumn('https_redirect').execute();
}
