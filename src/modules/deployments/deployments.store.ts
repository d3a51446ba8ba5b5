import type { Insertable, Selectable, Updateable } from 'kysely';
import { isUniqueViolation, transaction, type Db } from '../../db/client.js';
import type { DeploymentBuildsTable, DeploymentsTable, DeploymentTokensTable, RuntimeStatesTable } from './deployments.tables.js';
import { inOrg, inProject } from '../../db/scope.js';

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
  return db.selectFrom('deployments').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export async function findBuild(db: Db, orgId: string, deploymentId: string): Promise<DeploymentBuildRow | undefined> {
  return db.selectFrom('deploymentBuilds').selectAll().where(inOrg(orgId)).where('deploymentId', '=', deploymentId).executeTakeFirst();
}

export async function updateBuild(db: Db, orgId: string, deploymentId: string, patch: Updateable<DeploymentBuildsTable>): Promise<void> {
  await db.updateTable('deploymentBuilds').set(patch).where(inOrg(orgId)).where('deploymentId', '=', deploymentId).execute();
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
    .where(inOrg(orgId))
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Which of a project's deployments a history read keeps: one environment, one status, the current ones. */
export interface DeploymentFilter {
  environment?: string;
  status?: string;
  current?: boolean;
}

/** The project's deployments, newest first (GET /api/projects/:id/deployments). */
export async function listProjectDeployments(db: Db, orgId: string, projectId: string, opts: DeploymentFilter & { limit: number }): Promise<DeploymentRow[]> {
  let q = db.selectFrom('deployments').selectAll().where(inProject(orgId, projectId));
  if (opts.environment) q = q.where('environment', '=', opts.environment);
  if (opts.status) q = q.where('status', '=', opts.status);
  if (opts.current) q = q.where('current', '=', 1);
  return q.orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
}

/** The project's newest deployment, any environment and status unless `opts` narrows it (deployment-session, the project's info). */
export async function latestDeployment(db: Db, orgId: string, projectId: string, opts: DeploymentFilter = {}): Promise<DeploymentRow | undefined> {
  return (await listProjectDeployments(db, orgId, projectId, { ...opts, limit: 1 }))[0];
}

/** Whether a push of `commit` already made a deployment of the project's `environment` (a preview's deployment of the same commit does not count for production). */
export async function pushDeploymentExists(db: Db, orgId: string, projectId: string, commit: string, environment = 'production'): Promise<boolean> {
  const row = await db.selectFrom('deployments').select('id').where(inProject(orgId, projectId)).where('environment', '=', environment).where('trigger', '=', 'push').where('commit', '=', commit).executeTakeFirst();
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
    .where(inProject(orgId, projectId))
    .where('environment', '=', environment)
    .where('status', 'in', [...IN_FLIGHT])
    .execute();
}

/** Ids of a project's in-flight deployments (their builds are stopped when the project goes). */
export async function inFlightIdsOfProject(db: Db, projectId: string): Promise<string[]> {
  const rows = await db.selectFrom('deployments').select('id').where('projectId', '=', projectId).where('status', 'in', [...IN_FLIGHT]).execute();
  return rows.map((r) => r.id);
}

/** A deployment with what its build recorded about the release (folder, start command, static site, plan variables). */
export type ReleaseRow = DeploymentRow & { releaseDir: string | null; startCommand: string | null; staticSite: string | null; planVariables: string | null; image: string | null; imageCommand: number | null };

function releases(db: Db, orgId: string) {
  return db
    .selectFrom('deployments')
    .innerJoin('deploymentBuilds', 'deploymentBuilds.deploymentId', 'deployments.id')
    .selectAll('deployments')
    .select(['deploymentBuilds.releaseDir', 'deploymentBuilds.startCommand', 'deploymentBuilds.staticSite', 'deploymentBuilds.planVariables', 'deploymentBuilds.image', 'deploymentBuilds.imageCommand'])
    .where(inOrg(orgId, 'deployments'));
}

/** The release that serves a project environment: the deployment its `current` pointer names. */
export async function currentRelease(db: Db, orgId: string, projectId: string, environment = 'production'): Promise<ReleaseRow | undefined> {
  return releases(db, orgId)
    .where('deployments.projectId', '=', projectId)
    .where('deployments.environment', '=', environment)
    .where('deployments.current', '=', 1)
    .where('deployments.status', '=', 'ready')
    .executeTakeFirst();
}

/** One deployment of the org with its release (a rollback's target). */
export async function releaseOf(db: Db, orgId: string, id: string): Promise<ReleaseRow | undefined> {
  return releases(db, orgId).where('deployments.id', '=', id).executeTakeFirst();
}

/** The ready deployment of the environment that finished just before `than` (a rollback's default target). */
export async function releaseBefore(db: Db, orgId: string, projectId: string, environment: string, than: { id: string; finishedAt: string | null }): Promise<ReleaseRow | undefined> {
  if (!than.finishedAt) return undefined;
  const at = than.finishedAt;
  return releases(db, orgId)
    .where('deployments.projectId', '=', projectId)
    .where('deployments.environment', '=', environment)
    .where('deployments.status', '=', 'ready')
    .where((eb) => eb.or([eb('deployments.finishedAt', '<', at), eb.and([eb('deployments.finishedAt', '=', at), eb('deployments.id', '<', than.id)])]))
    .orderBy('deployments.finishedAt', 'desc')
    .orderBy('deployments.id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The deployments of one environment with what their builds left (a preview's removal). */
export async function environmentDeployments(db: Db, orgId: string, projectId: string, environment: string): Promise<ReleaseRow[]> {
  return releases(db, orgId).where('deployments.projectId', '=', projectId).where('deployments.environment', '=', environment).execute();
}

/**
 * Release folders and images that deployments of other environments than `environment` also run
 * (a promoted production deployment runs its preview deployment's build): never removed with it.
 */
export async function releasesUsedOutside(db: Db, orgId: string, projectId: string, environment: string): Promise<{ dirs: Set<string>; images: Set<string> }> {
  const rows = await releases(db, orgId).where('deployments.projectId', '=', projectId).where('deployments.environment', '!=', environment).execute();
  return { dirs: new Set(rows.flatMap((r) => (r.releaseDir ? [r.releaseDir] : []))), images: new Set(rows.flatMap((r) => (r.image ? [r.image] : []))) };
}

/** Removes one environment's deployments (their build rows cascade), inside the removal's transaction. */
export async function deleteEnvironmentDeployments(db: Db, orgId: string, projectId: string, environment: string): Promise<void> {
  await db.deleteFrom('deployments').where(inProject(orgId, projectId)).where('environment', '=', environment).execute();
}

/** Thrown inside a transaction to undo what it wrote (the target was no longer ready). */
class Undo extends Error {}

/** Points the environment at `id` (clearing the others first: the partial unique index allows one). False: `id` is not ready. */
async function pointAt(tx: Db, orgId: string, projectId: string, environment: string, id: string): Promise<boolean> {
  await tx
    .updateTable('deployments')
    .set({ current: 0 })
    .where(inProject(orgId, projectId))
    .where('environment', '=', environment)
    .where('current', '=', 1)
    .where('id', '!=', id)
    .execute();
  const res = await tx.updateTable('deployments').set({ current: 1 }).where(inOrg(orgId)).where('id', '=', id).where('projectId', '=', projectId).where('environment', '=', environment).where('status', '=', 'ready').executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * A finished deployment becomes ready and its environment's current release in one transaction,
 * only if it is still in one of `from` (a cancel or a newer deployment wins otherwise). A concurrent
 * pointer move (another deploy, a rollback) meets the unique index: the transaction runs again, and
 * the later one is current. Answers whether it moved.
 */
export async function markReady(db: Db, d: { orgId: string; id: string; projectId: string; environment: string }, from: readonly string[], patch: Updateable<DeploymentsTable> = {}): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await transaction(db, async (tx) => {
        if (!(await transition(tx, d.orgId, d.id, from, { ...patch, status: 'ready', finishedAt: patch.finishedAt ?? new Date().toISOString() }))) return false;
        if (!(await pointAt(tx, d.orgId, d.projectId, d.environment, d.id))) throw new Undo();
        return true;
      });
    } catch (e) {
      if (e instanceof Undo) return false;
      if (!isUniqueViolation(e) || attempt >= 4 || db.isTransaction) throw e;
    }
  }
}

/**
 * A rollback's pointer switch: `to` (ready) becomes current only if `from` still is (null: none
 * is), so a deploy that became ready meanwhile is not overwritten; `also` runs in the same
 * transaction (the audit entry). Answers 'switched', 'moved' (the current release changed
 * meanwhile) or 'not_ready' (`to` is no longer a ready deployment of the environment).
 */
export async function switchCurrent(
  db: Db,
  at: { orgId: string; projectId: string; environment: string },
  fromId: string | null,
  toId: string,
  also: (tx: Db) => Promise<void>,
): Promise<'switched' | 'moved' | 'not_ready'> {
  const { orgId, projectId, environment } = at;
  try {
    return await transaction(db, async (tx) => {
      const env = tx.updateTable('deployments').where(inProject(orgId, projectId)).where('environment', '=', environment);
      if (fromId) {
        const cleared = await env.set({ current: 0 }).where('id', '=', fromId).where('current', '=', 1).executeTakeFirst();
        if (Number(cleared.numUpdatedRows) === 0) return 'moved';
      }
      const set = await env.set({ current: 1 }).where('id', '=', toId).where('status', '=', 'ready').executeTakeFirst();
      if (Number(set.numUpdatedRows) === 0) throw new Undo();
      await also(tx);
      return 'switched';
    });
  } catch (e) {
    if (e instanceof Undo) return 'not_ready';
    // Another release became current between our read and the write (the unique index refused a second one).
    if (isUniqueViolation(e)) return 'moved';
    throw e;
  }
}

/**
 * A promotion's write (contract section 16): the new production deployment `row` (ready) with its
 * build row, made current only if `fromId` still is (null: none is), with `also` (the audit entry) in
 * the same transaction. Answers 'switched', or 'moved' when production's current release changed
 * meanwhile (nothing is written then).
 */
export async function insertPromotion(
  db: Db,
  fromId: string | null,
  row: Insertable<DeploymentsTable>,
  build: Insertable<DeploymentBuildsTable>,
  also: (tx: Db) => Promise<void>,
): Promise<'switched' | 'moved'> {
  try {
    return await transaction(db, async (tx) => {
      await tx.insertInto('deployments').values({ ...row, current: 0 }).execute();
      await tx.insertInto('deploymentBuilds').values(build).execute();
      const env = tx.updateTable('deployments').where(inProject(row.orgId, row.projectId)).where('environment', '=', row.environment);
      if (fromId) {
        const cleared = await env.set({ current: 0 }).where('id', '=', fromId).where('current', '=', 1).executeTakeFirst();
        if (Number(cleared.numUpdatedRows) === 0) throw new Undo();
      }
      await env.set({ current: 1 }).where('id', '=', row.id).execute();
      await also(tx);
      return 'switched' as const;
    });
  } catch (e) {
    if (e instanceof Undo || isUniqueViolation(e)) return 'moved';
    throw e;
  }
}

/** Release folders of a project other than `keep` (pruned after a successful deploy). */
export async function oldReleaseDirs(db: Db, orgId: string, projectId: string, keep: string[]): Promise<{ deploymentId: string; releaseDir: string; image: string | null }[]> {
  const rows = await db
    .selectFrom('deploymentBuilds')
    .select(['deploymentId', 'releaseDir', 'image'])
    .where(inProject(orgId, projectId))
    .where('releaseDir', 'is not', null)
    .execute();
  return rows.filter((r) => !keep.includes(r.deploymentId)).map((r) => ({ deploymentId: r.deploymentId, releaseDir: r.releaseDir!, image: r.image }));
}

/** The release folders and images of `ids` (the deployments a prune keeps). */
export async function keptReleases(db: Db, orgId: string, projectId: string, ids: string[]): Promise<{ releaseDir: string | null; image: string | null }[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('deploymentBuilds').select(['releaseDir', 'image']).where(inProject(orgId, projectId)).where('deploymentId', 'in', ids).execute();
}

/** The releases a project keeps: the newest `keep` ready deployments of each environment, and each environment's current one. */
export async function keptReleaseIds(db: Db, orgId: string, projectId: string, keep: number): Promise<string[]> {
  const rows = await db
    .selectFrom('deployments')
    .select(['id', 'environment', 'current'])
    .where(inProject(orgId, projectId))
    .where('status', '=', 'ready')
    .orderBy('finishedAt', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const seen = new Map<string, number>();
  const kept: string[] = [];
  for (const r of rows) {
    const n = seen.get(r.environment) ?? 0;
    seen.set(r.environment, n + 1);
    if (n < keep || Number(r.current) === 1) kept.push(r.id);
  }
  return kept;
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
    const row = await db.selectFrom('sandboxIdentities').select('uid').where(inProject(orgId, projectId)).executeTakeFirst();
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
/** One project's recorded runtime state (what the instance running its app last saved). */
export async function runtimeStateOf(db: Db, orgId: string, projectId: string): Promise<RuntimeStateRow | undefined> {
  return db.selectFrom('runtimeStates').selectAll().where(inProject(orgId, projectId)).executeTakeFirst();
}

export async function allRuntimeStates(db: Db): Promise<RuntimeStateRow[]> {
  return db.selectFrom('runtimeStates').selectAll().execute();
}

// ---------------------------------------------------------------- what the projects area asks

/**
 * The ids of projects with a current production release, as a subquery (the projects area's
 * `projectsToRestore` keeps those of them that should run).
 */
export function readyProductionProjectIds(db: Db) {
  return db.selectFrom('deployments').select('projectId').where('current', '=', 1).where('status', '=', 'ready').where('environment', '=', 'production');
}

/** Ids of a project's deployments (the project's deletion preview names them). */
export async function deploymentIdsOfProject(db: Db, orgId: string, projectId: string): Promise<string[]> {
  const rows = await db.selectFrom('deployments').select('id').where(inProject(orgId, projectId)).orderBy('id').execute();
  return rows.map((r) => r.id);
}

/** Removes a project's deployments (inside the project's deletion transaction; their builds cascade). */
export async function deleteProjectDeployments(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.deleteFrom('deployments').where(inProject(orgId, projectId)).execute();
}
