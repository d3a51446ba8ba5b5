import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import type { DeploymentBuildsTable, DeploymentsTable, DeploymentTokensTable, RuntimeStatesTable } from './deployments.tables.js';

export type DeploymentRow = Selectable<DeploymentsTable>;
export type DeploymentBuildRow = Selectable<DeploymentBuildsTable>;
export type DeploymentTokenRow = Selectable<DeploymentTokensTable>;
export type RuntimeStateRow = Selectable<RuntimeStatesTable>;

export const IN_FLIGHT = ['queued', 'building', 'deploying'] as const;
export const TERMINAL = ['ready', 'failed', 'cancelled', 'superseded'] as const;

export async function insertDeployment(db: Db, row: Insertable<DeploymentsTable>, build: Insertable<DeploymentBuildsTable>): Promise<void> {
  await db.insertInto('deployments').values(row).execute();
  await db.insertInto('deploymentBuilds').values(build).execute();
}

export async function findDeployment(db: Db, orgId: string, id: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export async function findBuild(db: Db, orgId: string, deploymentId: string): Promise<DeploymentBuildRow | undefined> {
  return db.selectFrom('deploymentBuilds').selectAll().where('orgId', '=', orgId).where('deploymentId', '=', deploymentId).executeTakeFirst();
}

export async function updateBuild(db: Db, orgId: string, deploymentId: string, patch: Updateable<DeploymentBuildsTable>): Promise<void> {
  await db.updateTable('deploymentBuilds').set(patch).where('orgId', '=', orgId).where('deploymentId', '=', deploymentId).execute();
}

/**
 * Moves a deployment to another status only if it is still in one of `from` (a cancel and a
 * finishing build cannot both win). Answers whether it moved.
 */
export async function transition(
  db: Db,
  orgId: string,
  id: string,
  from: readonly string[],
  patch: Updateable<DeploymentsTable> & { status: string },
): Promise<boolean> {
  const res = await db
    .updateTable('deployments')
    .set({ ...patch, updatedAt: new Date().toISOString() })
    .where('orgId', '=', orgId)
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The project's newest deployment, any environment and status (deployment-session). */
export async function latestDeployment(db: Db, orgId: string, projectId: string): Promise<DeploymentRow | undefined> {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Whether a push of `commit` already made a deployment of the project. */
export async function pushDeploymentExists(db: Db, orgId: string, projectId: string, commit: string): Promise<boolean> {
  const row = await db.selectFrom('deployments').select('id').where('orgId', '=', orgId).where('projectId', '=', projectId).where('trigger', '=', 'push').where('commit', '=', commit).executeTakeFirst();
  return !!row;
}

/**
 * Whether any org of this instance holds a deployment of this id (the cloud area leaves a deployment
 * of this instance to its own routes). By id alone by design.
 */
export async function deploymentExistsAnyOrg(db: Db, id: string): Promise<boolean> {
  return !!(await db.selectFrom('deployments').select('id').where('id', '=', id).executeTakeFirst());
}

/** Older in-flight deployments of the same project environment (to be superseded by a newer one). */
export async function inFlightDeployments(db: Db, orgId: string, projectId: string, environment: string): Promise<DeploymentRow[]> {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('environment', '=', environment)
    .where('status', 'in', [...IN_FLIGHT])
    .execute();
}

/** Ids of a project's in-flight deployments (their builds are stopped when the project goes). */
export async function inFlightIdsOfProject(db: Db, projectId: string): Promise<string[]> {
  const rows = await db.selectFrom('deployments').select('id').where('projectId', '=', projectId).where('status', 'in', [...IN_FLIGHT]).execute();
  return rows.map((r) => r.id);
}

/** The release that serves a project environment: its newest ready deployment. */
export async function currentRelease(db: Db, orgId: string, projectId: string, environment = 'production'): Promise<(DeploymentRow & { releaseDir: string | null; startCommand: string | null; staticSite: string | null; planVariables: string | null }) | undefined> {
  return db
    .selectFrom('deployments')
    .innerJoin('deploymentBuilds', 'deploymentBuilds.deploymentId', 'deployments.id')
    .selectAll('deployments')
    .select(['deploymentBuilds.releaseDir', 'deploymentBuilds.startCommand', 'deploymentBuilds.staticSite', 'deploymentBuilds.planVariables'])
    .where('deployments.orgId', '=', orgId)
    .where('deployments.projectId', '=', projectId)
    .where('deployments.environment', '=', environment)
    .where('deployments.status', '=', 'ready')
    .orderBy('deployments.finishedAt', 'desc')
    .orderBy('deployments.id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Release folders of a project other than `keep` (pruned after a successful deploy). */
export async function oldReleaseDirs(db: Db, orgId: string, projectId: string, keep: string[]): Promise<{ deploymentId: string; releaseDir: string }[]> {
  const rows = await db
    .selectFrom('deploymentBuilds')
    .select(['deploymentId', 'releaseDir'])
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('releaseDir', 'is not', null)
    .execute();
  return rows.filter((r) => !keep.includes(r.deploymentId)).map((r) => ({ deploymentId: r.deploymentId, releaseDir: r.releaseDir! }));
}

export async function readyDeploymentIds(db: Db, orgId: string, projectId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('deployments')
    .select('id')
    .where('orgId', '=', orgId)
    .where('projectId', '=', projectId)
    .where('status', '=', 'ready')
    .orderBy('finishedAt', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Deployments left in flight by a previous process (it died mid-build): system sweep at start-up,
 * across orgs by design (each row is then handled within its own org).
 */
export async function staleInFlight(db: Db): Promise<DeploymentRow[]> {
  return db.selectFrom('deployments').selectAll().where('status', 'in', ['building', 'deploying']).execute();
}

// ---------------------------------------------------------------- tokens

export async function insertToken(db: Db, row: Insertable<DeploymentTokensTable>): Promise<void> {
  await db.insertInto('deploymentTokens').values(row).execute();
}

/** A token by its hash; the caller checks kind, project, deployment and expiry. Tokens are global by nature. */
export async function findTokenByHash(db: Db, tokenHash: string): Promise<DeploymentTokenRow | undefined> {
  return db.selectFrom('deploymentTokens').selectAll().where('tokenHash', '=', tokenHash).executeTakeFirst();
}

export async function pruneTokens(db: Db, before: string): Promise<void> {
  await db.deleteFrom('deploymentTokens').where('expiresAt', '<', before).execute();
}

// ---------------------------------------------------------------- sandbox identities

/**
 * The project's uid, allocated on first use: one above the highest ever handed out (at least `base`).
 * Two instances racing for the same uid meet the unique index; the loser tries the next one.
 */
export async function sandboxUid(db: Db, orgId: string, projectId: string, base: number, at: string): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const row = await db.selectFrom('sandboxIdentities').select('uid').where('orgId', '=', orgId).where('projectId', '=', projectId).executeTakeFirst();
    if (row) return Number(row.uid);
    const max = await db.selectFrom('sandboxIdentities').select((eb) => eb.fn.max('uid').as('m')).executeTakeFirst();
    const uid = Math.max(base, Number(max?.m ?? 0) + 1) + attempt;
    try {
      await db.insertInto('sandboxIdentities').values({ projectId, orgId, uid, createdAt: at }).execute();
      return uid;
    } catch {
      /* taken by a racing instance (uid or project): look again */
    }
  }
  throw new Error('could not allocate a uid for the project');
}

// ---------------------------------------------------------------- runtime state

export async function saveRuntimeState(db: Db, row: RuntimeStateRow): Promise<void> {
  await db
    .insertInto('runtimeStates')
    .values(row)
    .onConflict((oc) =>
      oc.column('projectId').doUpdateSet({ deploymentId: row.deploymentId, state: row.state, port: row.port, pid: row.pid, startedAt: row.startedAt, updatedAt: row.updatedAt }),
    )
    .execute();
}

/** Every persisted runtime state (start-up: bring back what ran). System-wide by design. */
export async function allRuntimeStates(db: Db): Promise<RuntimeStateRow[]> {
  return db.selectFrom('runtimeStates').selectAll().execute();
}

// ---------------------------------------------------------------- what the projects area asks

/**
 * The ids of projects with a ready production release, as a subquery (the projects area's
 * `projectsToRestore` keeps those of them that should run).
 */
export function readyProductionProjectIds(db: Db) {
  return db.selectFrom('deployments').select('projectId').where('status', '=', 'ready').where('environment', '=', 'production');
}

/** Ids of a project's deployments (the project's deletion preview names them). */
export async function deploymentIdsOfProject(db: Db, orgId: string, projectId: string): Promise<string[]> {
  const rows = await db.selectFrom('deployments').select('id').where('orgId', '=', orgId).where('projectId', '=', projectId).orderBy('id').execute();
  return rows.map((r) => r.id);
}

/** Removes a project's deployments (inside the project's deletion transaction; their builds cascade). */
export async function deleteProjectDeployments(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('deployments').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
}
