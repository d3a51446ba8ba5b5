import type { AppContext } from '../../context.js';
import { AppError, invalid } from '../../lib/errors.js';
import { insertAuditEvent } from '../audit/index.js';
import { redirectUri, storeOauthToken } from './connect.service.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';
import { consumeState } from './state.js';

/**
 * The public redirect back from GitHub (`GET /api/gitprovider/connect/redirect`, no session): an OAuth
 * `code`, or an App `installation_id` with `setup_action`. Both carry the signed state, which names
 * the org that gets the connection or the installation.
 */
export async function completeRedirect(
  ctx: AppContext,
  q: { code?: string; state?: string; installation_id?: string; setup_action?: string },
): Promise<{ orgId: string; source: 'oauth' | 'app'; login: string }> {
  if (q.installation_id) return claimInstallation(ctx, q.installation_id, q.state, q.code);
  if (!q.code) throw invalid('code', 'code is required');
  const st = await consumeState(ctx, q.state, 'oauth');
  const token = await gh.exchangeOAuthCode(ctx, q.code, redirectUri(ctx));
  if (!token) throw invalid('code', 'GitHub refused the authorization code; start the connection again');
  const login = await storeOauthToken(ctx, st.o, st.u, token);
  return { orgId: st.o, source: 'oauth', login };
}

/** Binds an App installation to the org of the state, unless another org holds it (409). */
async function claimInstallation(ctx: AppContext, installationId: string, state: string | undefined, code: string | undefined) {
  if (!/^\d{1,20}$/.test(installationId)) throw invalid('installation_id', 'installation_id must be a number');
  if (!gh.appConfigured(ctx)) throw invalid('installation_id', 'no GitHub App is configured on this instance');
  const st = await consumeState(ctx, state, 'install');
  // Ask GitHub (as the App) which account the installation belongs to; a made-up id is 404 there.
  let inst: { account?: { login?: string; type?: string; id?: number | string } | null };
  try {
    inst = (await (await gh.appOctokit(ctx)).request('GET /app/installations/{installation_id}', { installation_id: Number(installationId) })).data as typeof inst;
  } catch (e) {
    const err = gh.upstreamError(e, 'installation');
    if (err.code === 'NOT_FOUND') throw invalid('installation_id', 'GitHub does not know this installation of the App');
    throw err;
  }
  // With "request user authorization during installation", GitHub also sends a code: check that the
  // user who installed can see this installation.
  if (code && ctx.config.github.clientSecret) {
    const token = await gh.exchangeOAuthCode(ctx, code, redirectUri(ctx));
    if (!token) throw invalid('code', 'GitHub refused the authorization code');
    const mine = (await gh.call(async () => (await gh.octokitFor(ctx, token)).request('GET /user/installations', { per_page: 100 }), 'installation')).data;
    if (!mine.installations.some((i: { id: number }) => String(i.id) === installationId)) throw invalid('installation_id', 'this installation is not visible to the signed-in GitHub user');
  }
  const account = inst.account ?? {};
  await store.upsertInstallation(ctx.db, {
    installationId,
    accountLogin: String(account.login ?? ''),
    accountType: String(account.type ?? 'User'),
    accountId: account.id !== undefined ? String(account.id) : null,
  });
  if (!(await store.claimInstallation(ctx.db, installationId, st.o, st.u))) {
    throw new AppError('CONFLICT', 'this installation is already connected to another organization');
  }
  await insertAuditEvent(ctx.db, { orgId: st.o, actorId: st.u, action: 'gitprovider.install', resourceType: 'gitprovider_installation', resourceId: installationId, details: { login: account.login } });
  return { orgId: st.o, source: 'app' as const, login: String(account.login ?? '') };
}
