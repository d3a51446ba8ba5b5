import type { Kysely } from 'kysely';

/**
 * Static sites (issue 17): a project's `config.static` settings (`spa`, `cleanUrls`; null = the
 * plan's default) and, per build, the static site a release serves (its folder and defaults, JSON)
 * and the variables its plan sets (a folder's railpack.json), which the app runs with.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('static_spa', 'integer').execute();
  await db.schema.alterTable('projects').addColumn('static_clean_urls', 'integer').execute();
  await db.schema.alterTable('deployment_builds').addColumn('static_site', 'text').execute();
  await db.schema.alterTable('deployment_builds').addColumn('plan_variables', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_builds').dropColumn('plan_variables').execute();
  await db.schema.alterTable('deployment_builds').dropColumn('static_site').execute();
  await db.schema.alterTable('projects').dropColumn('static_clean_urls').execute();
  await db.schema.alterTable('projects').dropColumn('static_spa').execute();
}
