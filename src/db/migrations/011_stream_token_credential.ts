import type { Kysely } from 'kysely';

/**
 * Stream tokens (build-log and request-log tokens) remember the credential that minted them (a token's
 * or a session's id), so that revoking that token or signing that session out ends the streams the
 * stream token opened, and refuses new ones (docs/security.md, "Streams end when access ends").
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_tokens').addColumn('credential_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_tokens').dropColumn('credential_id').execute();
}
