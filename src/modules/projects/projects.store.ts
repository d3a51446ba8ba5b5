/**
 * SQL on the projects area's tables (projects, environments, env vars, domains, route rules, services,
 * clone credentials, routing attempts), every query scoped by org. One file on purpose: it is the
 * whole of what the area asks the database, and the reads other areas need (edge lookups, run
 * settings) sit beside the queries they share columns with. Env vars are in env.store.ts, a whole
 * project's rows (bundles, transfers) in whole-project.store.ts.
 */
import type { Insertable, Selectable, SelectQueryBuilder, Updateable } from 'kysely';
import type { GrantKey } from '../../authz/grants.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { sql } from '../../db/kysely.js';
import { precompiled } from '../../db/precompiled.js';
import type { DB } from '../../db/schema.js';
import type { ResolvedResource } from '../../http/route.js';
import type {
  CloneCredentialsTable,
  DomainsTable,
  EnvironmentsTable,
  ProjectsTable,
  RouteRulesTable,
  ServicesTable,
} from './projects.tables.js';

export type ProjectRow = Selectable<ProjectsTable>;

const findProjectQuery = precompiled<ProjectRow>(2, (db, [orgId, id]) => db.selectFrom('projects').selectAll().where('orgId', '=', orgId!).where('id', '=', id!));

/** One project of `orgId`, or undefined (missing or another org's). */
export async function findProject(db: Db, orgId: string, id: string): Promise<ProjectRow | undefined> {
  return (await findProjectQuery(db, orgId, id))[0];
}

/** The grant keys that cover a project and everything under it (env, domains, policies, runs, ...). */
export function projectGrantKeys(projectId: string): GrantKey[] {
  return [{ type: 'project', id: projectId }];
}

/**
 * A resource ref for a project row, for authorize()/can(). Other areas build refs for records under a
 * project with `{ ...projectRef(project), kind: 'backup_policy', id: policy.id, record: policy }`, so that a
 * grant on the project covers them.
 */
export function projectRef(row: { id: string; orgId: string }): ResolvedResource {
  return { kind: 'project', id: row.id, orgId: row.orgId, grantKeys: projectGrantKeys(row.id), record: row };
}

declare module '../../http/route.js' {
  interface ResourceKinds {
    project: ProjectRow;
  }
}

/** Resolver of kind `project` (routes with `resource: { kind: 'project', param: 'id' }` or a body `projectId`). */
export async function resolveProject(ctx: AppContext, orgId: string, id: string, _source?: unknown, how?: { read: boolean }): Promise<ResolvedResource<'project'> | null> {
  const reads = how?.read ? ctx.ports.projectReads : null;
  const row = reads ? await reads.project(ctx.db, orgId, id) : await findProject(ctx.db, orgId, id);
  return row ? { kind: 'project', id: row.id, orgId: row.orgId, grantKeys: projectGrantKeys(row.id), record: row } : null;
}

// ---------------------------------------------------------------- projects


export type EnvironmentRow = Selectable<EnvironmentsTable>;
export type DomainRow = Selectable<DomainsTable>;
export type RouteRuleRow = Selectable<RouteRulesTable>;
export type ServiceRow = Selectable<ServicesTable>;
/** A row of the deployments area's `deployments` table (read here: the project's deployments, its info). */
export type DeploymentRow = Selectable<DB['deployments']>;
export type CloneCredentialRow = Selectable<CloneCredentialsTable>;

export async function listProjects(db: Db, orgId: string): Promise<ProjectRow[]> {
  return db.selectFrom('projects').selectAll().where('orgId', '=', orgId).orderBy('createdAt', 'desc').orderBy('id', 'desc').execute();
}

/** The org's project whose source is the local folder `localPath`. */
export async function findProjectByLocalPath(db: Db, orgId: string, localPath: string): Promise<Pick<ProjectRow, 'id'> | undefined> {
  return db.selectFrom('projects').select('id').where('orgId', '=', orgId).where('localPath', '=', localPath).executeTakeFirst();
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
  await db.updateTable('projects').set(patch).where('orgId', '=', orgId).where('id', '=', id).execute();
}

export async function deleteProjectRows(db: Db, orgId: string, id: string): Promise<void> {
  // The project's deployments go with it as the deployments area's dependent (`ctx.ports.projectDependents`).
  for (const t of ['envVars', 'domains', 'routeRules', 'services', 'cloneCredentials', 'routingAttempts', 'environments'] as const) {
    await db.deleteFrom(t).where('orgId', '=', orgId).where('projectId', '=', id).execute();
  }
  await db.deleteFrom('projects').where('orgId', '=', orgId).where('id', '=', id).execute();
}

// ---------------------------------------------------------------- environments

export async function listEnvironments(db: Db, orgId: string, projectId: string): Promise<EnvironmentRow[]> {
  return db
    .selectFrom('environments')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy('createdAt', 'asc')
    .orderBy('name', 'asc')
    .execute();
}

export async function findEnvironment(db: Db, orgId: string, projectId: string, name: string): Promise<EnvironmentRow | undefined> {
  return db
    .selectFrom('environments')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export async function insertEnvironment(db: Db, row: Insertable<EnvironmentsTable>): Promise<void> {
  await db.insertInto('environments').values(row).execute();
}

/** Preview slugs (`environments.slug`) of a project, oldest first, but `exceptId`'s (picking a free one). */
export async function previewSlugs(db: Db, orgId: string, projectId: string, exceptId?: string): Promise<string[]> {
  let q = db.selectFrom('environments').select('slug').where('orgId', '=', orgId).where('projectId', '=', projectId).where('slug', 'is not', null);
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.orderBy('createdAt', 'asc').orderBy('name', 'asc').execute()).map((r) => r.slug!);
}

/** A preview environment's branch and slug (ensure on a branch change). */
export async function updateEnvironment(db: Db, orgId: string, id: string, patch: { branch: string | null; slug: string | null }): Promise<void> {
  await db.updateTable('environments').set(patch).where('orgId', '=', orgId).where('id', '=', id).execute();
}

/** Removes an environment and its variables (a preview's removal, inside its transaction). */
export async function deleteEnvironmentRows(db: Db, orgId: string, projectId: string, name: string): Promise<void> {
  await db.deleteFrom('envVars').where('orgId', '=', orgId).where('projectId', '=', projectId).where('environment', '=', name).execute();
  await db.deleteFrom('environments').where('orgId', '=', orgId).where('projectId', '=', projectId).where('name', '=', name).execute();
}

/** The preview environment a host label's branch part names in a project (the edge; hosts are global across orgs by nature). */
export async function environmentBySlugAnyOrg(db: Db, projectId: string, slug: string): Promise<Pick<EnvironmentRow, 'id' | 'name' | 'type' | 'slug'> | undefined> {
  return db.selectFrom('environments').select(['id', 'name', 'type', 'slug']).where('projectId', '=', projectId).where('slug', '=', slug).executeTakeFirst();
}

export async function setProductionBranch(db: Db, orgId: string, projectId: string, branch: string | null): Promise<void> {
  await db
    .updateTable('environments')
    .set({ branch })
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('type', '=', 'production')
    .execute();
}

// ---------------------------------------------------------------- domains

const listDomainsQuery = precompiled<DomainRow>(2, (db, [orgId, projectId]) =>
  db.selectFrom('domains').selectAll().where('orgId', '=', orgId!).where('projectId', '=', projectId!).orderBy('createdAt', 'asc').orderBy('domain', 'asc'),
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
  return db.selectFrom('domains').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).where('domain', '=', domain).executeTakeFirst();
}

/** The one verified claim on `domain` on the instance, whatever its org (a verified domain belongs to one project). */
export async function findVerifiedDomain(db: Db, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').selectAll().where('domain', '=', domain).where('verifiedAt', 'is not', null).executeTakeFirst();
}

export async function insertDomain(db: Db, row: Insertable<DomainsTable>): Promise<void> {
  await db.insertInto('domains').values(row).execute();
}

export async function setPrimaryDomain(db: Db, orgId: string, projectId: string, domain: string): Promise<void> {
  await db.updateTable('domains').set({ isPrimary: 0 }).where('orgId', '=', orgId).where('projectId', '=', projectId).where('domain', '!=', domain).execute();
  await db.updateTable('domains').set({ isPrimary: 1 }).where('orgId', '=', orgId).where('projectId', '=', projectId).where('domain', '=', domain).execute();
}

/** Marks the project's claim on `domain` verified (a unique violation when another project verified it first). */
export async function markDomainVerified(db: Db, orgId: string, projectId: string, domain: string, at: string): Promise<void> {
  await db.updateTable('domains').set({ verifiedAt: at }).where('orgId', '=', orgId).where('projectId', '=', projectId).where('domain', '=', domain).execute();
}

/** Every verified domain on the instance with its project (the certificates area's scheduler; system-wide by design). */
export async function verifiedDomainsAnyOrg(db: Db): Promise<Pick<DomainRow, 'orgId' | 'projectId' | 'domain'>[]> {
  return db.selectFrom('domains').select(['orgId', 'projectId', 'domain']).where('verifiedAt', 'is not', null).execute();
}

/** Removes the project's claim on `domain`; the number of rows removed (0 or 1). */
export async function deleteDomain(db: Db, orgId: string, projectId: string, domain: string): Promise<number> {
  const r = await db.deleteFrom('domains').where('orgId', '=', orgId).where('projectId', '=', projectId).where('domain', '=', domain).executeTakeFirst();
  return Number(r.numDeletedRows);
}

// ---------------------------------------------------------------- route rules

export async function listRouteRules(db: Db, orgId: string, projectId: string): Promise<RouteRuleRow[]> {
  return db
    .selectFrom('routeRules')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy('createdAt', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function findRouteRule(db: Db, orgId: string, projectId: string, id: string): Promise<RouteRuleRow | undefined> {
  return db
    .selectFrom('routeRules')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertRouteRule(db: Db, row: Insertable<RouteRulesTable>): Promise<void> {
  await db.insertInto('routeRules').values(row).execute();
}

export async function updateRouteRule(db: Db, orgId: string, projectId: string, id: string, patch: Updateable<RouteRulesTable>): Promise<void> {
  await db.updateTable('routeRules').set(patch).where('orgId', '=', orgId).where('projectId', '=', projectId).where('id', '=', id).execute();
}

export async function deleteRouteRule(db: Db, orgId: string, projectId: string, id: string): Promise<number> {
  const r = await db.deleteFrom('routeRules').where('orgId', '=', orgId).where('projectId', '=', projectId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows);
}

// ---------------------------------------------------------------- services

export async function listServices(db: Db, orgId: string, projectId: string): Promise<ServiceRow[]> {
  return db
    .selectFrom('services')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy('createdAt', 'asc')
    .orderBy('name', 'asc')
    .execute();
}

export async function findService(db: Db, orgId: string, projectId: string, id: string): Promise<ServiceRow | undefined> {
  return db
    .selectFrom('services')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertService(db: Db, row: Insertable<ServicesTable>): Promise<void> {
  await db.insertInto('services').values(row).execute();
}

export async function findServiceByName(db: Db, orgId: string, projectId: string, name: string): Promise<ServiceRow | undefined> {
  return db.selectFrom('services').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).where('name', '=', name).executeTakeFirst();
}

/** Inserts the service unless the project already has one of that name. */
export async function insertServiceIfMissing(db: Db, row: Insertable<ServicesTable>): Promise<void> {
  await db
    .insertInto('services')
    .values(row)
    .onConflict((oc) => oc.columns(['projectId', 'name']).doNothing())
    .execute();
}

/** The ids of projects that moved to the cloud, as a subquery (background work of other areas leaves them out). */
export function cloudProjectIds(db: Db) {
  return db.selectFrom('projects').select('id').where('location', '=', 'cloud');
}

// ---------------------------------------------------------------- deployments

export async function listDeployments(
  db: Db,
  orgId: string,
  projectId: string,
  opts: { limit: number; environment?: string; status?: string; current?: boolean },
): Promise<DeploymentRow[]> {
  let q = db.selectFrom('deployments').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId);
  if (opts.environment) q = q.where('environment', '=', opts.environment);
  if (opts.status) q = q.where('status', '=', opts.status);
  if (opts.current) q = q.where('current', '=', 1);
  return q.orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
}

export async function latestDeployment(db: Db, orgId: string, projectId: string, opts: { environment?: string; status?: string; current?: boolean } = {}): Promise<DeploymentRow | undefined> {
  const rows = await listDeployments(db, orgId, projectId, { ...opts, limit: 1 });
  return rows[0];
}

// ---------------------------------------------------------------- clone credential, routing attempts

export async function findCloneCredential(db: Db, orgId: string, projectId: string): Promise<CloneCredentialRow | undefined> {
  return db.selectFrom('cloneCredentials').selectAll().where('orgId', '=', orgId).where('projectId', '=', projectId).executeTakeFirst();
}

export async function upsertCloneCredential(db: Db, row: CloneCredentialRow): Promise<void> {
  await db
    .insertInto('cloneCredentials')
    .values(row)
    .onConflict((oc) => oc.column('projectId').doUpdateSet({ username: row.username, token: row.token, updatedAt: row.updatedAt }))
    .execute();
}

export async function insertRoutingAttempt(
  db: Db,
  row: { id: string; orgId: string; projectId: string; domain: string; status: string; error: string | null; createdAt: string },
): Promise<void> {
  await db.insertInto('routingAttempts').values(row).execute();
}

// ---------------------------------------------------------------- counts for the deletion preview

export async function namesUnder(
  db: Db,
  table: 'domains' | 'environments' | 'services' | 'routeRules',
  orgId: string,
  projectId: string,
): Promise<string[]> {
  const col = table === 'domains' ? 'domain' : table === 'environments' || table === 'services' ? 'name' : 'id';
  const rows = await db
    .selectFrom(table)
    .select(`${col} as n` as 'id')
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy(col as 'id')
    .execute();
  return rows.map((r) => (r as unknown as { n: string }).n);
}

export async function envVarNames(db: Db, orgId: string, projectId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('envVars')
    .select(['environment', 'key'])
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy('environment')
    .orderBy('key')
    .execute();
  return rows.map((r) => `${r.environment}:${r.key}`);
}

// ---------------------------------------------------------------- the build-and-run area's reads

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
  return db.selectFrom('projects').select(['id', 'orgId', 'slug', 'status', 'sleepMode', 'location', 'staticSpa', 'staticCleanUrls', 'httpsRedirect', 'hsts']).where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
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
  return db.selectFrom('projects').select(['resources', 'port']).where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
}

/** What the runtime state of a project's app is told from: slug (free domain), port, status, sleep mode. */
export async function projectRuntimeFacts(db: Db, orgId: string, id: string): Promise<Pick<ProjectRow, 'id' | 'slug' | 'port' | 'status' | 'sleepMode' | 'resources'> | undefined> {
  return db.selectFrom('projects').select(['id', 'slug', 'port', 'status', 'sleepMode', 'resources']).where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
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
  return db.selectFrom('projects').select(['id', 'name', 'slug']).where('orgId', '=', orgId).orderBy('name').orderBy('id').execute();
}
