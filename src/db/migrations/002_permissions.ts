import type { Kysely } from 'kysely';

/**
 * Invitations and the grants they carry until they are materialized (seed: Grant and invitation).
 * The grants table itself is in 001_foundation.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('invited_by', 'text')
    .addColumn('accepted_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('responded_at', 'text')
    .addColumn('materialized_at', 'text')
    .execute();
  await db.schema.createIndex('invitations_org_idx').on('invitations').columns(['org_id', 'status']).execute();
  await db.schema.createIndex('invitations_email_idx').on('invitations').column('email').execute();

  await db.schema
    .createTable('invitation_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('invitation_id', 'text', (c) => c.notNull().references('invitations.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('invitation_grants_tuple_uq', ['invitation_id', 'resource_type', 'resource_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('invitation_grants').ifExists().execute();
  await db.schema.dropTable('invitations').ifExists().execute();
}
