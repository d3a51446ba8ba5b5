import type { Kysely } from 'kysely';

/**
 * Build and run: beside the `deployments` table of 003_projects, what the build pipeline records per
 * deployment (`deployment_builds`), and adds short-lived read-only stream tokens and the persisted runtime state (so running
 * apps come back after a server restart).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('deployment_builds')
    .addColumn('deployment_id', 'text', (c) => c.primaryKey().references('deployments.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('source_type', 'text')
    .addColumn('upload_dir', 'text')
    .addColumn('release_dir', 'text')
    .addColumn('start_command', 'text')
    .addColumn('created_by', 'text')
    .execute();

  await db.schema
    .createTable('deployment_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('deployment_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('deployment_tokens_expiry_idx').on('deployment_tokens').column('expires_at').execute();

  await db.schema
    .createTable('runtime_states')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('deployment_id', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('port', 'integer')
    .addColumn('pid', 'integer')
    .addColumn('started_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('runtime_states').ifExists().execute();
  await db.schema.dropTable('deployment_tokens').ifExists().execute();
  await db.schema.dropTable('deployment_builds').ifExists().execute();
}
