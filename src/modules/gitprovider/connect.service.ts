import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { AppError, invalid } from '../../lib/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { cloudGithubUnreachable } from '../cloud/index.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';
import type { ConnectAnswer, DevicePollAnswer } from './gitprovider.presenters.js';
import { oauthAad, orgSources, type OrgSources } from './sources.js';
import { signState } from './state.js';
import { installUrl } from './status.service.js';

/**
 * Connecting an org to GitHub and disconnecting it: the App install redirect, the OAuth authorize
 * redirect (cloud) or device login (self-hosted), and the host's gh CLI. The redirect back from
 * GitHub is `callback.service.ts`.
 */

export function redirectUri(ctx: AppContext): string {
  return `${ctx.publicUrl()}/api/gitprovider/connect/redirect`;
}

export async function connect(ctx: AppContext, actor: Actor, source?: 'oauth' | 'cli'): Promise<ConnectAnswer> {
  const s = await orgSources(ctx, actor.orgId);
  const selfHosted = ctx.config.mode === 'self-hosted';
  if (source === 'cli') return connectCli(ctx, actor, s);
  if (await cloudGithubUnreachable(ctx)) throw new AppError('cloud_unreachable', 'the cloud service this instance relies on for its GitHub App does not answer; try again later');
  if (source === 'oauth') return connectOauth(ctx, actor, s);
  // No source: the instance's auth mode decides (App, then OAuth, then the host's gh CLI).
  if (gh.appConfigured(ctx) && ctx.config.github.appSlug) {
    if (s.installations.length) return { connected: true };
    return { connected: false, flow: 'redirect', url: installUrl(ctx, actor)! };
  }
  if (gh.oauthConfigured(ctx)) return connectOauth(ctx, actor, s);
  if (selfHosted) return connectCli(ctx, actor, s);
  throw new AppError('GIT_PROVIDER_NOT_CONNECTED', 'this instance has no GitHub App or OAuth app configured');
}

async function connectOauth(ctx: AppContext, actor: Actor, s: OrgSources): Promise<ConnectAnswer> {
  if (s.oauth) return { connected: true };
  const g = ctx.config.github;
  if (!g.clientId) throw invalid('source', 'OAuth is not configured on this instance (BERTH_GITHUB_CLIENT_ID)');
  if (ctx.config.mode === 'self-hosted') {
    // Self-hosted: device login (no public callback needed).
    const d = await gh.startDeviceFlow(ctx);
    const id = newId('ghd');
    await store.insertDeviceFlow(ctx.db, {
      id,
      orgId: actor.orgId,
      userId: actor.userId,
      deviceCode: encryptSecret(ctx.keyring, d.deviceCode, `gitprovider:device:${id}`),
      intervalSeconds: d.interval,
      status: 'pending',
      expiresAt: new Date(Date.now() + d.expiresIn * 1000).toISOString(),
      lastPolledAt: null,
      createdAt: nowIso(),
    });
    return { connected: false, flow: 'device_code', userCode: d.userCode, verificationUri: d.verificationUri, expiresIn: d.expiresIn, interval: d.interval };
  }
  if (!g.clientSecret) throw invalid('source', 'OAuth is not configured on this instance (BERTH_GITHUB_CLIENT_SECRET)');
  const url = new URL(`${g.webUrl}/login/oauth/authorize`);
  url.searchParams.set('client_id', g.clientId);
  url.searchParams.set('redirect_uri', redirectUri(ctx));
  url.searchParams.set('scope', 'repo admin:repo_hook read:org');
  url.searchParams.set('state', signState(ctx, actor, 'oauth'));
  return { connected: false, flow: 'redirect', url: url.toString() };
}

async function connectCli(ctx: AppContext, actor: Actor, s: OrgSources): Promise<ConnectAnswer> {
  if (ctx.config.mode !== 'self-hosted') throw invalid('source', 'the gh CLI source exists only on a self-hosted instance');
  const token = await gh.ghToken(ctx);
  const host = gh.ghHostname(ctx);
  const terminal: ConnectAnswer = {
    connected: false,
    flow: 'terminal',
    command: `${ctx.config.ghBin} auth login --hostname ${host}`,
    message: `Sign in with the GitHub CLI on the machine running Berth, then connect again.`,
  };
  if (!token) return terminal;
  let user: { login: string; type?: string };
  try {
    user = (await (await gh.octokitFor(ctx, token)).request('GET /user')).data;
  } catch {
    return terminal;
  }
  if (s.cli && s.cli.login === user.login) return { connected: true };
  await store.upsertConnection(ctx.db, { orgId: actor.orgId, source: 'cli', login: user.login, accountType: user.type ?? 'User', token: null, createdBy: actor.userId });
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.connect', resourceType: 'gitprovider', details: { source: 'cli', login: user.login } });
  return { connected: true };
}

/** Seals and stores an org's OAuth token (from the redirect or the device login); answers the account's login. */
export async function storeOauthToken(ctx: AppContext, orgId: string, userId: string, token: string): Promise<string> {
  const user = (await gh.call(async () => (await gh.octokitFor(ctx, token)).request('GET /user'), 'account')).data;
  await store.upsertConnection(ctx.db, {
    orgId,
    source: 'oauth',
    login: user.login,
    accountType: user.type ?? 'User',
    token: encryptSecret(ctx.keyring, token, oauthAad(orgId)),
    createdBy: userId,
  });
  await insertAuditEvent(ctx.db, { orgId, actorId: userId, action: 'gitprovider.connect', resourceType: 'gitprovider', details: { source: 'oauth', login: user.login } });
  return user.login;
}

export async function pollDevice(ctx: AppContext, actor: Actor): Promise<DevicePollAnswer> {
  const flow = await store.latestDeviceFlow(ctx.db, actor.orgId, actor.userId);
  if (!flow) throw new AppError('NOT_FOUND', 'no device login in progress: start one with POST /api/gitprovider/connect');
  if (flow.status !== 'pending') return { status: flow.status as 'connected' | 'expired' | 'denied' };
  if (Date.parse(flow.expiresAt) <= Date.now()) {
    await store.updateDeviceFlow(ctx.db, actor.orgId, flow.id, { status: 'expired' });
    return { status: 'expired' };
  }
  // Respect GitHub's interval: a poll sooner than that does not reach GitHub.
  if (flow.lastPolledAt && Date.now() - Date.parse(flow.lastPolledAt) < flow.intervalSeconds * 1000) return { status: 'pending' };
  await store.updateDeviceFlow(ctx.db, actor.orgId, flow.id, { lastPolledAt: nowIso() });
  const code = decryptSecret(ctx.keyring, flow.deviceCode, `gitprovider:device:${flow.id}`);
  const res = await gh.pollDeviceFlow(ctx, code);
  if (res.status === 'pending') {
    if (res.slowDown) await store.updateDeviceFlow(ctx.db, actor.orgId, flow.id, { intervalSeconds: flow.intervalSeconds + 5 });
    return { status: 'pending' };
  }
  if (res.status === 'connected') {
    await storeOauthToken(ctx, actor.orgId, actor.userId, res.token);
    await store.updateDeviceFlow(ctx.db, actor.orgId, flow.id, { status: 'connected' });
    return { status: 'connected' };
  }
  await store.updateDeviceFlow(ctx.db, actor.orgId, flow.id, { status: res.status });
  return { status: res.status };
}

export async function disconnect(ctx: AppContext, actor: Actor, source: 'oauth' | 'cli' | 'all'): Promise<{ source: 'oauth' | 'cli' | 'all'; disconnected: boolean }> {
  const out = await transaction(ctx.db, async (tx) => {
    const sources = source === 'all' ? ['oauth', 'cli'] : [source];
    const connections = await store.deleteConnections(tx, actor.orgId, sources);
    const installations = source === 'all' ? await store.releaseInstallations(tx, actor.orgId) : 0;
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.disconnect', resourceType: 'gitprovider', details: { source } });
    return { connections, installations };
  });
  return { source, disconnected: out.connections + out.installations > 0 };
}
