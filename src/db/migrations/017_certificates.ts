import type { Kysely } from 'kysely';

/**
 * HTTPS (issue 20, contract section 14): certificates of verified domains (one per domain, the key
 * sealed with the secret key, so every instance serves them), the ACME account per directory, and the
 * pending HTTP-01 challenges any instance's edge answers. A project's certificates go with it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('certificates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('domain', 'text', (c) => c.notNull().unique())
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
  await db.schema.createIndex('certificates_org_project_idx').on('certificates').columns(['org_id', 'project_id']).execute();
  await db.schema
    .createTable('acme_accounts')
    .addColumn('directory_url', 'text', (c) => c.primaryKey())
    .addColumn('account_url', 'text', (c) => c.notNull())
    .addColumn('key_sealed', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acme_challenges')
    .addColumn('token', 'text', (c) => c.primaryKey())
    .addColumn('key_authorization', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('acme_challenges').execute();
  await db.schema.dropTable('acme_accounts').execute();
  await db.schema.dropTable('certificates').execute();
}
