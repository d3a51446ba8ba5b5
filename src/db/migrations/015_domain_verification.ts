import type { Kysely, Transaction } from 'kysely';
import { sql } from '../kysely.js';
import { randomString } from '../../lib/ids.js';

/**
 * Domain verification (issue 18): per domain row the TXT value that proves it (`verification`),
 * when it was proven (`verified_at`, null while unverified) and the state of its certificate (`tls`:
 * `none` until the HTTPS work adds `pending|issued|failed`).
 *
 * "Unique across the instance" becomes: a project holds a domain at most once (unique
 * `(project_id, domain)`), and a domain is verified by at most one project (a unique index over the
 * verified rows only), so unverified claims of different orgs coexist and nobody can squat a name
 * they cannot prove. The old column-level UNIQUE on `domain` cannot be dropped on SQLite, so the
 * table is rebuilt the same way on both databases. Existing rows were routed before verification
 * existed: they are backfilled as verified (at their creation time).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.schema
      .createTable('domains_v2')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
      .addColumn('domain', 'text', (c) => c.notNull())
      .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('verification', 'text', (c) => c.notNull())
      .addColumn('verified_at', 'text')
      .addColumn('tls', 'text', (c) => c.notNull().defaultTo('none'))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Raw SQL: the copy must not depend on how the query builder maps names.
    await sql`INSERT INTO domains_v2 (id, org_id, project_id, domain, is_primary, verification, verified_at, tls, created_at)
      SELECT id, org_id, project_id, domain, is_primary, id, created_at, 'none', created_at FROM domains`.execute(tx);
    const ids = await sql<{ id: string }>`SELECT id FROM domains_v2`.execute(tx);
    for (const { id } of ids.rows) await sql`UPDATE domains_v2 SET verification = ${newVerificationValue()} WHERE id = ${id}`.execute(tx);
    await tx.schema.dropTable('domains').execute();
    await tx.schema.alterTable('domains_v2').renameTo('domains').execute();
    await tx.schema.createIndex('domains_project_domain_uq').on('domains').columns(['project_id', 'domain']).unique().execute();
    await tx.schema.createIndex('domains_domain_idx').on('domains').column('domain').execute();
    await tx.schema.createIndex('domains_verified_uq').on('domains').column('domain').unique().where(sql.ref('verified_at'), 'is not', null).execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.schema
      .createTable('domains_v1')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
      .addColumn('domain', 'text', (c) => c.notNull().unique())
      .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Only verified rows fit the old one-row-per-domain rule.
    await sql`INSERT INTO domains_v1 (id, org_id, project_id, domain, is_primary, created_at)
      SELECT id, org_id, project_id, domain, is_primary, created_at FROM domains WHERE verified_at IS NOT NULL`.execute(tx);
    await tx.schema.dropTable('domains').execute();
    await tx.schema.alterTable('domains_v1').renameTo('domains').execute();
    await tx.schema.createIndex('domains_project_idx').on('domains').column('project_id').execute();
  });
}

/** The TXT value a claim is proven with: `berth-verify=` and 32 random characters. */
function newVerificationValue(): string {
  return `berth-verify=${randomString(32)}`;
}

/**
 * The rebuild in one transaction: PostgreSQL's migrator already runs in one (transactional DDL);
 * SQLite's does not, and a rebuild cut halfway must not leave two tables behind.
 */
async function inTransaction(db: Kysely<any>, fn: (tx: Kysely<any>) => Promise<void>): Promise<void> {
  if (db.isTransaction) return fn(db);
  await db.transaction().execute((tx: Transaction<any>) => fn(tx));
}
