import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import type { GrantKey } from '../../authz/grants.js';
import type { AppContext } from '../../context.js';
import type { ResolvedResource } from '../../http/route.js';
import * as gh from './github.js';
import { grantKeysOfTypes } from '../permissions/index.js';
import * as store from './gitprovider.store.js';
import type { Account } from './gitprovider.presenters.js';
import { installationFor, type OrgSources } from './sources.js';

/**
 * Who may see what of the org's git provider: the grant keys that cover a repository or an account
 * (the routes' resolvers build their records from them), and the per-row filters of the list services
 * (a domain rule: lists return only what the actor's grants let it read).
 */

/** Grant keys covering a repository: the repo (`owner/repo`, lowercase) and its owner's installation. */
export function repoKeys(s: Pick<OrgSources, 'installations'>, owner: string, repo: string): GrantKey[] {
  const keys: GrantKey[] = [{ type: 'gitprovider_repository', id: `${owner}/${repo}`.toLowerCase() }];
  const inst = installationFor(s, owner);
  if (inst) keys.push({ type: 'gitprovider_installation', id: inst.installationId });
  return keys;
}

export function canSeeRepo(actor: Actor, s: OrgSources, owner: string, repo: string): boolean {
  return can(actor, 'gitprovider:read', { orgId: actor.orgId, grantKeys: repoKeys(s, owner, repo) });
}

export function canSeeAccount(actor: Actor, a: Account): boolean {
  if (actor.role !== 'restricted') return true;
  if (a.installationId && can(actor, 'gitprovider:read', { orgId: actor.orgId, grantKeys: [{ type: 'gitprovider_installation', id: a.installationId }] })) return true;
  // An account is visible when a repository grant of the actor sits under it.
  const prefix = `${a.login.toLowerCase()}/`;
  return actor.grants.some((g) => g.resourceType === 'gitprovider_repository' && g.permissions.length > 0 && (g.resourceId === '*' || g.resourceId.toLowerCase().startsWith(prefix)));
}

/** Every git-provider grant key the org has given (any member's). */
function gitGrantKeys(ctx: AppContext, orgId: string) {
  return grantKeysOfTypes(ctx.db, orgId, ['gitprovider_installation', 'gitprovider_repository']);
}

async function installations(ctx: AppContext, orgId: string): Promise<store.InstallationRow[]> {
  return gh.appConfigured(ctx) ? store.listInstallations(ctx.db, orgId) : [];
}

/**
 * The records the routes act on. They always belong to the caller's org (owner and repo name GitHub's
 * accounts and repositories, seen through that org), so the gate answers 403, never 404, for them.
 */
export interface ProviderRecord {
  orgId: string;
}
export interface AccountRecord {
  owner: string;
}
export interface RepositoryRecord {
  owner: string;
  repo: string;
}

declare module '../../http/route.js' {
  interface ResourceKinds {
    gitprovider: ProviderRecord;
    gitprovider_account: AccountRecord;
    gitprovider_repository: RepositoryRecord;
  }
}

/** Resolver `gitprovider`: the org's git provider as a whole (status, home), covered by every git grant the org has given. */
export async function resolveProvider(ctx: AppContext, orgId: string): Promise<ResolvedResource<'gitprovider'>> {
  const grantKeys = (await gitGrantKeys(ctx, orgId)) as GrantKey[];
  return { kind: 'gitprovider', id: orgId, orgId, grantKeys, record: { orgId } };
}

/** Resolver `gitprovider_account` (`/orgs/:org/repos`): covered by the account's installation and by the org's repository grants under it. */
export async function resolveAccount(ctx: AppContext, orgId: string, owner: string): Promise<ResolvedResource<'gitprovider_account'>> {
  const inst = installationFor({ installations: await installations(ctx, orgId) }, owner);
  const prefix = `${owner.toLowerCase()}/`;
  // A `*` key stays: the org's `*` grant of that type covers this account's repositories too.
  const grantKeys = (await gitGrantKeys(ctx, orgId)).filter(
    (k) =>
      (k.type === 'gitprovider_repository' && (k.id === '*' || k.id.toLowerCase().startsWith(prefix))) ||
      (k.type === 'gitprovider_installation' && inst && (k.id === '*' || k.id === inst.installationId)),
  ) as GrantKey[];
  return { kind: 'gitprovider_account', id: owner, orgId, grantKeys, record: { owner } };
}

/**
 * Resolver `gitprovider_repository` (`/repos/:owner/:repo/...`, named by `repo` with `owner` from the
 * same path): covered by a grant on the repository (`owner/repo`, lowercase) or on its owner's installation.
 */
export async function resolveRepository(ctx: AppContext, orgId: string, repo: string, params: Record<string, unknown>): Promise<ResolvedResource<'gitprovider_repository'>> {
  const owner = typeof params.owner === 'string' ? params.owner : '';
  const grantKeys = repoKeys({ installations: await installations(ctx, orgId) }, owner, repo);
  return { kind: 'gitprovider_repository', id: `${owner}/${repo}`.toLowerCase(), orgId, grantKeys, record: { owner, repo } };
}
