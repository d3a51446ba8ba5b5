import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, invalid } from '../../lib/errors.js';
import { insertAuditEvent } from '../audit/index.js';
import { canSeeRepo } from './access.js';
import * as gh from './github.js';
import { contentsRoute, fetchBranches, fetchRepo, hasNextPage, paginate, reposFrom } from './github-repos.js';
import { toFileEntry, toRepo, type Branch, type FileEntry, type Repo } from './gitprovider.presenters.js';
import { clientFor, installationCred, installationFor, notConnected, orgSources, userCreds, type Cred } from './sources.js';

/**
 * Repositories at GitHub, for a caller of the API. The routes authorized the caller on the repository
 * (or account) before these run; the list services filter their rows to what the caller may read.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Repositories the org's sources can see (optionally one owner's), filtered to what the actor may read. */
export async function listRepos(ctx: AppContext, actor: Actor, q: { owner?: string }): Promise<Repo[]> {
  const s = await orgSources(ctx, actor.orgId);
  const creds: Cred[] = [];
  for (const i of s.installations) {
    if (q.owner && i.accountLogin.toLowerCase() !== q.owner.toLowerCase()) continue;
    creds.push(await installationCred(ctx, i));
  }
  const users = await userCreds(ctx, actor.orgId, s);
  if (!creds.length && !users.length) {
    if (s.installations.length && q.owner) return [];
    throw notConnected();
  }
  if (!q.owner || !creds.length) creds.push(...users.slice(0, 1));
  const seen = new Map<string, Repo>();
  for (const c of creds) for (const r of await reposFrom(ctx, c, q.owner)) if (!seen.has(r.fullName.toLowerCase())) seen.set(r.fullName.toLowerCase(), r);
  return [...seen.values()].filter((r) => canSeeRepo(actor, s, r.owner, r.name));
}

/** One account's repositories (an org's, else a user's), filtered to what the actor may read. */
export async function listOwnerRepos(ctx: AppContext, actor: Actor, owner: string): Promise<Repo[]> {
  const s = await orgSources(ctx, actor.orgId);
  const inst = installationFor(s, owner);
  let repos: Repo[];
  if (inst) {
    repos = await reposFrom(ctx, await installationCred(ctx, inst), owner);
  } else {
    const users = await userCreds(ctx, actor.orgId, s);
    if (!users[0]) {
      if (s.installations.length) throw new AppError('NOT_FOUND', 'account not found or not visible to the connected GitHub account');
      throw notConnected();
    }
    const kit = await gh.octokitFor(ctx, users[0].token);
    const list = async (route: 'GET /orgs/{org}/repos' | 'GET /users/{username}/repos') =>
      paginate(
        async (page) => {
          const r = await kit.request(route, { org: owner, username: owner, per_page: 100, page } as never);
          return { items: r.data as any[], hasNext: hasNextPage(r.headers) };
        },
        (x) => toRepo(ctx, x),
      );
    try {
      repos = await list('GET /orgs/{org}/repos');
    } catch (e) {
      if ((e as { status?: number }).status !== 404) throw gh.upstreamError(e, 'account');
      repos = await gh.call(() => list('GET /users/{username}/repos'), 'account');
    }
  }
  return repos.filter((r) => canSeeRepo(actor, s, r.owner, r.name));
}

export async function createRepo(ctx: AppContext, actor: Actor, body: { name: string; private?: boolean; owner?: string; description?: string }): Promise<Repo> {
  const s = await orgSources(ctx, actor.orgId);
  const inst = body.owner ? installationFor(s, body.owner) : undefined;
  const params = { name: body.name, private: body.private ?? true, description: body.description, auto_init: true };
  let data: any;
  if (inst && inst.accountType === 'Organization') {
    const kit = await gh.octokitFor(ctx, (await installationCred(ctx, inst)).token);
    data = (await gh.call(() => kit.request('POST /orgs/{org}/repos', { org: inst.accountLogin, ...params }), 'repository')).data;
  } else {
    const users = await userCreds(ctx, actor.orgId, s);
    const user = users[0];
    if (!user) {
      if (s.installations.length) throw invalid('owner', 'an App installation can create repositories only in an organization it is installed on: name that organization as owner');
      throw notConnected();
    }
    const kit = await gh.octokitFor(ctx, user.token);
    const login = s.oauth && user.source === 'oauth' ? s.oauth.login : s.cli?.login;
    if (!body.owner || body.owner.toLowerCase() === (login ?? '').toLowerCase()) {
      data = (await gh.call(() => kit.request('POST /user/repos', params), 'repository')).data;
    } else {
      data = (await gh.call(() => kit.request('POST /orgs/{org}/repos', { org: body.owner!, ...params }), 'repository')).data;
    }
  }
  const repo = toRepo(ctx, data);
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.repo.create', resourceType: 'gitprovider_repository', resourceId: repo.fullName, details: {} });
  return repo;
}

export async function getRepo(ctx: AppContext, actor: Actor, owner: string, repo: string, withBranches: boolean): Promise<Repo & { branches?: Branch[] }> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  const r = await fetchRepo(ctx, kit, owner, repo);
  return withBranches ? { ...r, branches: await fetchBranches(kit, owner, repo) } : r;
}

export async function deleteRepo(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<{ deleted: boolean; fullName: string }> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  await gh.call(() => kit.request('DELETE /repos/{owner}/{repo}', { owner, repo }));
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.repo.delete', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: {} });
  return { deleted: true, fullName: `${owner}/${repo}` };
}

export async function listBranches(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<Branch[]> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  return fetchBranches(kit, owner, repo);
}

export async function listFiles(ctx: AppContext, actor: Actor, owner: string, repo: string, q: { path?: string; branch?: string }): Promise<FileEntry[]> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  const route = contentsRoute(q.path ?? '');
  const data = (await gh.call(() => kit.request(route as 'GET /repos/{owner}/{repo}/contents/{path}', { owner, repo, ...(q.branch ? { ref: q.branch } : {}) } as never), 'path')).data as any;
  const items: any[] = Array.isArray(data) ? data : [data];
  return items.map(toFileEntry);
}

/** One file (default package.json): `content` is parsed JSON for *.json, text otherwise. */
export async function readFile(ctx: AppContext, actor: Actor, owner: string, repo: string, q: { file?: string; branch?: string }): Promise<{ path: string; sha: string; content: unknown }> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  const file = q.file ?? 'package.json';
  let route: string;
  try {
    route = contentsRoute(file);
  } catch {
    throw invalid('file', 'file must not contain . or .. segments');
  }
  const data = (await gh.call(() => kit.request(route as 'GET /repos/{owner}/{repo}/contents/{path}', { owner, repo, ...(q.branch ? { ref: q.branch } : {}) } as never), 'file')).data as any;
  if (Array.isArray(data) || data.type !== 'file') throw invalid('file', `${file} is not a file`);
  const text = data.encoding === 'base64' ? Buffer.from(String(data.content ?? ''), 'base64').toString('utf8') : String(data.content ?? '');
  let content: unknown = text;
  if (/\.json$/i.test(file)) {
    try {
      content = JSON.parse(text);
    } catch {
      content = text;
    }
  }
  return { path: String(data.path), sha: String(data.sha), content };
}
