import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { gitLinks, type LinkedProject } from '../projects/index.js';
import * as store from './gitprovider.store.js';

/**
 * Whom a delivery for a repository concerns: the auto-deploy projects linked to it in the org that
 * holds the delivering App installation, and those registered with the delivering repository hook;
 * and the actor the area deploys as.
 */

/** The auto-deploy projects a delivery for owner/repo concerns (its installation's org, or its hook's projects). */
export async function deliveryProjects(ctx: AppContext, installationId: string | null, hookId: string | null, owner: string, repo: string): Promise<LinkedProject[]> {
  const projects: LinkedProject[] = [];
  if (installationId) {
    const inst = await store.findInstallationByGithubId(ctx.db, installationId);
    if (inst?.orgId) projects.push(...(await gitLinks.autoDeployProjects(ctx.db, { orgId: inst.orgId }, owner, repo)));
  }
  if (hookId) for (const pr of await gitLinks.autoDeployProjects(ctx.db, { hookId }, owner, repo)) if (!projects.some((x) => x.id === pr.id)) projects.push(pr);
  return projects;
}

/** The orgs a delivery for owner/repo concerns: its installation's, and those of its hook's projects. */
export async function deliveryOrgs(ctx: AppContext, installationId: string | null, hookId: string | null, owner: string, repo: string): Promise<string[]> {
  const orgs = new Set<string>();
  if (installationId) {
    const inst = await store.findInstallationByGithubId(ctx.db, installationId);
    if (inst?.orgId) orgs.add(inst.orgId);
  }
  if (hookId) for (const pr of await gitLinks.autoDeployProjects(ctx.db, { hookId }, owner, repo)) orgs.add(pr.orgId);
  return [...orgs];
}

/** The GitHub integration of an org, as the deployments area sees who deployed (owner rights, no user). */
export function githubActor(orgId: string): Actor {
  return { userId: 'github', email: '', orgId, role: 'owner', scopes: null, via: 'token', grants: [] };
}
