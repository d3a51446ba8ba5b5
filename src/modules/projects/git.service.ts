import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { requireGit, type GitBranch, type GitRepository } from './git-port.js';
import type { ProjectRecord } from './projects.presenters.js';
import { loadRecord } from './projects.service.js';
import * as store from './projects.store.js';
import * as credentialsStore from './clone-credentials.store.js';
import * as environmentsStore from './environments.store.js';
import type { ProjectRow } from './projects.store.js';
import { checkBranch, checkGitOwner, checkGitRepo, normalizeHostname } from './validate.js';

/** Where the provider delivers pushes: the project's webhook domain (https), else BERTH_PUBLIC_URL. */
export function webhookUrlOf(ctx: AppContext, row: ProjectRow): string {
  return row.webhookDomain ? `https://${row.webhookDomain}/api/gitprovider/webhook` : `${ctx.publicUrl()}/api/gitprovider/webhook`;
}

function linked(row: ProjectRow): row is ProjectRow & { gitOwner: string; gitRepo: string } {
  return row.sourceType === 'git' && !!row.gitOwner && !!row.gitRepo;
}

function requireLinked(row: ProjectRow): asserts row is ProjectRow & { gitOwner: string; gitRepo: string } {
  if (!linked(row)) throw new AppError('VALIDATION_FAILED', 'this project has no linked repository: link one with POST /api/projects/:id/git/link');
}

export interface GitInfo {
  linked: boolean;
  provider: string | null;
  owner: string | null;
  repo: string | null;
  branch: string | null;
  autoDeploy: boolean;
  webhookDomain: string | null;
  webhookUrl: string;
  repository: GitRepository | null;
  /** Set while the git provider has paused auto-deploy or unlinked the repository (e.g. the App was uninstalled). */
  notice?: { reason: string; at: string } | null;
}

/** GET git: the stored link; for a linked project also the repository's metadata from the provider. */
export async function gitInfo(ctx: AppContext, row: ProjectRow): Promise<GitInfo> {
  const base = {
    autoDeploy: row.autoDeploy === 1,
    webhookDomain: row.webhookDomain,
    webhookUrl: webhookUrlOf(ctx, row),
    notice: (await ctx.ports.git?.projectNotice?.(ctx, row.orgId, row.id)) ?? null,
  };
  if (!linked(row)) return { linked: false, provider: null, owner: null, repo: null, branch: null, ...base, repository: null };
  let repository: GitRepository | null;
  try {
    repository = await requireGit(ctx).repository(ctx, row.orgId, row.gitOwner, row.gitRepo);
  } catch (e) {
    // While the provider has paused the project (e.g. the App was uninstalled), the link and the reason still show.
    if (!base.notice) throw e;
    repository = null;
  }
  return { linked: true, provider: row.gitProvider, owner: row.gitOwner, repo: row.gitRepo, branch: row.gitBranch ?? repository?.defaultBranch ?? null, ...base, repository };
}

/**
 * POST git/link: records the repository as the project's source. Without `branch` the provider is
 * asked for the default branch (400 GIT_PROVIDER_NOT_CONNECTED without one); with an explicit branch
 * the link is recorded even while no provider is connected.
 */
export async function linkRepository(ctx: AppContext, actor: Actor, row: ProjectRow, input: { owner: string; repo: string; branch?: string }): Promise<ProjectRecord> {
  const owner = checkGitOwner(input.owner, 'owner');
  const repo = checkGitRepo(input.repo, 'repo');
  const branch =
    input.branch !== undefined && input.branch.trim() !== ''
      ? checkBranch(input.branch, 'branch')
      : await requireGit(ctx).defaultBranch(ctx, row.orgId, owner, repo);
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, {
      sourceType: 'git',
      gitProvider: row.gitProvider && row.gitProvider !== 'upload' ? row.gitProvider : 'github',
      gitOwner: owner,
      gitRepo: repo,
      gitBranch: branch,
      webhookId: owner === row.gitOwner && repo === row.gitRepo ? row.webhookId : null,
      updatedAt: nowIso(),
    });
    await environmentsStore.setProductionBranch(tx, row.orgId, row.id, branch);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.git.link', resourceType: 'project', resourceId: row.id, details: { owner, repo, branch } });
  });
  const port = ctx.ports.git;
  if (row.autoDeploy === 1 && port) {
    try {
      const hook = await port.ensureWebhook(ctx, row.orgId, owner, repo, webhookUrlOf(ctx, row));
      await store.updateProject(ctx.db, row.orgId, row.id, { webhookId: hook.id });
    } catch (e) {
      ctx.log.warn({ err: e, projectId: row.id }, 'could not register the push webhook of the newly linked repository');
    }
  }
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

export async function listBranches(ctx: AppContext, row: ProjectRow): Promise<GitBranch[]> {
  const port = requireGit(ctx);
  requireLinked(row);
  return port.branches(ctx, row.orgId, row.gitOwner, row.gitRepo);
}

export interface CommitStatus {
  branch: string;
  deployedCommit: string | null;
  remoteCommit: string | null;
  upToDate: boolean;
}

/** Compares the commit of the production release serving now (after a rollback, not the newest) with the remote head of the deploy branch. */
export async function commitStatus(ctx: AppContext, row: ProjectRow): Promise<CommitStatus> {
  const port = requireGit(ctx);
  requireLinked(row);
  const branch = row.gitBranch ?? (await port.defaultBranch(ctx, row.orgId, row.gitOwner, row.gitRepo));
  const deployed = await ctx.ports.deploymentHistory?.latest(ctx.db, row.orgId, row.id, { environment: 'production', current: true });
  const remoteCommit = await port.headCommit(ctx, row.orgId, row.gitOwner, row.gitRepo, branch);
  const deployedCommit = deployed?.commit ?? null;
  return { branch, deployedCommit, remoteCommit, upToDate: !!deployedCommit && !!remoteCommit && deployedCommit === remoteCommit };
}

export interface AutoDeployRecord {
  autoDeploy: boolean;
  webhookUrl: string;
  webhookId: string | null;
}

/** Enabling needs a linked repository and the provider (it registers the push webhook); disabling only records. */
export async function setAutoDeploy(ctx: AppContext, actor: Actor, row: ProjectRow, enabled: boolean): Promise<AutoDeployRecord> {
  const url = webhookUrlOf(ctx, row);
  let webhookId = row.webhookId;
  if (enabled) {
    const port = requireGit(ctx);
    requireLinked(row);
    webhookId = (await port.ensureWebhook(ctx, row.orgId, row.gitOwner, row.gitRepo, url)).id;
  }
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { autoDeploy: enabled ? 1 : 0, webhookId, updatedAt: nowIso() });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.auto_deploy', resourceType: 'project', resourceId: row.id, details: { enabled } });
  });
  return { autoDeploy: enabled, webhookUrl: url, webhookId };
}

/** The host git webhooks are delivered to (a hostname, optionally with a port); empty clears it. */
export async function setWebhookDomain(ctx: AppContext, actor: Actor, row: ProjectRow, domain: string): Promise<{ webhookDomain: string | null; webhookUrl: string }> {
  const webhookDomain = domain.trim() === '' ? null : normalizeHostname(domain, 'domain', { allowPort: true });
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { webhookDomain, updatedAt: nowIso() });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.webhook_domain', resourceType: 'project', resourceId: row.id, details: { domain: webhookDomain } });
  });
  const next = { ...row, webhookDomain };
  const port = ctx.ports.git;
  if (row.autoDeploy === 1 && port && linked(next)) {
    try {
      const hook = await port.ensureWebhook(ctx, row.orgId, next.gitOwner, next.gitRepo, webhookUrlOf(ctx, next));
      await store.updateProject(ctx.db, row.orgId, row.id, { webhookId: hook.id });
    } catch (e) {
      ctx.log.warn({ err: e, projectId: row.id }, 'could not re-register the push webhook at the new domain');
    }
  }
  return { webhookDomain, webhookUrl: webhookUrlOf(ctx, next) };
}

export async function setBranch(ctx: AppContext, actor: Actor, row: ProjectRow, branchInput: string): Promise<ProjectRecord> {
  const branch = checkBranch(branchInput, 'branch');
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { gitBranch: branch, updatedAt: nowIso() });
    await environmentsStore.setProductionBranch(tx, row.orgId, row.id, branch);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.branch', resourceType: 'project', resourceId: row.id, details: { branch } });
  });
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

// ---------------------------------------------------------------- clone credential

export interface CloneTokenRecord {
  configured: boolean;
  username: string | null;
  token: string | null;
  updatedAt: string | null;
}

const cloneAad = (projectId: string) => `clone-token:${projectId}`;

export async function getCloneToken(ctx: AppContext, row: ProjectRow): Promise<CloneTokenRecord> {
  const c = await credentialsStore.findCloneCredential(ctx.db, row.orgId, row.id);
  if (!c) return { configured: false, username: null, token: null, updatedAt: null };
  return { configured: true, username: c.username, token: '********', updatedAt: c.updatedAt };
}

export async function setCloneToken(ctx: AppContext, actor: Actor, row: ProjectRow, input: { token: string; username?: string }): Promise<CloneTokenRecord> {
  const token = input.token.trim();
  if (!token) throw new AppError('VALIDATION_FAILED', 'token must not be empty', { field: 'token' });
  if (/[\s]/.test(token)) throw new AppError('VALIDATION_FAILED', 'token must not contain whitespace', { field: 'token' });
  const username = input.username?.trim() || null;
  if (username && /[\s:@/]/.test(username)) throw new AppError('VALIDATION_FAILED', 'username must not contain whitespace, ":", "@" or "/"', { field: 'username' });
  const updatedAt = nowIso();
  await transaction(ctx.db, async (tx) => {
    await credentialsStore.upsertCloneCredential(tx, { projectId: row.id, orgId: row.orgId, username, token: encryptSecret(ctx.keyring, token, cloneAad(row.id)), updatedAt });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.clone_token.update', resourceType: 'project', resourceId: row.id, details: { username } });
  });
  return { configured: true, username, token: '********', updatedAt };
}

/** For the build pipeline only (never over HTTP): the decrypted clone credential, or null. */
export async function resolveCloneCredential(ctx: AppContext, orgId: string, projectId: string): Promise<{ username: string | null; token: string } | null> {
  const c = await credentialsStore.findCloneCredential(ctx.db, orgId, projectId);
  if (!c) return null;
  return { username: c.username, token: decryptSecret(ctx.keyring, c.token, cloneAad(projectId)) };
}
