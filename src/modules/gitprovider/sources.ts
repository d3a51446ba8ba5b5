import type { Octokit } from '@octokit/core';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { decryptSecret } from '../../lib/crypto.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';

/**
 * What an org has connected (App installations, an OAuth account, the host's gh CLI) and the
 * credential each GitHub call of the area uses.
 */

export type Source = 'app' | 'oauth' | 'cli';

export interface OrgSources {
  installations: store.InstallationRow[];
  oauth?: store.ConnectionRow;
  cli?: store.ConnectionRow;
}

export interface Cred {
  source: Source;
  token: string;
  installationId?: string;
}

export async function orgSources(ctx: AppContext, orgId: string): Promise<OrgSources> {
  const [installations, conns] = await Promise.all([
    gh.appConfigured(ctx) ? store.listInstallations(ctx.db, orgId) : Promise.resolve([]),
    store.listConnections(ctx.db, orgId),
  ]);
  return {
    installations,
    oauth: conns.find((c) => c.source === 'oauth' && c.token),
    // The host's gh CLI is only a source on a self-hosted instance.
    cli: ctx.config.mode === 'self-hosted' ? conns.find((c) => c.source === 'cli') : undefined,
  };
}

/** AAD of the sealed OAuth token of an org. */
export const oauthAad = (orgId: string) => `gitprovider:oauth:${orgId}`;

/** The user credentials (OAuth account, then gh CLI) of an org, in that order. */
export async function userCreds(ctx: AppContext, orgId: string, s: OrgSources): Promise<Cred[]> {
  const out: Cred[] = [];
  if (s.oauth?.token) out.push({ source: 'oauth', token: decryptSecret(ctx.keyring, s.oauth.token, oauthAad(orgId)) });
  if (s.cli) {
    const t = await gh.ghToken(ctx);
    if (t) out.push({ source: 'cli', token: t });
  }
  return out;
}

/** The org's App installation on `owner`, if any (case-insensitive). */
export function installationFor(s: Pick<OrgSources, 'installations'>, owner: string): store.InstallationRow | undefined {
  return s.installations.find((i) => i.accountLogin.toLowerCase() === owner.toLowerCase());
}

/** A credential of one installation (its cached installation token). */
export async function installationCred(ctx: AppContext, inst: store.InstallationRow): Promise<Cred> {
  return { source: 'app', installationId: inst.installationId, token: (await gh.installationToken(ctx, inst.installationId)).token };
}

export function notConnected(): AppError {
  return new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no GitHub App installation, OAuth account or gh CLI login is connected to this organization');
}

/**
 * The credential for one owner's repositories: the App installation for that owner, else the OAuth
 * account, else the host's gh CLI. Nothing usable at all is 400; sources that cannot see the owner
 * make the repository 404.
 */
export async function credFor(ctx: AppContext, orgId: string, owner: string): Promise<Cred & { sources: OrgSources }> {
  const s = await orgSources(ctx, orgId);
  const inst = installationFor(s, owner);
  if (inst) return { ...(await installationCred(ctx, inst)), sources: s };
  const users = await userCreds(ctx, orgId, s);
  if (users[0]) return { ...users[0], sources: s };
  if (s.installations.length) throw new AppError('NOT_FOUND', 'repository not found or not visible to the connected GitHub account');
  throw notConnected();
}

/** An Octokit client with the credential for `owner`'s repositories. */
export async function clientFor(ctx: AppContext, orgId: string, owner: string): Promise<{ kit: Octokit; cred: Cred & { sources: OrgSources } }> {
  const cred = await credFor(ctx, orgId, owner);
  return { kit: await gh.octokitFor(ctx, cred.token), cred };
}
