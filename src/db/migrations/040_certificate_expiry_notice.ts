import type { Kysely } from 'kysely';

/**
 * certificate.expiring (contract section 20): the `expiresAt` of the certificate a notice was last sent
 * for, so each certificate is told once (a renewed one, with a new expiry, may be told again).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('certificates').addColumn('expiry_noticed_for', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('certificates').dropColumn('expiry_noticed_for').execute();
}
