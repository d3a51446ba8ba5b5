import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { AppError, conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import type { LogLine } from '../../runtime/logs.js';
import { projectQueries, type ProjectRow } from '../projects/index.js';
import { insertAuditEvent } from '../audit/index.js';
import { attachUploadToProject, checkUploadSession, uploadSourceDir } from '../uploads/index.js';
import { deploymentRecord, type DeploymentRecord } from './deployments.presenters.js';
import * as store from './deployments.store.js';
import type { DeploymentRow } from './deployments.store.js';
import { BUILD_JOB, hostOf } from './host.js';
import { deploymentSettled } from './settled.js';

/**
 * Deployments: create (queued for the build job, superseding the in-flight ones of the same
 * environment), read, cancel, and the build log of one. The build itself is build-job.ts; stream
 * tokens stream-tokens.service.ts.
 */

export { deploymentRecord, type DeploymentRecord };

// ---------------------------------------------------------------- create / read / cancel

export interface CreateInput {
  projectId: string;
  environment?: string;
  ref?: string;
  sessionId?: string;
  /** The commit a push delivered (git-provider area); the build records what it actually checked out. */
  commit?: string;
  /** Build without the project's build cache (neither restored nor saved). */
  noCache?: boolean;
}

type Trigger = 'manual' | 'push' | 'upload' | 'api';

/** Creates a deployment of `input.projectId` (a push deploys as the system; the git-provider area calls this). */
export async function createDeployment(ctx: AppContext, actor: Actor, input: CreateInput, trigger?: Trigger): Promise<DeploymentRecord> {
  const project = await projectQueries.findProject(ctx.db, actor.orgId, input.projectId);
  if (!project) throw new AppError('NOT_FOUND', 'project not found', { field: 'projectId' });
  return deployProject(ctx, actor, project, input, trigger);
}

/** `POST /api/deployments`: `project` is the row the route resolved and authorized (its `resource`). */
export async function deployProject(ctx: AppContext, actor: Actor, project: ProjectRow, input: Omit<CreateInput, 'projectId'>, trigger?: Trigger): Promise<DeploymentRecord> {
  if (project.status !== 'enabled') throw conflict('the project is disabled: enable it before deploying', 'projectId');
  if (project.location !== 'local') throw conflict('the project lives on the cloud instance: deploy it there', 'projectId');
  const environment = input.environment ?? 'production';
  const env = await projectQueries.findEnvironment(ctx.db, actor.orgId, project.id, environment);
  if (!env) throw invalid('environment', `the project has no environment named ${environment}`);
  if (input.sessionId) {
    // A fresh upload becomes the project's source first (the session is consumed). One this project
    // already consumed and still builds from (ensure was given it first) is the source already.
    const { attachedTo } = await checkUploadSession(ctx, actor.orgId, input.sessionId);
    if (attachedTo && attachedTo !== project.id) throw conflict('this upload is already the source of another project: open a new session', 'sessionId');
    if (!attachedTo) await attachUploadToProject(ctx, actor.userId, actor.orgId, project.id, input.sessionId);
  }
  // The attach changed the row (source, config gaps filled from the scan): read it again then.
  const fresh = input.sessionId ? ((await projectQueries.findProject(ctx.db, actor.orgId, project.id)) ?? project) : project;
  const sourceType = fresh.sourceType;
  if (sourceType === 'none') throw invalid('projectId', 'the project has no source: link a repository, import a local folder or upload one first');
  if (sourceType === 'upload' && !(await uploadSourceDir(ctx, actor.orgId, fresh.id))) throw invalid('projectId', 'the project has no uploaded source yet: upload the folder first');
  if (sourceType === 'git' && (!fresh.gitOwner || !fresh.gitRepo)) throw invalid('projectId', 'the project has no linked repository');
  // A preview environment builds its own branch by default; production the project's deploy branch.
  const ref = input.ref ?? (sourceType === 'git' ? (env.type === 'preview' && env.branch ? env.branch : fresh.gitBranch) : null) ?? null;
  const t = trigger ?? (input.sessionId ? 'upload' : actor.via === 'session' ? 'manual' : 'api');
  const id = newId('dpl');
  const at = nowIso();
  const superseded: string[] = [];
  // The answer is the row as created (`queued`), read before the commit: a worker may claim it at once.
  const created = await transaction(ctx.db, async (tx) => {
    for (const d of await store.inFlightDeployments(tx, actor.orgId, fresh.id, environment)) {
      if (await store.transition(tx, actor.orgId, d.id, store.IN_FLIGHT, { status: 'superseded', finishedAt: at, error: `superseded by ${id}` })) superseded.push(d.id);
    }
    await store.insertDeployment(
      tx,
      { id, orgId: actor.orgId, projectId: fresh.id, environment, status: 'queued', trigger: t, commit: input.commit ?? null, ref, createdAt: at, startedAt: null, finishedAt: null, error: null, updatedAt: at },
      { deploymentId: id, orgId: actor.orgId, projectId: fresh.id, sourceType, uploadDir: null, releaseDir: null, startCommand: null, createdBy: actor.userId },
    );
    await ctx.jobs.enqueue(BUILD_JOB, { deploymentId: id, orgId: actor.orgId, ...(input.noCache ? { noCache: true } : {}) }, { db: tx, orgId: actor.orgId, maxAttempts: 1 });
    await auditDeployment(tx, actor, t, 'deployment.create', id, { projectId: fresh.id, environment, trigger: t, ref, commit: input.commit ?? null, superseded, ...(input.noCache ? { noCache: true } : {}) });
    return (await store.findDeployment(tx, actor.orgId, id))!;
  });
  const rt = hostOf(ctx);
  for (const s of superseded) {
    rt.building.get(s)?.abort();
    rt.logs.build(fresh.id, s).append({ ts: nowIso(), stream: 'stderr', line: `[berth] superseded by ${id}` });
    deploymentSettled(ctx, actor.orgId, s);
  }
  return deploymentRecord(created);
}

/** The project's deployments, newest first (50 unless `q.limit` says). */
export async function listProjectDeployments(ctx: AppContext, project: ProjectRow, q: { limit?: number; environment?: string; status?: string }): Promise<DeploymentRecord[]> {
  const rows = await store.listProjectDeployments(ctx.db, project.orgId, project.id, { limit: q.limit ?? 50, environment: q.environment, status: q.status });
  return rows.map(deploymentRecord);
}

/** Cancels a queued or running deployment (its build is killed); 409 once it is done. */
export async function cancelDeployment(ctx: AppContext, actor: Actor, d: DeploymentRow): Promise<DeploymentRecord> {
  if (!(store.IN_FLIGHT as readonly string[]).includes(d.status)) throw conflict(`the deployment is already ${d.status}`);
  const moved = await transaction(ctx.db, async (tx) => {
    const before = await store.findDeployment(tx, d.orgId, d.id);
    if (!(await store.transition(tx, d.orgId, d.id, store.IN_FLIGHT, { status: 'cancelled', finishedAt: nowIso(), error: 'cancelled' }))) return false;
    await auditDeployment(tx, actor, null, 'deployment.cancel', d.id, { projectId: d.projectId, environment: d.environment, from: before?.status ?? d.status });
    return true;
  });
  if (moved) {
    const rt = hostOf(ctx);
    rt.building.get(d.id)?.abort();
    rt.logs.build(d.projectId, d.id).append({ ts: nowIso(), stream: 'stderr', line: '[berth] cancelled' });
    deploymentSettled(ctx, d.orgId, d.id);
  }
  const now = await store.findDeployment(ctx.db, d.orgId, d.id);
  return deploymentRecord(now ?? d);
}

/**
 * An audit entry about a deployment, in the transaction of the write it describes. A push deploys
 * as the git integration, not as a member: no actor then (the trigger says who).
 */
export async function auditDeployment(tx: Db, actor: Actor, trigger: string | null, action: string, deploymentId: string, details: Record<string, unknown>): Promise<void> {
  await insertAuditEvent(tx, { orgId: actor.orgId, actorId: trigger === 'push' ? null : actor.userId, action, resourceType: 'deployment', resourceId: deploymentId, details });
}

export function readBuildLogs(ctx: AppContext, d: DeploymentRow, opts: { limit?: number; since?: string }): LogLine[] {
  return hostOf(ctx).logs.build(d.projectId, d.id).read({ limit: opts.limit ?? 1000, since: opts.since });
}

export function isTerminal(status: string): boolean {
  return (store.TERMINAL as readonly string[]).includes(status);
}
