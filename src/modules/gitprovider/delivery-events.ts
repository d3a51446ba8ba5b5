import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { insertAuditEvent } from '../audit/index.js';
import { createDeployment, pushDeploymentExists } from '../deployments/index.js';
import { projectQueries, gitLinks } from '../projects/index.js';
import { deliveryProjects, githubActor } from './delivery-targets.js';
import * as gh from './github.js';
import { deployPreviewsOnPush } from './previews.service.js';
import * as store from './gitprovider.store.js';

/**
 * What a stored delivery does to the projects linked to GitHub: a push deploys the projects with
 * auto-deploy on (production on its branch, and the previews tracking the pushed branch; pull requests
 * are previews.service.ts); an uninstalled or suspended App pauses auto-deploy; a repository removed from the
 * installation unlinks its projects. A paused or unlinked project carries a notice saying why.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */

export async function onPush(ctx: AppContext, p: any, hookId: string | null) {
  const ref = String(p.ref ?? '');
  if (!ref.startsWith('refs/heads/') || p.deleted || /^0+$/.test(String(p.after ?? '0'))) return { deployments: [] };
  const branch = ref.slice('refs/heads/'.length);
  const owner = String(p.repository?.owner?.login ?? p.repository?.owner?.name ?? '');
  const repo = String(p.repository?.name ?? '');
  const commit = String(p.after);
  const defaultBranch = String(p.repository?.default_branch ?? '');
  if (!owner || !repo) return { deployments: [] };
  const installationId = p.installation?.id !== undefined ? String(p.installation.id) : null;
  const projects = await deliveryProjects(ctx, installationId, hookId, owner, repo);
  const created: string[] = [];
  for (const pr of projects) {
    if ((pr.gitBranch || defaultBranch) === branch && !(await pushDeploymentExists(ctx.db, pr.orgId, pr.id, commit))) {
      const id = await createPushDeployment(ctx, { orgId: pr.orgId, projectId: pr.id, commit, branch });
      if (id) created.push(id);
    }
    // The project's preview environments that track the branch deploy it too (contract section 16).
    if (/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) created.push(...(await deployPreviewsOnPush(ctx, pr, { branch, commit, owner, repo })));
  }
  return { deployments: created };
}

/**
 * Creates a `push` deployment through the deployments area (queued row + build job), acting as the
 * GitHub integration of the project's org; the record carries the pushed commit.
 */
async function createPushDeployment(ctx: AppContext, p: { orgId: string; projectId: string; commit: string; branch: string }): Promise<string | null> {
  try {
    const d = await createDeployment(ctx, githubActor(p.orgId), { projectId: p.projectId, ref: p.branch, commit: p.commit }, 'push');
    return d.id;
  } catch (e) {
    // A project that cannot deploy (disabled, no source) is skipped; the delivery is still done.
    if (e instanceof AppError && e.status < 500) {
      ctx.log.info({ projectId: p.projectId, reason: e.message }, 'push did not create a deployment');
      return null;
    }
    throw e;
  }
}

export async function onInstallation(ctx: AppContext, p: any) {
  const inst = p.installation ?? {};
  const installationId = String(inst.id ?? '');
  if (!/^\d+$/.test(installationId)) return { ignored: true };
  const account = inst.account ?? {};
  if (p.action === 'created' || p.action === 'new_permissions_accepted' || p.action === 'unsuspend') {
    await store.upsertInstallation(ctx.db, { installationId, accountLogin: String(account.login ?? ''), accountType: String(account.type ?? 'User'), accountId: account.id !== undefined ? String(account.id) : null });
    return { recorded: installationId };
  }
  if (p.action === 'deleted' || p.action === 'suspend') {
    const row = await store.findInstallationByGithubId(ctx.db, installationId);
    gh.forgetInstallationToken(ctx, installationId);
    const paused: string[] = [];
    if (row?.orgId) {
      const orgId = row.orgId;
      const verb = p.action === 'deleted' ? 'uninstalled' : 'suspended';
      const reason = `auto-deploy paused: the GitHub App was ${verb} for ${row.accountLogin}`;
      await transaction(ctx.db, async (tx) => {
        for (const pr of await gitLinks.projectsLinkedTo(tx, orgId, row.accountLogin)) {
          if (!pr.autoDeploy) continue;
          await gitLinks.pauseAutoDeploy(tx, orgId, pr.id);
          await store.setNotice(tx, orgId, pr.id, reason);
          paused.push(pr.id);
        }
        await insertAuditEvent(tx, { orgId, actorId: null, action: `gitprovider.installation.${p.action}`, resourceType: 'gitprovider_installation', resourceId: installationId, details: { login: row.accountLogin, pausedProjects: paused } });
      });
    }
    if (p.action === 'deleted') await store.deleteInstallation(ctx.db, installationId);
    return { paused };
  }
  return { ignored: true };
}

export async function onInstallationRepositories(ctx: AppContext, p: any) {
  const installationId = String(p.installation?.id ?? '');
  const row = await store.findInstallationByGithubId(ctx.db, installationId);
  if (!row?.orgId || p.action !== 'removed') return { ignored: true };
  const orgId = row.orgId;
  const unlinked: string[] = [];
  const removed: any[] = Array.isArray(p.repositories_removed) ? p.repositories_removed : [];
  await transaction(ctx.db, async (tx) => {
    for (const r of removed) {
      const full = String(r.full_name ?? `${row.accountLogin}/${r.name}`);
      const [owner, name] = [full.split('/')[0]!, full.split('/').slice(1).join('/')];
      for (const pr of await gitLinks.projectsLinkedTo(tx, orgId, owner, name)) {
        await gitLinks.unlinkGitSource(tx, orgId, pr.id);
        await store.setNotice(tx, orgId, pr.id, `repository ${full} was removed from the GitHub App installation; the project was unlinked and auto-deploy turned off`);
        unlinked.push(pr.id);
      }
    }
    if (unlinked.length) {
      await insertAuditEvent(tx, { orgId, actorId: null, action: 'gitprovider.installation.repositories_removed', resourceType: 'gitprovider_installation', resourceId: installationId, details: { unlinkedProjects: unlinked } });
    }
  });
  return { unlinked };
}

/** Why the provider paused or unlinked a project, while auto-deploy stays off; cleared once it is on again. */
export async function projectNotice(ctx: AppContext, orgId: string, projectId: string): Promise<{ reason: string; at: string } | null> {
  const n = await store.findNotice(ctx.db, orgId, projectId);
  if (!n) return null;
  if ((await projectQueries.findProject(ctx.db, orgId, projectId))?.autoDeploy === 1) {
    await store.clearNotice(ctx.db, orgId, projectId);
    return null;
  }
  return n;
}
