/** SQL on a project's domains (its claims on custom domains), scoped by org except where said. */
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import { sql } from '../../db/kysely.js';
import { precompiled } from '../../db/precompiled.js';
import type { DomainsTable } from './projects.tables.js';

export type DomainRow = Selectable<DomainsTable>;

const listDomainsQuery = precompiled<DomainRow>(2, (db, [orgId, projectId]) =>
  db.selectFrom('domains').selectAll().where(inProject(orgId!, projectId!)).orderBy('createdAt', 'asc').orderBy('domain', 'asc'),
);

export async function listDomains(db: Db, orgId: string, projectId: string): Promise<DomainRow[]> {
  return listDomainsQuery(db, orgId, projectId);
}

/**
 * The domains (oldest first) and preview slugs (oldest first) of one project, or of every project of
 * the org, in one query: what a project's `routes` show, read in one round trip.
 */
export async function listRoutes(db: Db, orgId: string, projectId?: string): Promise<{ domains: DomainRow[]; previews: { projectId: string; slug: string }[] }> {
  const ofProject = projectId === undefined ? sql`` : sql`and project_id = ${projectId}`;
  const { rows } = await sql<DomainRow & { kind: 'd' | 'p' }>`
    select 'd' as kind, id, org_id, project_id, domain, is_primary, verification, verified_at, created_at, domain as sort_key
      from domains where org_id = ${orgId} ${ofProject}
    union all
    select 'p', id, org_id, project_id, slug, 0, '', null, created_at, name
      from environments where org_id = ${orgId} ${ofProject} and slug is not null
    order by kind, created_at, sort_key`.execute(db);
  const domains: DomainRow[] = [];
  const previews: { projectId: string; slug: string }[] = [];
  for (const { kind, sortKey: _, ...r } of rows as (DomainRow & { kind: 'd' | 'p'; sortKey: string })[]) {
    if (kind === 'd') domains.push({ ...r, isPrimary: Number(r.isPrimary) });
    else previews.push({ projectId: r.projectId, slug: r.domain });
  }
  return { domains, previews };
}

/** The project's claim on `domain`, verified or not. */
export async function findProjectDomain(db: Db, orgId: string, projectId: string, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').selectAll().where(inProject(orgId, projectId)).where('domain', '=', domain).executeTakeFirst();
}

/** The one verified claim on `domain` on the instance, whatever its org (a verified domain belongs to one project). */
export async function findVerifiedDomain(db: Db, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').selectAll().where('domain', '=', domain).where('verifiedAt', 'is not', null).executeTakeFirst();
}

export async function insertDomain(db: Db, row: Insertable<DomainsTable>): Promise<void> {
  await db.insertInto('domains').values(row).execute();
}

export async function setPrimaryDomain(db: Db, orgId: string, projectId: string, domain: string): Promise<void> {
  await db.updateTable('domains').set({ isPrimary: 0 }).where(inProject(orgId, projectId)).where('domain', '!=', domain).execute();
  await db.updateTable('domains').set({ isPrimary: 1 }).where(inProject(orgId, projectId)).where('domain', '=', domain).execute();
}

/** Marks the project's claim on `domain` verified (a unique violation when another project verified it first). */
export async function markDomainVerified(db: Db, orgId: string, projectId: string, domain: string, at: string): Promise<void> {
  await db.updateTable('domains').set({ verifiedAt: at }).where(inProject(orgId, projectId)).where('domain', '=', domain).execute();
}

/** Every verified domain on the instance with its project (the certificates area's scheduler; system-wide by design). */
export async function verifiedDomainsAnyOrg(db: Db): Promise<Pick<DomainRow, 'orgId' | 'projectId' | 'domain'>[]> {
  return db.selectFrom('domains').select(['orgId', 'projectId', 'domain']).where('verifiedAt', 'is not', null).execute();
}

/** Removes the project's claim on `domain`; the number of rows removed (0 or 1). */
export async function deleteDomain(db: Db, orgId: string, projectId: string, domain: string): Promise<number> {
  const r = await db.deleteFrom('domains').where(inProject(orgId, projectId)).where('domain', '=', domain).executeTakeFirst();
  return Number(r.numDeletedRows);
}
