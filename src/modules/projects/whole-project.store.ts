import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inProject } from '../../db/scope.js';
import { findProject } from './projects.store.js';
import type { CloneCredentialsTable, DomainsTable, EnvironmentsTable, EnvVarsTable, ProjectsTable, RouteRulesTable, ServicesTable } from './projects.tables.js';

/**
 * A project with every row it keeps under it, read and written as a whole: what the cloud area's
 * transfers copy between instances (its bundles). SQL only, scoped by org except where said.
 */

export interface ProjectRows {
  project: Selectable<ProjectsTable>;
  environments: Selectable<EnvironmentsTable>[];
  envVars: Selectable<EnvVarsTable>[];
  domains: Selectable<DomainsTable>[];
  routeRules: Selectable<RouteRulesTable>[];
  services: Selectable<ServicesTable>[];
  cloneCredential: Selectable<CloneCredentialsTable> | undefined;
}

export interface NewProjectRows {
  environments: Insertable<EnvironmentsTable>[];
  envVars: Insertable<EnvVarsTable>[];
  domains: Insertable<DomainsTable>[];
  routeRules: Insertable<RouteRulesTable>[];
  services: Insertable<ServicesTable>[];
  cloneCredential: Insertable<CloneCredentialsTable> | null;
}

export async function readProjectRows(db: Db, orgId: string, projectId: string): Promise<ProjectRows | undefined> {
  const project = await findProject(db, orgId, projectId);
  if (!project) return undefined;
  return {
    project,
    environments: await db.selectFrom('environments').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt').execute(),
    envVars: await db.selectFrom('envVars').selectAll().where(inProject(orgId, projectId)).execute(),
    domains: await db.selectFrom('domains').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt').execute(),
    routeRules: await db.selectFrom('routeRules').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt').execute(),
    services: await db.selectFrom('services').selectAll().where(inProject(orgId, projectId)).orderBy('createdAt').execute(),
    cloneCredential: await db.selectFrom('cloneCredentials').selectAll().where(inProject(orgId, projectId)).executeTakeFirst(),
  };
}

/** By id alone: only for public per-project routes, whose own token is checked by whoever answers. */
export async function findProjectAnyOrg(db: Db, id: string): Promise<{ id: string; orgId: string; location: string } | undefined> {
  return db.selectFrom('projects').select(['id', 'orgId', 'location']).where('id', '=', id).executeTakeFirst();
}

/** Whether any org of this instance has a project of this id (ids are kept across instances). */
export async function projectIdTaken(db: Db, id: string): Promise<boolean> {
  return !!(await db.selectFrom('projects').select('id').where('id', '=', id).executeTakeFirst());
}

/** Removes the rows a project keeps under it (before a whole copy's rows replace them). */
export async function clearProjectRows(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('envVars').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('domains').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('routeRules').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('services').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('cloneCredentials').where(inProject(orgId, projectId)).execute();
  await db.deleteFrom('environments').where(inProject(orgId, projectId)).execute();
}

export async function insertProjectRows(db: Db, rows: NewProjectRows): Promise<void> {
  if (rows.environments.length) await db.insertInto('environments').values(rows.environments).execute();
  // Chunks keep each statement well under SQLite's and PostgreSQL's bound-parameter limits.
  for (let i = 0; i < rows.envVars.length; i += 500) await db.insertInto('envVars').values(rows.envVars.slice(i, i + 500)).execute();
  if (rows.domains.length) await db.insertInto('domains').values(rows.domains).execute();
  for (let i = 0; i < rows.routeRules.length; i += 500) await db.insertInto('routeRules').values(rows.routeRules.slice(i, i + 500)).execute();
  if (rows.services.length) await db.insertInto('services').values(rows.services).execute();
  if (rows.cloneCredential) await db.insertInto('cloneCredentials').values(rows.cloneCredential).execute();
}

/**
 * Which of `domains` another project (any org: a verified domain belongs to one project on the
 * instance) has verified. Unverified claims elsewhere do not count: they block nobody.
 */
export async function domainsHeldElsewhere(db: Db, domains: string[], projectId: string | null): Promise<string[]> {
  if (domains.length === 0) return [];
  let q = db.selectFrom('domains').select('domain').where('domain', 'in', domains).where('verifiedAt', 'is not', null);
  if (projectId) q = q.where('projectId', '!=', projectId);
  return (await q.execute()).map((r) => r.domain);
}
