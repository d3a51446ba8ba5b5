import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import { authorize } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError, conflict, invalid, notFound } from '../../lib/errors.js';
import { decryptSecret, safeEqual, sha256Hex } from '../../lib/crypto.js';
import { isoPlus, newId, newSecretToken, nowIso } from '../../lib/ids.js';
import { BuildError, pathWithBin, runBuild, startSteps, type BuildSource } from '../../runtime/build.js';
import type { ReleaseSpec } from '../../runtime/supervisor.js';
import type { LogLine } from '../../runtime/logs.js';
import { redactText } from '../../runtime/redact.js';
import { resolveEnvForRuntime } from '../projects/env.service.js';
import { attachUploadToProject, checkUploadSession, uploadSourceDir } from '../uploads/uploads.service.js';
import { findCloneCredential, findEnvironment, findProject, projectRef, type ProjectRow } from '../projects/projects.store.js';
import * as store from './deployments.store.js';
import type { DeploymentRow } from './deployments.store.js';
import { getRuntime } from './runtime.js';

export const BUILD_JOB = 'deployment.build';

/** Lifetime of a deployment-session / build-access token (read-only, one deployment). */
export const BUILD_TOKEN_TTL_MS = 15 * 60 * 1000;
/** Lifetime of a server-log stream token (contract section 5: 60 s). */
export const SERVER_LOG_TOKEN_TTL_MS = 60 * 1000;

// The deployment record (contract section 6) is the projects area's: one shape for both lists.
import { deploymentRecord, type DeploymentRecord } from '../projects/projects.service.js';
export { deploymentRecord, type DeploymentRecord };

function buildDir(ctx: AppContext, projectId: string, deploymentId: string): string {
  return path.join(ctx.config.dataDir, 'builds', path.basename(projectId), path.basename(deploymentId));
}

// ---------------------------------------------------------------- create / read / cancel

export interface CreateInput {
  projectId: string;
  environment?: string;
  ref?: string;
  sessionId?: string;
  /** The commit a push delivered (git-provider area); the build records what it actually checked out. */
  commit?: string;
}

export async function createDeployment(ctx: AppContext, actor: Actor, input: CreateInput, trigger?: 'manual' | 'push' | 'upload' | 'api'): Promise<DeploymentRecord> {
  const project = await findProject(ctx.db, actor.orgId, input.projectId);
  if (!project) throw new AppError('NOT_FOUND', 'project not found', { field: 'projectId' });
  authorize(actor, 'project:deployment:write', projectRef(project), 'project');
  if (project.status !== 'enabled') throw conflict('the project is disabled: enable it before deploying', 'projectId');
  if (project.location !== 'local') throw conflict('the project lives on the cloud instance: deploy it there', 'projectId');
  const environment = input.environment ?? 'production';
  if (!(await findEnvironment(ctx.db, actor.orgId, project.id, environment))) throw invalid('environment', `the project has no environment named ${environment}`);
  if (input.sessionId) {
    // A fresh upload becomes the project's source first (the session is consumed).
    await checkUploadSession(ctx.db, actor.orgId, input.sessionId);
    await attachUploadToProject(ctx, actor.userId, actor.orgId, project.id, input.sessionId);
  }
  const fresh = (await findProject(ctx.db, actor.orgId, project.id)) ?? project;
  const sourceType = fresh.sourceType;
  if (sourceType === 'none') throw invalid('projectId', 'the project has no source: link a repository, import a local folder or upload one first');
  if (sourceType === 'upload' && !(await uploadSourceDir(ctx, actor.orgId, fresh.id))) throw invalid('projectId', 'the project has no uploaded source yet: upload the folder first');
  if (sourceType === 'git' && (!fresh.gitOwner || !fresh.gitRepo)) throw invalid('projectId', 'the project has no linked repository');
  const ref = input.ref ?? (sourceType === 'git' ? fresh.gitBranch : null) ?? null;
  const t = trigger ?? (input.sessionId ? 'upload' : actor.via === 'session' ? 'manual' : 'api');
  const id = newId('dpl');
  const at = nowIso();
  const superseded: string[] = [];
  await transaction(ctx.db, async (tx) => {
    for (const d of await store.inFlightDeployments(tx, actor.orgId, fresh.id, environment)) {
      if (await store.transition(tx, actor.orgId, d.id, store.IN_FLIGHT, { status: 'superseded', finishedAt: at, error: `superseded by ${id}` })) superseded.push(d.id);
    }
    await store.insertDeployment(
      tx,
      { id, orgId: actor.orgId, projectId: fresh.id, environment, status: 'queued', trigger: t, commit: input.commit ?? null, ref, createdAt: at, startedAt: null, finishedAt: null, error: null, updatedAt: at },
      { deploymentId: id, orgId: actor.orgId, projectId: fresh.id, sourceType, uploadDir: null, releaseDir: null, startCommand: null, createdBy: actor.userId },
    );
    await ctx.jobs.enqueue(BUILD_JOB, { deploymentId: id, orgId: actor.orgId }, { db: tx, orgId: actor.orgId, maxAttempts: 1 });
  });
  const rt = getRuntime(ctx);
  for (const s of superseded) {
    rt.building.get(s)?.abort();
    rt.logs.build(fresh.id, s).append({ ts: nowIso(), stream: 'stderr', line: `[berth] superseded by ${id}` });
  }
  return deploymentRecord((await store.findDeployment(ctx.db, actor.orgId, id))!);
}

export async function getDeployment(ctx: AppContext, orgId: string, id: string): Promise<DeploymentRecord> {
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d) throw notFound('deployment');
  return deploymentRecord(d);
}

export async function cancelDeployment(ctx: AppContext, orgId: string, id: string): Promise<DeploymentRecord> {
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d) throw notFound('deployment');
  if (!(store.IN_FLIGHT as readonly string[]).includes(d.status)) throw conflict(`the deployment is already ${d.status}`);
  const moved = await store.transition(ctx.db, orgId, id, store.IN_FLIGHT, { status: 'cancelled', finishedAt: nowIso(), error: 'cancelled' });
  if (moved) {
    const rt = getRuntime(ctx);
    rt.building.get(id)?.abort();
    rt.logs.build(d.projectId, id).append({ ts: nowIso(), stream: 'stderr', line: '[berth] cancelled' });
  }
  return getDeployment(ctx, orgId, id);
}

export function readBuildLogs(ctx: AppContext, d: DeploymentRow, opts: { limit?: number; since?: string }): LogLine[] {
  return getRuntime(ctx).logs.build(d.projectId, d.id).read({ limit: opts.limit ?? 1000, since: opts.since });
}

export function isTerminal(status: string): boolean {
  return (store.TERMINAL as readonly string[]).includes(status);
}

// ---------------------------------------------------------------- tokens

export interface IssuedToken {
  token: string;
  expiresAt: string;
}

async function issueToken(ctx: AppContext, actor: Actor, kind: 'build' | 'server_logs', projectId: string, deploymentId: string | null, ttlMs: number, prefix: string): Promise<IssuedToken> {
  const token = newSecretToken(prefix, 24);
  const expiresAt = isoPlus(ttlMs);
  await store.pruneTokens(ctx.db, nowIso());
  await store.insertToken(ctx.db, { id: newId('dtk'), tokenHash: sha256Hex(token), orgId: actor.orgId, projectId, deploymentId, kind, createdBy: actor.userId, credentialId: actor.tokenId ?? actor.sessionId ?? null, expiresAt, createdAt: nowIso() });
  return { token, expiresAt };
}

/** A read-only token for one deployment's build logs (build/access, deployment-session). */
export async function issueBuildToken(ctx: AppContext, actor: Actor, d: DeploymentRow): Promise<IssuedToken> {
  return issueToken(ctx, actor, 'build', d.projectId, d.id, BUILD_TOKEN_TTL_MS, 'berth_dpl');
}

/**
 * Hook the cloud area sets: build/access for a deployment this instance does not hold (on a linked
 * self-hosted instance, one of the actor's cloud projects' deployments, whose token the cloud
 * mints). It authorizes the actor itself; null leaves the usual 404.
 */
export type UnresolvedBuildAccess = (ctx: AppContext, actor: Actor, deploymentId: string, requestId: string) => Promise<IssuedToken | null>;
let unresolvedBuildAccess: UnresolvedBuildAccess | null = null;
export function setUnresolvedBuildAccess(fn: UnresolvedBuildAccess | null): void {
  unresolvedBuildAccess = fn;
}

/** `POST /api/deployments/build/access { deploymentId }`: read on the deployment's project is needed. */
export async function buildAccess(ctx: AppContext, actor: Actor, deploymentId: string, requestId = ''): Promise<IssuedToken> {
  const d = await store.findDeployment(ctx.db, actor.orgId, deploymentId);
  if (!d) {
    const elsewhere = unresolvedBuildAccess ? await unresolvedBuildAccess(ctx, actor, deploymentId, requestId) : null;
    if (elsewhere) return elsewhere;
    throw new AppError('NOT_FOUND', 'deployment not found', { field: 'deploymentId' });
  }
  const project = await findProject(ctx.db, actor.orgId, d.projectId);
  if (!project) throw new AppError('NOT_FOUND', 'deployment not found', { field: 'deploymentId' });
  authorize(actor, 'project:deployment:read', projectRef(project), 'deployment');
  return issueBuildToken(ctx, actor, d);
}

/** `POST /api/projects/:id/deployment-session`: a read-only token for the project's latest deployment. */
export async function deploymentSession(ctx: AppContext, actor: Actor, project: ProjectRow): Promise<IssuedToken & { deploymentId: string }> {
  const d = await ctx.db
    .selectFrom('deployments')
    .selectAll()
    .where('orgId', '=', project.orgId)
    .where('projectId', '=', project.id)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!d) throw conflict('the project has no deployment yet: create one with POST /api/deployments');
  const t = await issueBuildToken(ctx, actor, d);
  return { ...t, deploymentId: d.id };
}

export async function serverLogStreamToken(ctx: AppContext, actor: Actor, project: ProjectRow): Promise<IssuedToken> {
  return issueToken(ctx, actor, 'server_logs', project.id, null, SERVER_LOG_TOKEN_TTL_MS, 'berth_slt');
}

/** Checks a stream token: the right kind, for this record, not expired. Wrong or expired is 401. */
export interface StreamTokenInfo {
  orgId: string;
  projectId: string;
  /** The member who minted it, and the credential they used (null for tokens minted before it was kept). */
  createdBy: string | null;
  credentialId: string | null;
}

export async function verifyStreamToken(ctx: AppContext, token: string, kind: 'build' | 'server_logs', recordId: string): Promise<StreamTokenInfo> {
  if (typeof token !== 'string' || token.length > 200) throw new AppError('UNAUTHENTICATED', 'invalid or expired stream token');
  const row = await store.findTokenByHash(ctx.db, sha256Hex(token));
  const ok = row && row.kind === kind && row.expiresAt > nowIso() && safeEqual(row.tokenHash, sha256Hex(token)) && (kind === 'build' ? row.deploymentId === recordId : row.projectId === recordId);
  if (!ok) throw new AppError('UNAUTHENTICATED', 'invalid or expired stream token');
  return { orgId: row!.orgId, projectId: row!.projectId, createdBy: row!.createdBy, credentialId: row!.credentialId ?? null };
}

// ---------------------------------------------------------------- the build job

function gitUrl(ctx: AppContext, p: ProjectRow): string {
  // BERTH_GITHUB_WEB_URL names the git host (GitHub, GitHub Enterprise Server, or a mirror).
  const web = ctx.config.github.webUrl;
  return `${web}/${encodeURIComponent(p.gitOwner ?? '')}/${encodeURIComponent(p.gitRepo ?? '')}.git`;
}

/** Hook the git-provider area sets: a short-lived clone token for a repository, or null. */
export type CloneTokenProvider = (ctx: AppContext, orgId: string, owner: string, repo: string) => Promise<{ token: string; username?: string } | null>;
let cloneTokenProvider: CloneTokenProvider | null = null;
export function setCloneTokenProvider(fn: CloneTokenProvider | null): void {
  cloneTokenProvider = fn;
}

/**
 * Builds and deploys one deployment: queued -> building -> deploying -> ready, or failed / cancelled
 * / superseded. A failed build or a release that fails its health check leaves the previous release
 * serving.
 */
export async function runDeploymentJob(ctx: AppContext, payload: { deploymentId: string; orgId: string }, jobSignal: AbortSignal): Promise<void> {
  const { deploymentId: id, orgId } = payload;
  const rt = getRuntime(ctx);
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d || d.status !== 'queued') return;
  const project = await findProject(ctx.db, orgId, d.projectId);
  if (!project) return;
  const build = await store.findBuild(ctx.db, orgId, id);
  if (!(await store.transition(ctx.db, orgId, id, ['queued'], { status: 'building', startedAt: nowIso() }))) return;

  const abort = new AbortController();
  rt.building.set(id, abort);
  const onJobAbort = () => abort.abort();
  jobSignal.addEventListener('abort', onJobAbort, { once: true });
  // A cancel or a newer deployment recorded by another instance sharing the database also stops the build.
  const watch = setInterval(() => {
    void store
      .findDeployment(ctx.db, orgId, id)
      .then((now) => {
        if (now && !(store.IN_FLIGHT as readonly string[]).includes(now.status)) abort.abort();
      })
      .catch(() => {});
  }, 1000);
  watch.unref();
  const logFile = rt.logs.build(project.id, id);
  const log = (stream: 'stdout' | 'stderr', line: string) => logFile.append({ ts: nowIso(), stream, line });
  let secrets: string[] = [];
  try {
    // A runtime that cannot run anything (bubblewrap missing, Docker unreachable) fails the deployment at once, naming the fix.
    const driver = rt.driver.status();
    if (!driver.ready) throw new BuildError(`the ${driver.driver} runtime cannot run builds: ${driver.reason}`);
    const resolved = await resolveEnvForRuntime(ctx, project.id, d.environment);
    secrets = [...resolved.secrets];
    let source: BuildSource;
    const sourceType = build?.sourceType ?? project.sourceType;
    if (sourceType === 'local') {
      source = { type: 'local', path: project.localPath ?? '', roots: ctx.config.localRoots };
    } else if (sourceType === 'upload') {
      const dir = build?.uploadDir ?? (await uploadSourceDir(ctx, orgId, project.id));
      if (!dir) throw new BuildError('the project has no uploaded source: upload the folder again');
      source = { type: 'upload', dir };
    } else if (sourceType === 'git') {
      let token: string | null = null;
      let username: string | null = null;
      const cred = await findCloneCredential(ctx.db, orgId, project.id);
      if (cred) {
        token = decryptSecret(ctx.keyring, cred.token, `clone-token:${project.id}`);
        username = cred.username;
      } else if (cloneTokenProvider && project.gitOwner && project.gitRepo) {
        const t = await cloneTokenProvider(ctx, orgId, project.gitOwner, project.gitRepo).catch(() => null);
        if (t) {
          token = t.token;
          username = t.username ?? 'x-access-token';
        }
      }
      if (token) secrets.push(token);
      source = { type: 'git', url: gitUrl(ctx, project), ref: d.ref, token, username };
    } else {
      throw new BuildError('the project has no source');
    }
    log('stdout', `[berth] building ${id} of ${project.slug} (${d.environment})`);
    const timeoutSeconds = Number(process.env.BERTH_BUILD_TIMEOUT_SECONDS ?? 900);
    const result = await runBuild({
      deploymentId: id,
      projectId: project.id,
      workDir: buildDir(ctx, project.id, id),
      source,
      commands: { installCommand: project.installCommand, buildCommand: project.buildCommand, startCommand: project.startCommand, rootDirectory: project.rootDirectory },
      env: resolved.env,
      secrets,
      baseEnv: rt.baseEnv(),
      timeoutMs: (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0 ? timeoutSeconds : 900) * 1000,
      limits: rt.limitsOf(project.resources, 'build'),
      driver: rt.driver,
      identity: await rt.identityOf(orgId, project.id),
      signal: abort.signal,
      log,
    });
    await store.updateBuild(ctx.db, orgId, id, { releaseDir: result.appDir, startCommand: result.startCommand });
    if (!(await store.transition(ctx.db, orgId, id, ['building'], { status: 'deploying', commit: result.commit }))) return;

    const current = await findProject(ctx.db, orgId, project.id);
    if (d.environment === 'production' && current && current.status === 'enabled') {
      log('stdout', '[berth] starting the new release and waiting for its health check');
      const fresh = await resolveEnvForRuntime(ctx, project.id, 'production');
      const releaseSpec = await rt.releaseSpec(orgId, project.id, id, result.appDir, result.startCommand, current, fresh.env, fresh.secrets);
      try {
        await rt.supervisor.deploy(releaseSpec);
      } catch (e) {
        throw new BuildError(`the new release did not start: ${(e as Error).message}; the previous release keeps serving`);
      }
      const ok = await store.transition(ctx.db, orgId, id, ['deploying'], { status: 'ready', finishedAt: nowIso() });
      if (!ok) {
        // Cancelled or superseded while it started: put the release that should serve back.
        const back = await rt.specFor(orgId, project.id);
        if (back) await rt.supervisor.deploy(back).catch(() => {});
        else await rt.supervisor.stop(project.id);
        return;
      }
      rt.invalidate(project.id);
      log('stdout', '[berth] ready: the new release is serving');
    } else {
      await store.transition(ctx.db, orgId, id, ['deploying'], { status: 'ready', finishedAt: nowIso() });
      rt.invalidate(project.id);
      log('stdout', current?.status === 'enabled' ? `[berth] ready (${d.environment} is not served by the edge)` : '[berth] ready; the project is disabled, so the release starts when it is enabled');
    }
    await rt.pruneReleases(orgId, project.id).catch(() => {});
  } catch (e) {
    const raw = e instanceof BuildError ? e.message : `internal error: ${(e as Error).message}`;
    const message = redactText(jobSignal.aborted || rt.isShuttingDown ? 'interrupted: the server stopped during the build' : raw, secrets).slice(0, 2000);
    const failed = await store.transition(ctx.db, orgId, id, ['building', 'deploying'], { status: 'failed', finishedAt: nowIso(), error: message });
    if (failed) log('stderr', `[berth] failed: ${message}`);
    if (!(e instanceof BuildError)) ctx.log.warn({ deploymentId: id, err: message }, 'deployment failed');
  } finally {
    clearInterval(watch);
    jobSignal.removeEventListener('abort', onJobAbort);
    rt.building.delete(id);
  }
}
