import type { Kysely } from 'kysely';

/** Projects area: projects and everything recorded under them (portable SQLite/PostgreSQL). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('location', 'text', (c) => c.notNull())
    .addColumn('framework', 'text')
    .addColumn('install_command', 'text')
    .addColumn('build_command', 'text')
    .addColumn('start_command', 'text')
    .addColumn('output_directory', 'text')
    .addColumn('root_directory', 'text')
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('package_manager', 'text')
    .addColumn('runtime', 'text')
    .addColumn('node_version', 'text')
    .addColumn('source_type', 'text', (c) => c.notNull())
    .addColumn('git_provider', 'text')
    .addColumn('git_owner', 'text')
    .addColumn('git_repo', 'text')
    .addColumn('git_branch', 'text')
    .addColumn('local_path', 'text')
    .addColumn('sleep_mode', 'text', (c) => c.notNull())
    .addColumn('auto_deploy', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('webhook_domain', 'text')
    .addColumn('webhook_id', 'text')
    .addColumn('resources', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('projects_org_idx').on('projects').columns(['org_id', 'created_at']).execute();
  await db.schema.createIndex('projects_git_idx').on('projects').columns(['git_owner', 'git_repo']).execute();

  await db.schema
    .createTable('environments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('branch', 'text')
    .addColumn('env_revision', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('environments_name_uq', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('env_vars')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('is_secret', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('env_vars_key_uq', ['project_id', 'environment', 'key'])
    .execute();

  await db.schema
    .createTable('domains')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('domain', 'text', (c) => c.notNull().unique())
    .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('domains_project_idx').on('domains').column('project_id').execute();

  await db.schema
    .createTable('route_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('path', 'text')
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('route_rules_project_idx').on('route_rules').column('project_id').execute();

  await db.schema
    .createTable('services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('connection_url', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('services_name_uq', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('deployments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('commit', 'text')
    .addColumn('ref', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('error', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('deployments_project_idx').on('deployments').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('deployments_status_idx').on('deployments').column('status').execute();

  await db.schema
    .createTable('clone_credentials')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('username', 'text')
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('routing_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('routing_attempts_project_idx').on('routing_attempts').columns(['project_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['routing_attempts', 'clone_credentials', 'deployments', 'services', 'route_rules', 'domains', 'env_vars', 'environments', 'projects']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
