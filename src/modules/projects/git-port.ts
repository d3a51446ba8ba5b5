import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';

/**
 * What the projects area needs from the git provider. The git-provider area provides it as
 * `ctx.ports.git`. While there is none, the routes that need the provider answer 400
 * GIT_PROVIDER_NOT_CONNECTED (`requireGit`). Implementations throw AppError themselves:
 * GIT_PROVIDER_NOT_CONNECTED when the org has no usable connection, NOT_FOUND when owner/repo is not
 * visible to it.
 */
export interface GitRepository {
  owner: string;
  name: string;
  fullName: string;
  private: boolean;
  defaultBranch: string;
  cloneUrl: string;
}

export interface GitBranch {
  name: string;
  commit: string;
  protected: boolean;
}

export interface GitWebhook {
  id: string;
  url: string;
}

export interface GitPort {
  /** Repository metadata (used by GET /api/projects/:id/git). */
  repository(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<GitRepository>;
  /** The repository's default branch (git/link without `branch`). */
  defaultBranch(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<string>;
  branches(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<GitBranch[]>;
  /** The commit sha at the head of `branch`, or null when the branch does not exist. */
  headCommit(ctx: AppContext, orgId: string, owner: string, repo: string, branch: string): Promise<string | null>;
  /** Registers the push webhook pointing at `url`, or reuses an existing one. */
  ensureWebhook(ctx: AppContext, orgId: string, owner: string, repo: string, url: string): Promise<GitWebhook>;
  /** Why the provider paused auto-deploy of (or unlinked) a project, while that is still in effect; shown by GET git. */
  projectNotice?(ctx: AppContext, orgId: string, projectId: string): Promise<{ reason: string; at: string } | null>;
}

/** The port, or 400 GIT_PROVIDER_NOT_CONNECTED. */
export function requireGit(ctx: AppContext): GitPort {
  const port = ctx.ports.git;
  if (!port) {
    throw new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no git provider is connected to this instance: connect one with POST /api/gitprovider/connect');
  }
  return port;
}
