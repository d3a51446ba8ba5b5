import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import type { SettledDeployment } from '../deployments/index.js';
import { createDeployment, ensurePreviewEnvironment, removePreviewEnvironment } from '../deployments/index.js';
import { projectQueries, type LinkedProject } from '../projects/index.js';
import { deliveryOrgs, deliveryProjects, githubActor } from './delivery-targets.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';
import { outcomeOf, parsePullRequest, pullEnvironment, renderPreviewComment, STATUS_CONTEXT, type CommentLine, type PullRequestDelivery } from './preview-pulls.js';
import { clientFor } from './sources.js';

/**
 * Preview deployments on GitHub (contract section 16, issue 22): a `pull_request` delivery creates,
 * deploys and removes the `pr-<number>` environment; a push to a preview's branch deploys it; each such
 * deployment reports a `berth/deploy` commit status (pending, then success with the preview URL, or
 * failure) and the one comment Berth keeps on the pull request is edited to show it.
 *
 * GitHub is written to by two jobs (durable, retried with backoff; a GitHub failure never touches the
 * deployment): `PREVIEW_STATUS_JOB` posts the status a preview deployment's record holds now, and
 * `PREVIEW_COMMENT_JOB` writes the comment of a pull request from the records as they are now, one
 * writer at a time (a lease on the comment's record), so there is one comment and the last write
 * shows the last change.
 */

export const PREVIEW_STATUS_JOB = 'gitprovider.preview.status';
export const PREVIEW_COMMENT_JOB = 'gitprovider.preview.comment';

/** How long the comment writer's lease lasts (GitHub calls time out after 15 s). */
const COMMENT_LEASE_MS = 60_000;

/** The deployment's page on the dashboard (the pending and failure statuses' target). */
export function deploymentPage(ctx: AppContext, projectId: string, deploymentId: string): string {
  return `${ctx.publicUrl()}/projects/${encodeURIComponent(projectId)}/deployments/${encodeURIComponent(deploymentId)}`;
}

// ---------------------------------------------------------------- pull_request deliveries

/* eslint-disable @typescript-eslint/no-explicit-any */

/** A stored `pull_request` delivery: opened / synchronize / reopened deploy the preview, closed removes it. */
export async function onPullRequest(ctx: AppContext, p: any, hookId: string | null) {
  const d = parsePullRequest(p);
  if (!d || d.intent === 'ignore') return { ignored: true, action: d?.action ?? null };
  if (d.intent === 'close') return closePull(ctx, d, hookId);
  const projects = await deliveryProjects(ctx, d.installationId, hookId, d.owner, d.repo);
  if (d.fork) {
    // Not deployed automatically: see PullRequestDelivery.fork. Nothing is written, here or at GitHub.
    if (projects.length) ctx.log.info({ owner: d.owner, repo: d.repo, number: d.number }, 'pull request from a fork: no preview deployment');
    return { skipped: 'fork', projects: projects.map((x) => x.id) };
  }
  const previews = [];
  for (const project of projects) previews.push(await openPull(ctx, project, d));
  return { previews };
}

async function openPull(ctx: AppContext, project: LinkedProject, d: PullRequestDelivery) {
  const { orgId } = project;
  const environment = pullEnvironment(d.number);
  let url: string | null;
  try {
    url = (await ensurePreviewEnvironment(ctx, githubActor(orgId), { id: project.id, orgId }, { name: environment, branch: d.headBranch })).url ?? null;
  } catch (e) {
    if (e instanceof AppError && e.status < 500) {
      ctx.log.info({ projectId: project.id, environment, reason: e.message }, 'pull request: no preview environment');
      return { projectId: project.id, environment, skipped: e.message };
    }
    throw e;
  }
  const { previousState } = await store.upsertPreviewPull(ctx.db, {
    orgId,
    projectId: project.id,
    environment,
    repoOwner: d.owner,
    repoName: d.repo,
    number: d.number,
    headBranch: d.headBranch,
    headSha: d.headSha,
  });
  // Reopened after a close: the environment was removed with its deployments, so the head deploys again.
  if (previousState === 'closed') await store.deletePreviewDeploymentsOf(ctx.db, orgId, project.id, environment);
  const deploymentId = await deployPreview(ctx, { orgId, projectId: project.id, environment, branch: d.headBranch, commit: d.headSha, owner: d.owner, repo: d.repo, previewUrl: url });
  await touchComment(ctx, ctx.db, { orgId, repoOwner: d.owner, repoName: d.repo, number: d.number });
  return { projectId: project.id, environment, deploymentId };
}

async function closePull(ctx: AppContext, d: PullRequestDelivery, hookId: string | null) {
  const removed: { projectId: string; environment: string }[] = [];
  for (const orgId of await deliveryOrgs(ctx, d.installationId, hookId, d.owner, d.repo)) {
    const pulls = (await store.previewPullsOf(ctx.db, orgId, d.owner, d.repo, d.number)).filter((x) => x.state === 'open');
    for (const pull of pulls) {
      try {
        await removePreviewEnvironment(ctx, githubActor(orgId), { id: pull.projectId, orgId }, pull.environment);
      } catch (e) {
        // Already gone (removed by a member) is fine; anything else is retried with the delivery.
        if (!(e instanceof AppError && e.status < 500)) throw e;
        ctx.log.info({ projectId: pull.projectId, environment: pull.environment, reason: e.message }, 'pull request closed: preview environment not removed');
      }
      await transaction(ctx.db, async (tx) => {
        await store.closePreviewPull(tx, orgId, pull.id);
        for (const pending of await store.pendingPreviewDeploymentsOf(tx, orgId, pull.projectId, pull.environment)) {
          await store.setPreviewDeploymentState(tx, orgId, pending.id, { state: 'error', description: 'The pull request was closed: its preview was removed' });
          await ctx.jobs.enqueue(PREVIEW_STATUS_JOB, { orgId, id: pending.id }, { db: tx, orgId });
        }
      });
      removed.push({ projectId: pull.projectId, environment: pull.environment });
    }
    if (pulls.length) await touchComment(ctx, ctx.db, { orgId, repoOwner: d.owner, repoName: d.repo, number: d.number });
  }
  return { removed };
}

// ---------------------------------------------------------------- pushes to a preview's branch

/**
 * What a push to `branch` deploys besides production: the project's preview environments that track
 * the branch (a pull request's, or one a member made for it).
 */
export async function deployPreviewsOnPush(ctx: AppContext, project: LinkedProject, push: { branch: string; commit: string; owner: string; repo: string }): Promise<string[]> {
  const tracking = (await projectQueries.listEnvironments(ctx.db, project.orgId, project.id)).filter((e) => e.type === 'preview' && e.branch === push.branch);
  if (!tracking.length) return [];
  const environments = tracking.map((e) => e.name);
  const pulls = (await store.openPreviewPullsOnBranch(ctx.db, project.orgId, project.id, push.branch)).filter((x) => environments.includes(x.environment));
  const created: string[] = [];
  for (const environment of environments) {
    const id = await deployPreview(ctx, { orgId: project.orgId, projectId: project.id, environment, branch: push.branch, commit: push.commit, owner: push.owner, repo: push.repo, previewUrl: null });
    if (id) created.push(id);
  }
  for (const pull of pulls) await touchComment(ctx, ctx.db, { orgId: project.orgId, repoOwner: pull.repoOwner, repoName: pull.repoName, number: pull.number });
  return created;
}

// ---------------------------------------------------------------- deploying a preview

/**
 * Deploys `commit` of `branch` to a preview environment, once: the claim on (project, environment,
 * commit) makes a redelivery, or a push and a `synchronize` of the same head, deploy once. Queues the
 * pending status. Null when it was deployed before or the project cannot deploy.
 */
async function deployPreview(
  ctx: AppContext,
  t: { orgId: string; projectId: string; environment: string; branch: string; commit: string; owner: string; repo: string; previewUrl: string | null },
): Promise<string | null> {
  const at = nowIso();
  const claim: store.PreviewDeploymentRow = {
    id: newId('ghd'),
    orgId: t.orgId,
    projectId: t.projectId,
    environment: t.environment,
    commitSha: t.commit,
    deploymentId: null,
    repoOwner: t.owner,
    repoName: t.repo,
    state: 'pending',
    description: `Deploying the preview ${t.environment}`,
    previewUrl: t.previewUrl,
    createdAt: at,
    updatedAt: at,
  };
  if (!(await store.claimPreviewDeployment(ctx.db, claim))) return null;
  let deploymentId: string;
  try {
    deploymentId = (await createDeployment(ctx, githubActor(t.orgId), { projectId: t.projectId, environment: t.environment, ref: t.branch, commit: t.commit }, 'push')).id;
  } catch (e) {
    await store.deletePreviewDeployment(ctx.db, t.orgId, claim.id);
    // A project that cannot deploy (disabled, no source) is skipped; the delivery is still done.
    if (e instanceof AppError && e.status < 500) {
      ctx.log.info({ projectId: t.projectId, environment: t.environment, reason: e.message }, 'preview: no deployment');
      return null;
    }
    throw e;
  }
  await transaction(ctx.db, async (tx) => {
    await store.bindPreviewDeployment(tx, t.orgId, claim.id, deploymentId);
    await ctx.jobs.enqueue(PREVIEW_STATUS_JOB, { orgId: t.orgId, id: claim.id }, { db: tx, orgId: t.orgId });
  });
  return deploymentId;
}

// ---------------------------------------------------------------- outcomes

/**
 * The `deploymentSettled` listener: a preview deployment this area made records its outcome and
 * queues its status and its pull request's comment. Any other deployment is not its business.
 */
export async function onDeploymentSettled(ctx: AppContext, d: SettledDeployment): Promise<void> {
  const row = await store.previewDeploymentFor(ctx.db, d.orgId, d);
  if (!row) return;
  const { state, description } = outcomeOf(d.status);
  await transaction(ctx.db, async (tx) => {
    await store.setPreviewDeploymentState(tx, d.orgId, row.id, { state, description, previewUrl: d.url ?? row.previewUrl });
    await ctx.jobs.enqueue(PREVIEW_STATUS_JOB, { orgId: d.orgId, id: row.id }, { db: tx, orgId: d.orgId });
    for (const pull of await store.openPreviewPullsOfEnvironment(tx, d.orgId, d.projectId, d.environment)) {
      await touchComment(ctx, tx, { orgId: d.orgId, repoOwner: pull.repoOwner, repoName: pull.repoName, number: pull.number });
    }
  });
}

// ---------------------------------------------------------------- writing to GitHub (jobs)

/** Marks the pull request's comment as out of date and queues its writer. */
async function touchComment(ctx: AppContext, db: Db, k: { orgId: string; repoOwner: string; repoName: string; number: number }): Promise<void> {
  await transaction(db, async (tx) => {
    const row = await store.touchPullComment(tx, k);
    await ctx.jobs.enqueue(PREVIEW_COMMENT_JOB, { orgId: k.orgId, id: row.id }, { db: tx, orgId: k.orgId });
  });
}

/**
 * Runs one GitHub write: a refusal GitHub will repeat (no access, not found, invalid) is logged and
 * dropped; anything else (5xx, network) throws, and the job is retried with backoff.
 */
async function githubWrite(ctx: AppContext, what: string, fields: Record<string, unknown>, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    const err = gh.upstreamError(e);
    if (err.status < 500) {
      ctx.log.warn({ ...fields, reason: err.message }, `GitHub refused the ${what}`);
      return;
    }
    ctx.log.warn({ ...fields, reason: err.message }, `GitHub did not take the ${what}; retrying`);
    throw err;
  }
}

const fingerprint = (r: store.PreviewDeploymentRow) => JSON.stringify([r.state, r.description, r.previewUrl, r.deploymentId]);

/** `PREVIEW_STATUS_JOB`: posts the status a preview deployment's record holds, again if it changed meanwhile. */
export async function reportStatus(ctx: AppContext, orgId: string, id: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const row = await store.findPreviewDeployment(ctx.db, orgId, id);
    if (!row?.deploymentId) return;
    const deploymentId = row.deploymentId;
    const target = row.state === 'success' && row.previewUrl ? row.previewUrl : deploymentPage(ctx, row.projectId, deploymentId);
    await githubWrite(ctx, 'commit status', { projectId: row.projectId, deploymentId, state: row.state }, async () => {
      const { kit } = await clientFor(ctx, orgId, row.repoOwner);
      await kit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        owner: row.repoOwner,
        repo: row.repoName,
        sha: row.commitSha,
        state: row.state as 'pending' | 'success' | 'failure' | 'error',
        target_url: target,
        description: row.description.slice(0, 140),
        context: STATUS_CONTEXT,
      });
    });
    // Another job may have read an older state and posted after this one: post again what holds now.
    const now = await store.findPreviewDeployment(ctx.db, orgId, id);
    if (!now || fingerprint(now) === fingerprint(row)) return;
  }
}

/** The comment's lines: one per project that has (had) a preview of this pull request. */
async function commentLines(ctx: AppContext, c: store.PullCommentRow): Promise<CommentLine[]> {
  const lines: CommentLine[] = [];
  for (const pull of await store.previewPullsOf(ctx.db, c.orgId, c.repoOwner, c.repoName, c.number)) {
    const project = await projectQueries.findProject(ctx.db, c.orgId, pull.projectId);
    if (!project) continue;
    const latest = await store.latestPreviewDeployment(ctx.db, c.orgId, pull.projectId, pull.environment);
    const commit = latest?.commitSha ?? pull.headSha;
    lines.push({
      project: project.name,
      environment: pull.environment,
      commit,
      commitUrl: `${ctx.config.github.webUrl}/${encodeURIComponent(c.repoOwner)}/${encodeURIComponent(c.repoName)}/commit/${commit}`,
      state: pull.state === 'closed' ? 'removed' : ((latest?.state ?? 'none') as CommentLine['state']),
      description: latest?.description ?? null,
      previewUrl: latest?.previewUrl ?? null,
      deploymentUrl: latest?.deploymentId ? deploymentPage(ctx, pull.projectId, latest.deploymentId) : null,
      updatedAt: latest && latest.updatedAt > pull.updatedAt ? latest.updatedAt : pull.updatedAt,
    });
  }
  return lines;
}

/** Edits the comment (or creates it when it has none, or it was deleted at GitHub); answers its id. */
async function writeComment(ctx: AppContext, c: store.PullCommentRow, body: string): Promise<string> {
  const { kit } = await clientFor(ctx, c.orgId, c.repoOwner);
  if (c.commentId) {
    try {
      await kit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', { owner: c.repoOwner, repo: c.repoName, comment_id: Number(c.commentId), body });
      return c.commentId;
    } catch (e) {
      if ((e as { status?: number }).status !== 404) throw e;
    }
  }
  const r = await kit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', { owner: c.repoOwner, repo: c.repoName, issue_number: c.number, body });
  return String(r.data.id);
}

/**
 * `PREVIEW_COMMENT_JOB`: brings the pull request's comment up to date. One writer at a time holds the
 * comment's lease; a change made while it writes bumps the revision, and the writer, after giving the
 * lease back, writes again. A job that finds the lease taken leaves the work to its holder (and looks
 * again once the lease would have run out, should the holder have died).
 */
export async function syncComment(ctx: AppContext, orgId: string, id: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const until = new Date(Date.now() + COMMENT_LEASE_MS).toISOString();
    if (!(await store.leasePullComment(ctx.db, orgId, id, until))) {
      const held = await store.findPullComment(ctx.db, orgId, id);
      if (held && held.rev > held.syncedRev) await ctx.jobs.enqueue(PREVIEW_COMMENT_JOB, { orgId, id }, { orgId, runAt: new Date(Date.parse(held.lockUntil ?? until) + 1000) });
      return;
    }
    try {
      const c = await store.findPullComment(ctx.db, orgId, id);
      if (!c || c.rev <= c.syncedRev) {
        await store.releasePullComment(ctx.db, orgId, id, until);
        return;
      }
      const lines = await commentLines(ctx, c);
      let commentId = c.commentId;
      if (lines.length || commentId) {
        const body = renderPreviewComment(lines);
        await githubWrite(ctx, 'pull request comment', { repo: `${c.repoOwner}/${c.repoName}`, number: c.number }, async () => {
          commentId = await writeComment(ctx, c, body);
        });
      }
      await store.releasePullComment(ctx.db, orgId, id, until, { rev: c.rev, commentId });
    } catch (e) {
      await store.releasePullComment(ctx.db, orgId, id, until).catch(() => {});
      throw e;
    }
    const after = await store.findPullComment(ctx.db, orgId, id);
    if (!after || after.rev <= after.syncedRev) return;
  }
}
