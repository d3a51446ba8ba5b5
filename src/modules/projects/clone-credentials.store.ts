/** SQL on a project's clone credential (the encrypted token a build clones its repository with), scoped by org. */
import type { Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import type { CloneCredentialsTable } from './projects.tables.js';

export type CloneCredentialRow = Selectable<CloneCredentialsTable>;

export async function findCloneCredential(db: Db, orgId: string, projectId: string): Promise<CloneCredentialRow | undefined> {
  return db.selectFrom('cloneCredentials').selectAll().where(inProject(orgId, projectId)).executeTakeFirst();
}

export async function upsertCloneCredential(db: Db, row: CloneCredentialRow): Promise<void> {
  await db
    .insertInto('cloneCredentials')
    .values(row)
    .onConflict((oc) => oc.column('projectId').doUpdateSet({ username: row.username, token: row.token, updatedAt: row.updatedAt }))
    .execute();
}
