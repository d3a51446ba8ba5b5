import type { Kysely } from 'kysely';

/**
 * Containers (issue 19): a project's `config.dockerfile` (the Dockerfile to build, relative to its
 * root directory; null = `Dockerfile`) and, per build, the image a release runs from under the docker
 * runtime (`berth/<project-slug>:<deployment-id>`; null for releases that run from their folder).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('dockerfile', 'text').execute();
  await db.schema.alterTable('deployment_builds').addColumn('image', 'text').execute();
  await db.schema.alterTable('deployment_builds').addColumn('image_command', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_builds').dropColumn('image_command').execute();
  await db.schema.alterTable('deployment_builds').dropColumn('image').execute();
  await db.schema.alterTable('projects').dropColumn('dockerfile').execute();
}
