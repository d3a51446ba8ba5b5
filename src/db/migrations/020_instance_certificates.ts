import type { Kysely } from 'kysely';

/**
 * Certificates of the instance itself (issue 20, contract section 14): the free domains' wildcard
 * `*.<BERTH_APPS_DOMAIN>`, issued through DNS-01 when a DNS provider is configured. It belongs to no
 * org or project, so it has its own table rather than null org/project columns in `certificates`
 * (whose rows are an org's records, scoped by org, removed with their project and swept when no
 * project verifies their domain). Same columns otherwise; the key sealed with the secret key.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('instance_certificates')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('cert_pem', 'text')
    .addColumn('key_sealed', 'text')
    .addColumn('issuer', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('instance_certificates').execute();
}
