import type { Kysely } from 'kysely';

/**
 * TLS-ALPN-01 and DNS-01 (issue 20, contract section 14): a pending challenge row says its kind
 * (`http-01`, the default of the rows before; `tls-alpn-01`; `dns-01`). A TLS-ALPN-01 row keeps the
 * challenge certificate (public) and its key sealed with the secret key, so any instance's TLS
 * listener can answer it; a DNS-01 row keeps the TXT record's name and the provider's record id, so
 * a crashed order's record is removed by the next pass.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('acme_challenges').addColumn('kind', 'text', (c) => c.notNull().defaultTo('http-01')).execute();
  await db.schema.alterTable('acme_challenges').addColumn('cert_pem', 'text').execute();
  await db.schema.alterTable('acme_challenges').addColumn('key_sealed', 'text').execute();
  await db.schema.alterTable('acme_challenges').addColumn('record_name', 'text').execute();
  await db.schema.alterTable('acme_challenges').addColumn('record_id', 'text').execute();
  await db.schema.createIndex('acme_challenges_kind_domain_idx').on('acme_challenges').columns(['kind', 'domain']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('acme_challenges_kind_domain_idx').execute();
  for (const column of ['record_id', 'record_name', 'key_sealed', 'cert_pem', 'kind']) await db.schema.alterTable('acme_challenges').dropColumn(column).execute();
}
