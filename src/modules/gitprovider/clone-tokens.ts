import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import * as gh from './github.js';
import { cloneUrlOf } from './gitprovider.presenters.js';
import { installationFor, notConnected, orgSources } from './sources.js';

/**
 * Short-lived clone credentials: an installation token narrowed to one repository (contents: read),
 * for the API's clone-token route and for the build pipeline (the `cloneTokens` port).
 */

const CLONE_TOKEN_MAX_MS = 59 * 60 * 1000;

export interface CloneCredential {
  username: string;
  token: string;
  cloneUrl: string;
  expiresAt: string;
}

/** A fresh installation token scoped to one repository; 400 without an App installation for the owner. */
export async function cloneCredentialFor(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<CloneCredential> {
  const s = await orgSources(ctx, orgId);
  const inst = installationFor(s, owner);
  if (!inst) {
    if (!s.installations.length && !s.oauth && !s.cli) throw notConnected();
    throw new AppError('NO_INSTALLATION_TOKEN', `the GitHub App is not installed for ${owner}: clone tokens exist only for App installations`);
  }
  let t: gh.InstallationToken;
  try {
    t = await gh.mintInstallationToken(ctx, inst.installationId, [repo]);
  } catch (e) {
    // GitHub answers 422 when the repository is not part of the installation.
    if (e instanceof AppError && (e.code === 'VALIDATION_FAILED' || e.code === 'NOT_FOUND')) throw new AppError('NOT_FOUND', 'repository not found or not visible to the App installation');
    throw e;
  }
  const cap = new Date(Math.min(Date.parse(t.expiresAt), Date.now() + CLONE_TOKEN_MAX_MS)).toISOString();
  return { username: 'x-access-token', token: t.token, cloneUrl: cloneUrlOf(ctx, owner, repo), expiresAt: cap };
}

/** The clone-token route's answer: the credential and a `git clone` command that carries it in a header. */
export async function cloneToken(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<CloneCredential & { command: string }> {
  const c = await cloneCredentialFor(ctx, orgId, owner, repo);
  const basic = Buffer.from(`${c.username}:${c.token}`).toString('base64');
  // The credential rides in a header, not in the URL, so it never lands in .git/config or a log line.
  const command = `git -c http.extraHeader="Authorization: Basic ${basic}" clone ${c.cloneUrl}`;
  return { token: c.token, cloneUrl: c.cloneUrl, command, expiresAt: c.expiresAt, username: c.username };
}

/** The build pipeline's clone token for a linked repository, or null when there is none to mint. */
export async function buildCloneToken(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<{ token: string; username: string } | null> {
  try {
    const cred = await cloneCredentialFor(ctx, orgId, owner, repo);
    return { token: cred.token, username: cred.username };
  } catch {
    return null;
  }
}
