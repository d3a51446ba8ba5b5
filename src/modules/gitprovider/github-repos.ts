import type { Octokit } from '@octokit/core';
import type { AppContext } from '../../context.js';
import { invalid } from '../../lib/errors.js';
import * as gh from './github.js';
import { toBranch, toRepo, type Branch, type Repo } from './gitprovider.presenters.js';
import type { Cred } from './sources.js';

/** Reads of repositories at GitHub with one credential: listings (paginated), one repository, its branches. */

const MAX_PAGES = 10;

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function paginate<T>(fn: (page: number) => Promise<{ items: any[]; hasNext: boolean }>, map: (x: any) => T): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { items, hasNext } = await fn(page);
    out.push(...items.map(map));
    if (!hasNext) break;
  }
  return out;
}

export function hasNextPage(headers: Record<string, unknown>): boolean {
  return /rel="next"/.test(String(headers.link ?? ''));
}

/** The repositories one credential sees: an installation's repositories, or a user's (optionally one owner's). */
export async function reposFrom(ctx: AppContext, cred: Cred, owner?: string): Promise<Repo[]> {
  const kit = await gh.octokitFor(ctx, cred.token);
  if (cred.source === 'app') {
    return paginate(
      async (page) => {
        const r = await gh.call(() => kit.request('GET /installation/repositories', { per_page: 100, page }));
        return { items: r.data.repositories, hasNext: hasNextPage(r.headers) };
      },
      (x) => toRepo(ctx, x),
    );
  }
  const all = await paginate(
    async (page) => {
      const r = await gh.call(() => kit.request('GET /user/repos', { per_page: 100, page, affiliation: 'owner,collaborator,organization_member' }));
      return { items: r.data, hasNext: hasNextPage(r.headers) };
    },
    (x) => toRepo(ctx, x),
  );
  return owner ? all.filter((r) => r.owner.toLowerCase() === owner.toLowerCase()) : all;
}

export async function fetchRepo(ctx: AppContext, kit: Octokit, owner: string, repo: string): Promise<Repo> {
  return toRepo(ctx, (await gh.call(() => kit.request('GET /repos/{owner}/{repo}', { owner, repo }))).data);
}

export async function fetchBranches(kit: Octokit, owner: string, repo: string): Promise<Branch[]> {
  return paginate(async (page) => {
    const r = await gh.call(() => kit.request('GET /repos/{owner}/{repo}/branches', { owner, repo, per_page: 100, page }));
    return { items: r.data, hasNext: hasNextPage(r.headers) };
  }, toBranch);
}

/** The contents route of a path in a repository; `.` and `..` segments are refused (400 naming `path`). */
export function contentsRoute(path: string): string {
  const clean = path.replace(/^\/+|\/+$/g, '');
  if (clean.split('/').some((seg) => seg === '..' || seg === '.')) throw invalid('path', 'path must not contain . or .. segments');
  return clean ? `GET /repos/{owner}/{repo}/contents/${clean.split('/').map(encodeURIComponent).join('/')}` : 'GET /repos/{owner}/{repo}/contents';
}
