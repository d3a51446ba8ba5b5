import type { Kysely } from 'kysely';

/**
 * Preview deployments on GitHub (issue 22, contract section 16), the git provider area's records:
 * - `gitprovider_preview_pulls`: a pull request's preview environment (`pr-<number>`) in one project,
 *   its head branch and sha and whether it is open;
 * - `gitprovider_preview_deployments`: each deployment the area made of a preview environment (a pull
 *   request or a push to a preview's branch): the commit it reports a `berth/deploy` status on, and
 *   the state to report. One per project, environment and commit (a redelivery or a push and a
 *   `synchronize` of the same head sha deploy once);
 * - `gitprovider_pull_comments`: the one comment Berth keeps on a pull request per org, its GitHub
 *   id, and the revision counters and lease that serialise its writes (one comment, never two).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('gitprovider_preview_pulls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('repo_owner', 'text', (c) => c.notNull())
    .addColumn('repo_name', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('head_branch', 'text', (c) => c.notNull())
    .addColumn('head_sha', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('gitprovider_preview_pulls_uq', ['project_id', 'number'])
    .execute();
  await db.schema.createIndex('gitprovider_preview_pulls_repo_idx').on('gitprovider_preview_pulls').columns(['org_id', 'repo_owner', 'repo_name', 'number']).execute();

  await db.schema
    .createTable('gitprovider_preview_deployments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('deployment_id', 'text', (c) => c.unique())
    .addColumn('repo_owner', 'text', (c) => c.notNull())
    .addColumn('repo_name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('preview_url', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('gitprovider_preview_deployments_uq', ['project_id', 'environment', 'commit_sha'])
    .execute();

  await db.schema
    .createTable('gitprovider_pull_comments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('repo_owner', 'text', (c) => c.notNull())
    .addColumn('repo_name', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('comment_id', 'text')
    .addColumn('rev', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('synced_rev', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lock_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('gitprovider_pull_comments_uq', ['org_id', 'repo_owner', 'repo_name', 'number'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['gitprovider_pull_comments', 'gitprovider_preview_deployments', 'gitprovider_preview_pulls']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
