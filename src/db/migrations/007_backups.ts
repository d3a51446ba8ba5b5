import type { Kysely } from 'kysely';

/** Backups area: destinations, policies, runs, restores (portable SQLite/PostgreSQL). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_destinations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('path', 'text')
    .addColumn('endpoint', 'text')
    .addColumn('region', 'text')
    .addColumn('bucket', 'text')
    .addColumn('prefix', 'text')
    .addColumn('access_key_id', 'text')
    .addColumn('secret_access_key', 'text')
    .addColumn('force_path_style', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('backup_destinations_org_idx').on('backup_destinations').columns(['org_id', 'created_at']).execute();

  await db.schema
    .createTable('backup_policies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('destination_id', 'text', (c) => c.notNull().references('backup_destinations.id'))
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('cron_expression', 'text')
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('retain_count', 'integer')
    .addColumn('retain_days', 'integer')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('webhook_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('webhook_token_hash', 'text', (c) => c.unique())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('next_run_at', 'text')
    .addColumn('last_success_at', 'text')
    .execute();
  await db.schema.createIndex('backup_policies_project_idx').on('backup_policies').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('backup_policies_next_idx').on('backup_policies').column('next_run_at').execute();

  await db.schema
    .createTable('backup_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('policy_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('destination_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('protected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('size_bytes', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('artifact_key', 'text')
    .addColumn('temp_key', 'text')
    .addColumn('active_key', 'text', (c) => c.unique())
    .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('runner', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('error', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('backup_runs_policy_idx').on('backup_runs').columns(['policy_id', 'created_at']).execute();
  await db.schema.createIndex('backup_runs_project_idx').on('backup_runs').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('backup_runs_status_idx').on('backup_runs').column('status').execute();

  await db.schema
    .createTable('backup_restores')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('runner', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('applied_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('error', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('backup_restores_run_idx').on('backup_restores').columns(['run_id', 'status']).execute();
  await db.schema.createIndex('backup_restores_status_idx').on('backup_restores').column('status').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['backup_restores', 'backup_runs', 'backup_policies', 'backup_destinations']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
