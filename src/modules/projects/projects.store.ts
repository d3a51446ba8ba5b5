/**
 * SQL on project rows, scoped by org except where a name says AnyOrg (or the comment says why):
 * create, read, change and delete them, the deletion preview's names, and the reads the hosting area
 * makes (edge lookups, run settings, restores). The records under a project have their own stores:
 * environments, domains, route rules, services, clone credentials, env vars (env.store.ts), and a
 * whole project's rows for transfers (whole-project.store.ts).
 */
import type { Insertable, Selectable, SelectQueryBuilder, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg, inProject } from '../../db/scope.js';
import { precompiled } from '../../db/precompiled.js';
import type { DB } from '../../db/schema.js';
import type { ProjectsTable } from './projects.tables.js';

export type ProjectRow = Selectable<ProjectsTable>;

const findProjectQuery = precompiled<ProjectRow>(2, (db, [orgId, id]) => db.selectFrom('projects').selectAll().where(inOrg(orgId!)).where('id', '=', id!));

/** One project of `orgId`, or undefined (missing or another org's). */
export async function findProject(db: Db, orgId: string, id: string): Promise<ProjectRow | undefined> {
  return (await findProjectQuery(db, orgId, id))[0];
}

export async function listProjects(db: Db, orgId: string): Promise<ProjectRow[]> {
  return db.selectFrom('projects').selectAll().where(inOrg(orgId)).orderBy('createdAt', 'desc').orderBy('id', 'desc').execute();
}

/** The org's project whose source is the local folder `localPath`. */
export async function findProjectByLocalPath(db: Db, orgId: string, localPath: string): Promise<Pick<ProjectRow, 'id'> | undefined> {
  return db.selectFrom('projects').select('id').where(inOrg(orgId)).where('localPath', '=', localPath).executeTakeFirst();
}

export async function slugTaken(db: Db, slug: string): Promise<boolean> {
  const row = await db.selectFrom('projects').select('id').where('slug', '=', slug).executeTakeFirst();
  return !!row;
}

/** Slugs starting with `base` (for picking a free suffix). Instance-wide: slugs make the free domains. */
export async function slugsLike(db: Db, base: string): Promise<string[]> {
  const rows = await db.selectFrom('projects').select('slug').where('slug', 'like', `${base}%`).execute();
  return rows.map((r) => r.slug);
}

export async function insertProject(db: Db, row: Insertable<ProjectsTable>): Promise<void> {
  await db.insertInto('projects').values(row).execute();
}

export async function updateProject(db: Db, orgId: string, id: string, patch: Updateable<ProjectsTable>): Promise<void> {
  await db.updateTable('projects').set(patch).where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function deleteProjectRows(db: Db, orgId: string, id: string): Promise<void> {
  // The project's deployments go with it as the deployments area's dependent (`ctx.ports.projectDependents`).
  await db.deleteFrom('envVars').where(inProject(orgId, id)).execute();
  await db.deleteFrom('domains').where(inProject(orgId, id)).execute();
  await db.deleteFrom('routeRules').where(inProject(orgId, id)).execute();
  await db.deleteFrom('services').where(inProject(orgId, id)).execute();
  await db.deleteFrom('cloneCredentials').where(inProject(orgId, id)).execute();
  await db.deleteFrom('routingAttempts').where(inProject(orgId, id)).execute();
  await db.deleteFrom('environments').where(inProject(orgId, id)).execute();
  await db.deleteFrom('projects').where(inOrg(orgId)).where('id', '=', id).execute();
}

/** The ids of projects that moved to the cloud, as a subquery (background work of other areas leaves them out). */
export function cloudProjectIds(db: Db) {
  return db.selectFrom('projects').select('id').where('location', '=', 'cloud');
}

/** Records one attempt at syncing the project's free edge route (POST .../routing/retry, lifecycle changes). */
export async function insertRoutingAttempt(
  db: Db,
  row: { id: string; orgId: string; projectId: string; domain: string; status: string; error: string | null; createdAt: string },
): Promise<void> {
  await db.insertInto('routingAttempts').values(row).execute();
}

// ---------------------------------------------------------------- names under a project, for the deletion preview

/** The names (domains; environment and service names; rule ids) of one kind of record under a project, in order. */
export async function namesUnder(db: Db, table: 'domains' | 'environments' | 'services' | 'routeRules', orgId: string, projectId: string): Promise<string[]> {
  const rows =
    table === 'domains'
      ? await db.selectFrom('domains').select('domain as n').where(inProject(orgId, projectId)).orderBy('domain').execute()
      : table === 'environments'
        ? await db.selectFrom('environments').select('name as n').where(inProject(orgId, projectId)).orderBy('name').execute()
        : table === 'services'
          ? await db.selectFrom('services').select('name as n').where(inProject(orgId, projectId)).orderBy('name').execute()
          : await db.selectFrom('routeRules').select('id as n').where(inProject(orgId, projectId)).orderBy('id').execute();
  return rows.map((r) => r.n);
}

// ---------------------------------------------------------------- the hosting area's reads

/** What the edge and the runtime read of a project. */
export type EdgeProject = Pick<ProjectRow, 'id' | 'orgId' | 'slug' | 'status' | 'sleepMode' | 'location' | 'staticSpa' | 'staticCleanUrls' | 'httpsRedirect' | 'hsts'>;

/** The project a free domain (`<slug>.<appsDomain>`) names. Hosts are global across orgs by nature. */
export async function projectBySlug(db: Db, slug: string): Promise<EdgeProject | undefined> {
  return db.selectFrom('projects').select(['id', 'orgId', 'slug', 'status', 'sleepMode', 'location', 'staticSpa', 'staticCleanUrls', 'httpsRedirect', 'hsts']).where('slug', '=', slug).executeTakeFirst();
}

/** The project a custom domain belongs to: the one that verified it (an unverified claim routes nothing). */
export async function projectByDomain(db: Db, domain: string): Promise<EdgeProject | undefined> {
  return db
    .selectFrom('domains')
    .innerJoin('projects', 'projects.id', 'domains.projectId')
    .select(['projects.id', 'projects.orgId', 'projects.slug', 'projects.status', 'projects.sleepMode', 'projects.location', 'projects.staticSpa', 'projects.staticCleanUrls', 'projects.httpsRedirect', 'projects.hsts'])
    .where('domains.domain', '=', domain)
    .where('domains.verifiedAt', 'is not', null)
    .executeTakeFirst();
}

/** One project of `orgId` as the edge and the runtime read it. */
export async function edgeProject(db: Db, orgId: string, id: string): Promise<EdgeProject | undefined> {
  return db.selectFrom('projects').select(['id', 'orgId', 'slug', 'status', 'sleepMode', 'location', 'staticSpa', 'staticCleanUrls', 'httpsRedirect', 'hsts']).where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/**
 * Enabled local projects among `withRelease` (a subquery of project ids: those with a ready production
 * release), the apps to start again at start-up. System-wide by design.
 */
export async function projectsToRestore<TB extends keyof DB>(db: Db, withRelease: SelectQueryBuilder<DB, TB, { projectId: string }>): Promise<EdgeProject[]> {
  return db
    .selectFrom('projects')
    .select(['id', 'orgId', 'slug', 'status', 'sleepMode', 'location', 'staticSpa', 'staticCleanUrls', 'httpsRedirect', 'hsts'])
    .where('status', '=', 'enabled')
    .where('location', '=', 'local')
    .where('id', 'in', withRelease)
    .execute();
}

/** What a project's release runs with: its resources (JSON) and port. */
export async function projectRunSettings(db: Db, orgId: string, id: string): Promise<Pick<ProjectRow, 'resources' | 'port'> | undefined> {
  return db.selectFrom('projects').select(['resources', 'port']).where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** What the runtime state of a project's app is told from: slug (free domain), port, status, sleep mode. */
export async function projectRuntimeFacts(db: Db, orgId: string, id: string): Promise<Pick<ProjectRow, 'id' | 'slug' | 'port' | 'status' | 'sleepMode' | 'resources'> | undefined> {
  return db.selectFrom('projects').select(['id', 'slug', 'port', 'status', 'sleepMode', 'resources']).where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** The org of a project, by id alone (the supervisor knows projects by id; system-wide by design). */
export async function projectOrgAnyOrg(db: Db, id: string): Promise<Pick<ProjectRow, 'id' | 'orgId'> | undefined> {
  return db.selectFrom('projects').select(['id', 'orgId']).where('id', '=', id).executeTakeFirst();
}

/** The org and status of a project, by id alone (the edge starting a sleeping app; system-wide by design). */
export async function projectStatusAnyOrg(db: Db, id: string): Promise<Pick<ProjectRow, 'orgId' | 'status'> | undefined> {
  return db.selectFrom('projects').select(['orgId', 'status']).where('id', '=', id).executeTakeFirst();
}

/** The sleep mode of each of `ids` (the sleep sweeper; system-wide by design). */
export async function sleepModesOf(db: Db, ids: string[]): Promise<Pick<ProjectRow, 'id' | 'sleepMode'>[]> {
  return db.selectFrom('projects').select(['id', 'sleepMode']).where('id', 'in', ids).execute();
}

/** The org's projects as grant catalog entries (`GET /api/permissions/resources?type=project`), by name. */
export async function projectCatalog(db: Db, orgId: string): Promise<Pick<ProjectRow, 'id' | 'name' | 'slug'>[]> {
  return db.selectFrom('projects').select(['id', 'name', 'slug']).where(inOrg(orgId)).orderBy('name').orderBy('id').execute();
}
