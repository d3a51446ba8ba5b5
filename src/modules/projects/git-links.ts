import type { Db } from '../../db/client.js';
import { inOrg } from '../../db/scope.js';
import { nowIso } from '../../lib/ids.js';

/**
 * Projects linked to a git repository, as the git provider area sees and changes them (through this
 * area's index.ts): which projects a push deploys, and what an uninstalled App, a repository removed
 * from an installation or a deleted webhook does to them. Owner and repo match case-insensitively.
 */

export type LinkedProject = {
  id: string;
  orgId: string;
  gitOwner: string | null;
  gitRepo: string | null;
  gitBranch: string | null;
  autoDeploy: number;
  webhookDomain: string | null;
  webhookId: string | null;
};

const linkedCols = ['id', 'orgId', 'gitOwner', 'gitRepo', 'gitBranch', 'autoDeploy', 'webhookDomain', 'webhookId'] as const;

const same = (a: string | null, b: string) => (a ?? '').toLowerCase() === b.toLowerCase();

/** Projects of `orgId` linked to owner (and repo, when given). */
export async function projectsLinkedTo(db: Db, orgId: string, owner: string, repo?: string): Promise<LinkedProject[]> {
  const rows = await db.selectFrom('projects').select(linkedCols).where(inOrg(orgId)).where('gitOwner', 'is not', null).execute();
  return rows.filter((r) => same(r.gitOwner, owner) && (repo === undefined || same(r.gitRepo, repo)));
}

/** Local, enabled projects with auto-deploy on, linked to owner/repo: in `orgId`, or (no org) registered with hook `hookId`. */
export async function autoDeployProjects(db: Db, where: { orgId?: string; hookId?: string }, owner: string, repo: string): Promise<LinkedProject[]> {
  let q = db.selectFrom('projects').select(linkedCols).where('autoDeploy', '=', 1).where('status', '=', 'enabled').where('location', '=', 'local');
  if (where.orgId) q = q.where(inOrg(where.orgId));
  else if (where.hookId) q = q.where('webhookId', '=', where.hookId);
  else return [];
  const rows = await q.execute();
  return rows.filter((r) => same(r.gitOwner, owner) && same(r.gitRepo, repo));
}

/** Turns auto-deploy off (the git provider paused it). */
export async function pauseAutoDeploy(db: Db, orgId: string, projectId: string): Promise<void> {
  await db.updateTable('projects').set({ autoDeploy: 0, updatedAt: nowIso() }).where(inOrg(orgId)).where('id', '=', projectId).execute();
}

/** Drops the project's git source (its repository is gone from the provider): no source, no auto-deploy, no webhook. */
export async function unlinkGitSource(db: Db, orgId: string, projectId: string): Promise<void> {
  await db
    .updateTable('projects')
    .set({ autoDeploy: 0, sourceType: 'none', gitProvider: null, gitOwner: null, gitRepo: null, gitBranch: null, webhookId: null, updatedAt: nowIso() })
    .where(inOrg(orgId))
    .where('id', '=', projectId)
    .execute();
}

/** Forgets the recorded webhook id of these projects (the hook was deleted at the provider). */
export async function clearProjectWebhooks(db: Db, orgId: string, projectIds: string[]): Promise<void> {
  if (!projectIds.length) return;
  await db.updateTable('projects').set({ webhookId: null, updatedAt: nowIso() }).where(inOrg(orgId)).where('id', 'in', projectIds).execute();
}

/** The git provider's reads and changes of linked projects, as one object (push, uninstall, repository removed, webhook deleted). */
export const gitLinks = {
  projectsLinkedTo,
  autoDeployProjects,
  pauseAutoDeploy,
  unlinkGitSource,
  clearProjectWebhooks,
} as const;
