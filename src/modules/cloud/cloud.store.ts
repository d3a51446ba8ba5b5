import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import type {
  CloneCredentialsTable,
  DomainsTable,
  EnvironmentsTable,
  EnvVarsTable,
  ProjectsTable,
  RouteRulesTable,
  ServicesTable,
} from '../projects/projects.tables.js';
import { currentForProject } from '../uploads/uploads.store.js';
import type { CloudLinksTable } from './cloud.tables.js';

export type CloudLinkRow = Selectable<CloudLinksTable>;

// ---------------------------------------------------------------- the id mapping (self-hosted side)

export async function findCloudLink(db: Db, orgId: string, projectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).executeTakeFirst();
}

/** The local record (in `orgId`) that stands for a cloud project, by the cloud's id. */
export async function findCloudLinkByCloudId(db: Db, orgId: string, cloudProjectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where('orgId', '=', orgId).where('cloudProjectId', '=', cloudProjectId).executeTakeFirst();
}

/** Whether the org has any project on the cloud. */
export async function orgHasCloudLinks(db: Db, orgId: string): Promise<boolean> {
  return !!(await db.selectFrom('cloudLinks').select('projectId').where('orgId', '=', orgId).limit(1).executeTakeFirst());
}

export async function listCloudLinks(db: Db, orgId: string): Promise<CloudLinkRow[]> {
  return db.selectFrom('cloudLinks').selectAll().where('orgId', '=', orgId).execute();
}

export async function insertCloudLink(db: Db, row: Insertable<CloudLinksTable>): Promise<void> {
  await db.insertInto('cloudLinks').values(row).execute();
}

export async function deleteCloudLink(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('cloudLinks').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
}

// ---------------------------------------------------------------- whole-project rows (bundles)

export interface ProjectRows {
  project: Selectable<ProjectsTable>;
  environments: Selectable<EnvironmentsTable>[];
  envVars: Selectable<EnvVarsTable>[];
  domains: Selectable<DomainsTable>[];
  routeRules: Selectable<RouteRulesTable>[];
  services: Selectable<ServicesTable>[];
  cloneCredential: Selectable<CloneCredentialsTable> | undefined;
  /** The current uploaded source archive (folder-upload projects). */
  sourceArchive: { sha256: string; sizeBytes: number } | null;
}

export async function readProjectRows(db: Db, orgId: string, projectId: string): Promise<ProjectRows | undefined> {
  const project = await db.selectFrom('projects').selectAll().where('orgId', '=', orgId).where('id', '=', projectId).executeTakeFirst();
  if (!project) return undefined;
  return {
    project,
    environments: await db.selectFrom('environments').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).orderBy('createdAt').execute(),
    envVars: await db.selectFrom('envVars').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).execute(),
    domains: await db.selectFrom('domains').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).orderBy('createdAt').execute(),
    routeRules: await db.selectFrom('routeRules').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).orderBy('createdAt').execute(),
    services: await db.selectFrom('services').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).orderBy('createdAt').execute(),
    cloneCredential: await db.selectFrom('cloneCredentials').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).executeTakeFirst(),
    sourceArchive: await currentForProject(db, orgId, projectId).then((r) => (r?.sha256 && r.sizeBytes != null ? { sha256: r.sha256, sizeBytes: r.sizeBytes } : null)),
  };
}

/** By id alone: only for public per-project routes, whose own token is checked by whoever answers. */
export async function findProjectAnyOrg(db: Db, id: string): Promise<{ id: string; orgId: string; location: string } | undefined> {
  return db.selectFrom('projects').select(['id', 'orgId', 'location']).where('id', '=', id).executeTakeFirst();
}

export async function projectIdTaken(db: Db, id: string): Promise<boolean> {
  return !!(await db.selectFrom('projects').select('id').where('id', '=', id).executeTakeFirst());
}

export async function slugTaken(db: Db, slug: string): Promise<boolean> {
  return !!(await db.selectFrom('projects').select('id').where('slug', '=', slug).executeTakeFirst());
}

export async function insertProjectRow(db: Db, row: Insertable<ProjectsTable>): Promise<void> {
  await db.insertInto('projects').values(row).execute();
}

export async function updateProjectRow(db: Db, orgId: string, id: string, patch: Partial<Insertable<ProjectsTable>>): Promise<void> {
  await db.updateTable('projects').set(patch).where('orgId', '=', orgId).where('id', '=', id).execute();
}

/** Removes what a bundle carries under a project (before the bundle's rows replace them). */
export async function clearBundleRows(db: Db, orgId: string, projectId: string): Promise<void> {
  for (const t of ['envVars', 'domains', 'routeRules', 'services', 'cloneCredentials', 'environments'] as const) {
    await db.deleteFrom(t).where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
  }
}

export async function insertBundleRows(
  db: Db,
  rows: {
    environments: Insertable<EnvironmentsTable>[];
    envVars: Insertable<EnvVarsTable>[];
    domains: Insertable<DomainsTable>[];
    routeRules: Insertable<RouteRulesTable>[];
    services: Insertable<ServicesTable>[];
    cloneCredential: Insertable<CloneCredentialsTable> | null;
  },
): Promise<void> {
  if (rows.environments.length) await db.insertInto('environments').values(rows.environments).execute();
  // Chunks keep each statement well under SQLite's and PostgreSQL's bound-parameter limits.
  for (let i = 0; i < rows.envVars.length; i += 500) await db.insertInto('envVars').values(rows.envVars.slice(i, i + 500)).execute();
  if (rows.domains.length) await db.insertInto('domains').values(rows.domains).execute();
  for (let i = 0; i < rows.routeRules.length; i += 500) await db.insertInto('routeRules').values(rows.routeRules.slice(i, i + 500)).execute();
  if (rows.services.length) await db.insertInto('services').values(rows.services).execute();
  if (rows.cloneCredential) await db.insertInto('cloneCredentials').values(rows.cloneCredential).execute();
}

export async function domainsHeldElsewhere(db: Db, domains: string[], projectId: string | null): Promise<string[]> {
  if (domains.length === 0) return [];
  let q = db.selectFrom('domains').select('domain').where('domain', 'in', domains);
  if (projectId) q = q.where('projectId', '!=', projectId);
  return (await q.execute()).map((r) => r.domain);
}

// ---------------------------------------------------------------- by id alone (token-in-query streams)

/** Whether any org of this instance has a project on the cloud. */
export async function anyCloudLinks(db: Db): Promise<boolean> {
  return !!(await db.selectFrom('cloudLinks').select('projectId').limit(1).executeTakeFirst());
}

/**
 * The local record that stands for a cloud project, in whichever org: only for public routes whose
 * own token (minted by the cloud) is checked by the cloud when the request is forwarded.
 */
export async function findCloudLinkByCloudIdAnyOrg(db: Db, cloudProjectId: string): Promise<CloudLinkRow | undefined> {
  return db.selectFrom('cloudLinks').selectAll().where('cloudProjectId', '=', cloudProjectId).orderBy('projectId').limit(1).executeTakeFirst();
}
