import type { Kysely } from 'kysely';

/**
 * When a certificate is renewed (issue 32 point 8, contract section 14 as amended): `renew_at`, the
 * time the scheduler renews an issued certificate (a random time inside the window the CA's ACME
 * Renewal Information suggests, RFC 9773, else two thirds of its lifetime), and `renewal_info_at`,
 * when the CA's renewal information is asked again (its Retry-After; null when the CA offers none).
 * On a project's certificates and on the instance's own. Rows issued before stay null: the
 * scheduler's next pass fills them in from the stored certificate.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['certificates', 'instance_certificates']) {
    await db.schema.alterTable(table).addColumn('renew_at', 'text').execute();
    await db.schema.alterTable(table).addColumn('renewal_info_at', 'text').execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['instance_certificates', 'certificates']) {
    await db.schema.alterTable(table).dropColumn('renewal_info_at').execute();
    await db.schema.alterTable(table).dropColumn('renew_at').execute();
  }
}
