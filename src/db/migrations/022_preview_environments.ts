import type { Kysely } from 'kysely';

/**
 * Preview environments served by the edge (issue 22, contract section 16):
 * - `environments.slug`: a preview's branch part of its host label (`<slug>--<project-slug>.<apps
 *   domain>`): the branch slugged, cut to fit the 63-character DNS label, with a short hash suffix when
 *   another environment of the project has it already. Null for production. Unique per project
 *   (NULLs are distinct on both SQLite and PostgreSQL), and the edge's lookup of a preview host.
 * - `deployments.promoted_from`: the preview deployment a production deployment was promoted from
 *   (its build is that one's; no build ran).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('environments').addColumn('slug', 'text').execute();
  await db.schema.createIndex('environments_slug_uq').on('environments').columns(['project_id', 'slug']).unique().execute();
  await db.schema.alterTable('deployments').addColumn('promoted_from', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployments').dropColumn('promoted_from').execute();
  await db.schema.dropIndex('environments_slug_uq').execute();
  await db.schema.alterTable('environments').dropColumn('slug').execute();
}
