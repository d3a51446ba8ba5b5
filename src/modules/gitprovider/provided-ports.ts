import type { AppContext } from '../../context.js';
import type { Ports } from '../../ports.js';
import { buildCloneToken } from './clone-tokens.js';
import { projectNotice } from './delivery-events.js';
import { fetchBranches, fetchRepo, reposFrom } from './github-repos.js';
import * as gh from './github.js';
import { onDeploymentSettled } from './previews.service.js';
import { ensureHook } from './repo-webhooks.service.js';
import { clientFor, installationCred, orgSources, userCreds, type Cred } from './sources.js';

/**
 * What the git provider offers other areas (`ctx.ports`): the projects area's git port (repository,
 * branches, head commit, push webhook, notices), the build pipeline's clone tokens, the
 * permissions catalog of the two git grant types, and the `deploymentSettled` listener that reports
 * preview deployments to GitHub (commit status, pull request comment). The GitHub installation token
 * cache is the area's own per-server state (`ctx.state.gitprovider`), not a port.
 */

const git: NonNullable<Ports['git']> = {
  async repository(ctx, orgId, owner, repo) {
    const { kit } = await clientFor(ctx, orgId, owner);
    const r = await fetchRepo(ctx, kit, owner, repo);
    return { owner: r.owner, name: r.name, fullName: r.fullName, private: r.private, defaultBranch: r.defaultBranch, cloneUrl: r.cloneUrl };
  },
  async defaultBranch(ctx, orgId, owner, repo) {
    return (await git.repository(ctx, orgId, owner, repo)).defaultBranch;
  },
  async branches(ctx, orgId, owner, repo) {
    const { kit } = await clientFor(ctx, orgId, owner);
    return fetchBranches(kit, owner, repo);
  },
  async headCommit(ctx, orgId, owner, repo, branch) {
    const { kit } = await clientFor(ctx, orgId, owner);
    try {
      const r = await kit.request('GET /repos/{owner}/{repo}/branches/{branch}', { owner, repo, branch });
      return String(r.data.commit.sha);
    } catch (e) {
      if ((e as { status?: number }).status === 404) {
        await fetchRepo(ctx, kit, owner, repo); // a missing repository stays 404
        return null;
      }
      throw gh.upstreamError(e);
    }
  },
  async ensureWebhook(ctx, orgId, owner, repo, url) {
    const { kit } = await clientFor(ctx, orgId, owner);
    const { hook } = await ensureHook(ctx, kit, owner, repo, url);
    return { id: String(hook.id), url: hook.url };
  },
  projectNotice,
};

/** Catalog entries `{ id, label, meta }` of the org's installations or repositories (ids: installation id; `owner/repo` lowercase). */
export async function grantableResources(ctx: AppContext, orgId: string, type: 'gitprovider_installation' | 'gitprovider_repository', owner?: string) {
  const s = await orgSources(ctx, orgId);
  if (type === 'gitprovider_installation') {
    return s.installations.map((i) => ({ id: i.installationId, label: i.accountLogin, meta: { accountType: i.accountType } }));
  }
  const creds: Cred[] = [];
  for (const i of s.installations) {
    if (owner && i.accountLogin.toLowerCase() !== owner.toLowerCase()) continue;
    creds.push(await installationCred(ctx, i));
  }
  if (!creds.length) creds.push(...(await userCreds(ctx, orgId, s)).slice(0, 1));
  const seen = new Map<string, { id: string; label: string; meta: { owner: string; private: boolean } }>();
  for (const c of creds) {
    for (const r of await reposFrom(ctx, c, owner)) seen.set(r.fullName.toLowerCase(), { id: r.fullName.toLowerCase(), label: r.fullName, meta: { owner: r.owner, private: r.private } });
  }
  return [...seen.values()];
}

type CatalogProvider = NonNullable<Ports['catalogs'][string]>;

const catalogs: Record<'gitprovider_installation' | 'gitprovider_repository', CatalogProvider> = {
  gitprovider_installation: {
    list: (c, orgId) => grantableResources(c, orgId, 'gitprovider_installation'),
    has: async (c, orgId, id) => (await grantableResources(c, orgId, 'gitprovider_installation')).some((e) => e.id === id),
  },
  gitprovider_repository: {
    list: (c, orgId, q) => grantableResources(c, orgId, 'gitprovider_repository', q.owner),
    has: async (c, orgId, id) => {
      const owner = id.split('/')[0];
      if (!owner || id !== id.toLowerCase()) return false;
      return (await grantableResources(c, orgId, 'gitprovider_repository', owner)).some((e) => e.id === id);
    },
  },
};

/** The module's `provides` (./ports.ts declares `cloneTokens`; the other areas declare the rest). */
export function gitproviderPorts(): Partial<Ports> {
  return { git, cloneTokens: buildCloneToken, catalogs, deploymentSettled: [onDeploymentSettled] };
}
