import type { Kysely } from 'kysely';

/** Git provider area: GitHub App installations, OAuth/CLI connections, flows, deliveries (portable SQLite/PostgreSQL). */
export async function up(db: Kysely<any>): Promise<void> {
  // A GitHub App installation. `org_id` is null until an org claims it through connect/redirect.
  await db.schema
    .createTable('gitprovider_installations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('installation_id', 'text', (c) => c.notNull().unique())
    .addColumn('org_id', 'text', (c) => c.references('orgs.id').onDelete('set null'))
    .addColumn('account_login', 'text', (c) => c.notNull())
    .addColumn('account_type', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .addColumn('claimed_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('gitprovider_installations_org_idx').on('gitprovider_installations').column('org_id').execute();

  // An OAuth account or the host's gh CLI, per org and source. The OAuth token is sealed; the CLI token is never stored.
  await db.schema
    .createTable('gitprovider_connections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('login', 'text', (c) => c.notNull())
    .addColumn('account_type', 'text', (c) => c.notNull())
    .addColumn('token', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('gitprovider_connections_uq', ['org_id', 'source'])
    .execute();

  // Used `state` nonces of the redirect flows (single use).
  await db.schema
    .createTable('gitprovider_used_states')
    .addColumn('nonce', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text', (c) => c.notNull())
    .execute();

  // Device-flow logins in progress (the device code is sealed).
  await db.schema
    .createTable('gitprovider_device_flows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('device_code', 'text', (c) => c.notNull())
    .addColumn('interval_seconds', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('last_polled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('gitprovider_device_flows_org_idx').on('gitprovider_device_flows').columns(['org_id', 'created_at']).execute();

  // Incoming webhook deliveries, keyed by X-GitHub-Delivery (dedupe).
  await db.schema
    .createTable('gitprovider_deliveries')
    .addColumn('delivery_id', 'text', (c) => c.primaryKey())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('hook_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('received_at', 'text', (c) => c.notNull())
    .execute();

  // Why a project's auto-deploy was paused or its repository unlinked by the provider (shown by GET /projects/:id/git).
  await db.schema
    .createTable('gitprovider_project_notices')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['gitprovider_project_notices', 'gitprovider_deliveries', 'gitprovider_device_flows', 'gitprovider_used_states', 'gitprovider_connections', 'gitprovider_installations']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
