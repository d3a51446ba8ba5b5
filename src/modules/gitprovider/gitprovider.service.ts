import { createHmac, randomBytes } from 'node:crypto';
import type { Octokit } from '@octokit/core';
import type { Actor } from '../../authz/actor.js';
import { authorize, can } from '../../authz/authorize.js';
import type { GrantKey } from '../../authz/grants.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, invalid } from '../../lib/errors.js';
import { decryptSecret, encryptSecret, hmacSha256Hex, safeEqual } from '../../lib/crypto.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import { createDeployment } from '../deployments/deployments.service.js';
import { newId, nowIso } from '../../lib/ids.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';
import { cloudGithubUnreachable } from '../cloud/link.js';

// ---------------------------------------------------------------- record shapes (contract section 7)

export type Source = 'app' | 'oauth' | 'cli';

export interface Account {
  login: string;
  type: string;
  source: Source;
  installationId?: string;
}

export interface Repo {
  id: number;
  owner: string;
  name: string;
  fullName: string;
  private: boolean;
  defaultBranch: string;
  cloneUrl: string;
}

export interface Branch {
  name: string;
  commit: string;
  protected: boolean;
}

export interface FileEntry {
  name: string;
  path: string;
  type: 'file' | 'dir';
  size: number;
}

export interface Webhook {
  id: number;
  url: string;
  events: string[];
  active: boolean;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function toRepo(ctx: AppContext, r: any): Repo {
  const owner = String(r.owner?.login ?? '');
  return {
    id: Number(r.id),
    owner,
    name: String(r.name),
    fullName: String(r.full_name ?? `${owner}/${r.name}`),
    private: !!r.private,
    defaultBranch: String(r.default_branch ?? 'main'),
    cloneUrl: cloneUrlOf(ctx, owner, String(r.name)),
  };
}

function toWebhook(h: any): Webhook {
  return { id: Number(h.id), url: String(h.config?.url ?? ''), events: Array.isArray(h.events) ? h.events.map(String) : [], active: h.active !== false };
}

/** The HTTPS clone URL on the configured web base (no credential in it). */
export function cloneUrlOf(ctx: AppContext, owner: string, repo: string): string {
  return `${ctx.config.github.webUrl}/${owner}/${repo}.git`;
}

const MAX_PAGES = 10;

async function paginate<T>(fn: (page: number) => Promise<{ items: any[]; hasNext: boolean }>, map: (x: any) => T): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { items, hasNext } = await fn(page);
    out.push(...items.map(map));
    if (!hasNext) break;
  }
  return out;
}

function hasNextPage(headers: Record<string, unknown>): boolean {
  return /rel="next"/.test(String(headers.link ?? ''));
}

// ---------------------------------------------------------------- what the org has connected

interface OrgSources {
  installations: store.InstallationRow[];
  oauth?: store.ConnectionRow;
  cli?: store.ConnectionRow;
}

async function orgSources(ctx: AppContext, orgId: string): Promise<OrgSources> {
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

const oauthAad = (orgId: string) => `gitprovider:oauth:${orgId}`;

interface Cred {
  source: Source;
  token: string;
  installationId?: string;
}

async function userCreds(ctx: AppContext, orgId: string, s: OrgSources): Promise<Cred[]> {
  const out: Cred[] = [];
  if (s.oauth?.token) out.push({ source: 'oauth', token: decryptSecret(ctx.keyring, s.oauth.token, oauthAad(orgId)) });
  if (s.cli) {
    const t = await gh.ghToken(ctx);
    if (t) out.push({ source: 'cli', token: t });
  }
  return out;
}

function installationFor(s: OrgSources, owner: string): store.InstallationRow | undefined {
  return s.installations.find((i) => i.accountLogin.toLowerCase() === owner.toLowerCase());
}

function notConnected(): AppError {
  return new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no GitHub App installation, OAuth account or gh CLI login is connected to this organization');
}

/**
 * The credential for one owner's repositories: the App installation for that owner, else the OAuth
 * account, else the host's gh CLI. Nothing usable at all is 400; sources that cannot see the owner
 * make the repository 404.
 */
async function credFor(ctx: AppContext, orgId: string, owner: string): Promise<Cred & { sources: OrgSources }> {
  const s = await orgSources(ctx, orgId);
  const inst = installationFor(s, owner);
  if (inst) return { source: 'app', token: (await gh.installationToken(ctx, inst.installationId)).token, installationId: inst.installationId, sources: s };
  const users = await userCreds(ctx, orgId, s);
  if (users[0]) return { ...users[0], sources: s };
  if (s.installations.length) throw new AppError('NOT_FOUND', 'repository not found or not visible to the connected GitHub account');
  throw notConnected();
}

async function clientFor(ctx: AppContext, orgId: string, owner: string): Promise<{ kit: Octokit; cred: Cred & { sources: OrgSources } }> {
  const cred = await credFor(ctx, orgId, owner);
  return { kit: await gh.octokitFor(ctx, cred.token), cred };
}

// ---------------------------------------------------------------- authorization helpers

/** Grant keys covering a repository: the repo (`owner/repo`, lowercase) and its owner's installation. */
function repoKeys(s: OrgSources, owner: string, repo: string): GrantKey[] {
  const keys: GrantKey[] = [{ type: 'gitprovider_repository', id: `${owner}/${repo}`.toLowerCase() }];
  const inst = installationFor(s, owner);
  if (inst) keys.push({ type: 'gitprovider_installation', id: inst.installationId });
  return keys;
}

function checkRepo(actor: Actor, tag: string, s: OrgSources, owner: string, repo: string): void {
  authorize(actor, tag, { orgId: actor.orgId, grantKeys: repoKeys(s, owner, repo) }, 'repository');
}

function canSeeRepo(actor: Actor, s: OrgSources, owner: string, repo: string): boolean {
  return can(actor, 'gitprovider:read', { orgId: actor.orgId, grantKeys: repoKeys(s, owner, repo) });
}

function canSeeAccount(actor: Actor, a: Account): boolean {
  if (actor.role !== 'restricted') return true;
  if (a.installationId && can(actor, 'gitprovider:read', { orgId: actor.orgId, grantKeys: [{ type: 'gitprovider_installation', id: a.installationId }] })) return true;
  // An account is visible when a repository grant of the actor sits under it.
  const prefix = `${a.login.toLowerCase()}/`;
  return actor.grants.some((g) => g.resourceType === 'gitprovider_repository' && g.permissions.length > 0 && (g.resourceId === '*' || g.resourceId.toLowerCase().startsWith(prefix)));
}

/** Resolver `gitprovider`: the org's git provider, covered by the org's git grants (narrowed to an owner when the path names one). */
export async function resolveGitprovider(ctx: AppContext, orgId: string, owner: string) {
  const all = await store.gitGrantKeys(ctx.db, orgId);
  let keys = all;
  if (owner) {
    const inst = gh.appConfigured(ctx) ? (await store.listInstallations(ctx.db, orgId)).find((i) => i.accountLogin.toLowerCase() === owner.toLowerCase()) : undefined;
    const prefix = `${owner.toLowerCase()}/`;
    keys = all.filter((k) => (k.type === 'gitprovider_repository' && k.id.toLowerCase().startsWith(prefix)) || (k.type === 'gitprovider_installation' && inst && k.id === inst.installationId));
  }
  return { kind: 'gitprovider', id: owner || orgId, orgId, grantKeys: keys as GrantKey[] };
}

// ---------------------------------------------------------------- status, home

/** The org-level check of status and home: the tag against the org's git grants (any of them widens a restricted member). */
export async function authorizeProvider(ctx: AppContext, actor: Actor, tag: string): Promise<void> {
  authorize(actor, tag, await resolveGitprovider(ctx, actor.orgId, ''), 'git provider');
}

function installUrl(ctx: AppContext, actor: Actor): string | null {
  const g = ctx.config.github;
  if (!gh.appConfigured(ctx) || !g.appSlug) return null;
  return `${g.webUrl}/apps/${encodeURIComponent(g.appSlug)}/installations/new?state=${encodeURIComponent(signState(ctx, actor, 'install'))}`;
}

async function accountsOf(ctx: AppContext, orgId: string, s: OrgSources, checkCli: boolean): Promise<Account[]> {
  const out: Account[] = s.installations.map((i) => ({ login: i.accountLogin, type: i.accountType, source: 'app' as const, installationId: i.installationId }));
  if (s.oauth) out.push({ login: s.oauth.login, type: s.oauth.accountType, source: 'oauth' });
  if (s.cli && (!checkCli || (await gh.ghToken(ctx)))) out.push({ login: s.cli.login, type: s.cli.accountType, source: 'cli' });
  return out;
}

export async function status(ctx: AppContext, actor: Actor) {
  const s = await orgSources(ctx, actor.orgId);
  const all = await accountsOf(ctx, actor.orgId, s, true);
  const accounts = all.filter((a) => canSeeAccount(actor, a));
  const usable = all.length > 0;
  return {
    state: usable ? ('connected' as const) : ('not_connected' as const),
    accounts,
    installUrl: can(actor, 'gitprovider:write') ? installUrl(ctx, actor) : null,
    cloudUnreachable: await cloudGithubUnreachable(ctx),
  };
}

export async function home(ctx: AppContext, actor: Actor) {
  const st = await status(ctx, actor);
  let repos: Repo[] = [];
  if (st.state === 'connected') repos = await listRepos(ctx, actor, {});
  return { state: st.state, accounts: st.accounts, repos };
}

export async function localStatus(ctx: AppContext) {
  const token = await gh.ghToken(ctx);
  if (!token) return { installed: await ghInstalled(ctx), authenticated: false, login: null, hostname: gh.ghHostname(ctx) };
  let login: string | null = null;
  try {
    login = (await (await gh.octokitFor(ctx, token)).request('GET /user')).data.login;
  } catch {
    login = null;
  }
  return { installed: true, authenticated: login !== null, login, hostname: gh.ghHostname(ctx) };
}

async function ghInstalled(ctx: AppContext): Promise<boolean> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    try {
      const c = spawn(ctx.config.ghBin, ['--version'], { stdio: 'ignore' });
      const t = setTimeout(() => c.kill('SIGKILL'), 5000);
      c.on('error', () => (clearTimeout(t), resolve(false)));
      c.on('close', (code) => (clearTimeout(t), resolve(code === 0)));
    } catch {
      resolve(false);
    }
  });
}

// ---------------------------------------------------------------- signed state (redirect flows)

const STATE_TTL_MS = 10 * 60 * 1000;

interface StatePayload {
  n: string;
  o: string;
  u: string;
  p: 'oauth' | 'install';
  e: number;
}

export function signState(ctx: AppContext, actor: Actor, purpose: 'oauth' | 'install'): string {
  const payload: StatePayload = { n: randomBytes(16).toString('base64url'), o: actor.orgId, u: actor.userId, p: purpose, e: Date.now() + STATE_TTL_MS };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const sig = createHmac('sha256', gh.stateKey(ctx)).update(body).digest('base64url');
  return `${body}.${sig}`;
}

/** Verifies a state: signature, expiry, purpose, and single use. */
async function consumeState(ctx: AppContext, state: string | undefined, purpose: 'oauth' | 'install'): Promise<StatePayload> {
  const bad = () => invalid('state', 'state is missing, invalid, expired or already used: start the connection again');
  if (!state) throw bad();
  const [body, sig] = state.split('.');
  if (!body || !sig) throw bad();
  const expected = createHmac('sha256', gh.stateKey(ctx)).update(body).digest('base64url');
  if (!safeEqual(sig, expected)) throw bad();
  let p: StatePayload;
  try {
    p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as StatePayload;
  } catch {
    throw bad();
  }
  if (p.p !== purpose || typeof p.e !== 'number' || p.e < Date.now() || typeof p.n !== 'string' || typeof p.o !== 'string') throw bad();
  if (!(await store.isMember(ctx.db, p.o, p.u))) throw bad();
  if (!(await store.useStateNonce(ctx.db, p.n, p.o, new Date(p.e).toISOString()))) throw bad();
  return p;
}

// ---------------------------------------------------------------- connect

export type ConnectAnswer =
  | { connected: true }
  | { connected: false; flow: 'redirect'; url: string }
  | { connected: false; flow: 'device_code'; userCode: string; verificationUri: string; expiresIn: number; interval: number }
  | { connected: false; flow: 'terminal'; command: string; message: string };

function redirectUri(ctx: AppContext): string {
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

async function storeOauthToken(ctx: AppContext, orgId: string, userId: string, token: string): Promise<string> {
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

/** The public callback: an OAuth `code`, or an App `installation_id` with `setup_action`. Both carry our signed state. */
export async function completeRedirect(
  ctx: AppContext,
  q: { code?: string; state?: string; installation_id?: string; setup_action?: string },
): Promise<{ orgId: string; source: 'oauth' | 'app'; login: string }> {
  if (q.installation_id) {
    if (!/^\d{1,20}$/.test(q.installation_id)) throw invalid('installation_id', 'installation_id must be a number');
    if (!gh.appConfigured(ctx)) throw invalid('installation_id', 'no GitHub App is configured on this instance');
    const st = await consumeState(ctx, q.state, 'install');
    // Ask GitHub (as the App) which account the installation belongs to; a made-up id is 404 there.
    let inst: any;
    try {
      inst = (await (await gh.appOctokit(ctx)).request('GET /app/installations/{installation_id}', { installation_id: Number(q.installation_id) })).data;
    } catch (e) {
      const err = gh.upstreamError(e, 'installation');
      if (err.code === 'NOT_FOUND') throw invalid('installation_id', 'GitHub does not know this installation of the App');
      throw err;
    }
    // With "request user authorization during installation", GitHub also sends a code: check that the
    // user who installed can see this installation.
    if (q.code && ctx.config.github.clientSecret) {
      const token = await gh.exchangeOAuthCode(ctx, q.code, redirectUri(ctx));
      if (!token) throw invalid('code', 'GitHub refused the authorization code');
      const mine = (await gh.call(async () => (await gh.octokitFor(ctx, token)).request('GET /user/installations', { per_page: 100 }), 'installation')).data;
      if (!mine.installations.some((i: any) => String(i.id) === q.installation_id)) throw invalid('installation_id', 'this installation is not visible to the signed-in GitHub user');
    }
    const account = inst.account ?? {};
    await store.upsertInstallation(ctx.db, {
      installationId: q.installation_id,
      accountLogin: String(account.login ?? ''),
      accountType: String(account.type ?? 'User'),
      accountId: account.id !== undefined ? String(account.id) : null,
    });
    if (!(await store.claimInstallation(ctx.db, q.installation_id, st.o, st.u))) {
      throw new AppError('CONFLICT', 'this installation is already connected to another organization');
    }
    await insertAuditEvent(ctx.db, { orgId: st.o, actorId: st.u, action: 'gitprovider.install', resourceType: 'gitprovider_installation', resourceId: q.installation_id, details: { login: account.login } });
    return { orgId: st.o, source: 'app', login: String(account.login ?? '') };
  }
  if (!q.code) throw invalid('code', 'code is required');
  const st = await consumeState(ctx, q.state, 'oauth');
  const token = await gh.exchangeOAuthCode(ctx, q.code, redirectUri(ctx));
  if (!token) throw invalid('code', 'GitHub refused the authorization code; start the connection again');
  const login = await storeOauthToken(ctx, st.o, st.u, token);
  return { orgId: st.o, source: 'oauth', login };
}

export async function pollDevice(ctx: AppContext, actor: Actor): Promise<{ status: 'pending' | 'connected' | 'expired' | 'denied' }> {
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

export async function disconnect(ctx: AppContext, actor: Actor, source: 'oauth' | 'cli' | 'all') {
  const out = await transaction(ctx.db, async (tx) => {
    const sources = source === 'all' ? ['oauth', 'cli'] : [source];
    const connections = await store.deleteConnections(tx, actor.orgId, sources);
    const installations = source === 'all' ? await store.releaseInstallations(tx, actor.orgId) : 0;
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.disconnect', resourceType: 'gitprovider', details: { source } });
    return { connections, installations };
  });
  return { source, disconnected: out.connections + out.installations > 0 };
}

// ---------------------------------------------------------------- repositories

async function reposFrom(ctx: AppContext, cred: Cred, owner?: string): Promise<Repo[]> {
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

/** Repositories the org's sources can see (optionally one owner's), filtered to what the actor may read. */
export async function listRepos(ctx: AppContext, actor: Actor, q: { owner?: string }): Promise<Repo[]> {
  const s = await orgSources(ctx, actor.orgId);
  const creds: Cred[] = [];
  for (const i of s.installations) {
    if (q.owner && i.accountLogin.toLowerCase() !== q.owner.toLowerCase()) continue;
    creds.push({ source: 'app', installationId: i.installationId, token: (await gh.installationToken(ctx, i.installationId)).token });
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

export async function listOwnerRepos(ctx: AppContext, actor: Actor, owner: string): Promise<Repo[]> {
  const s = await orgSources(ctx, actor.orgId);
  const inst = installationFor(s, owner);
  let repos: Repo[];
  if (inst) {
    repos = await reposFrom(ctx, { source: 'app', installationId: inst.installationId, token: (await gh.installationToken(ctx, inst.installationId)).token }, owner);
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
    const kit = await gh.octokitFor(ctx, (await gh.installationToken(ctx, inst.installationId)).token);
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

async function fetchRepo(ctx: AppContext, kit: Octokit, owner: string, repo: string): Promise<Repo> {
  return toRepo(ctx, (await gh.call(() => kit.request('GET /repos/{owner}/{repo}', { owner, repo }))).data);
}

async function fetchBranches(kit: Octokit, owner: string, repo: string): Promise<Branch[]> {
  return paginate(
    async (page) => {
      const r = await gh.call(() => kit.request('GET /repos/{owner}/{repo}/branches', { owner, repo, per_page: 100, page }));
      return { items: r.data, hasNext: hasNextPage(r.headers) };
    },
    (b: any) => ({ name: String(b.name), commit: String(b.commit?.sha ?? ''), protected: !!b.protected }),
  );
}

/** Opens one repository for an actor: the credential, then the actor's rights on it. */
async function openRepo(ctx: AppContext, actor: Actor, tag: string, owner: string, repo: string) {
  const { kit, cred } = await clientFor(ctx, actor.orgId, owner);
  checkRepo(actor, tag, cred.sources, owner, repo);
  return { kit, cred };
}

export async function getRepo(ctx: AppContext, actor: Actor, owner: string, repo: string, withBranches: boolean): Promise<Repo & { branches?: Branch[] }> {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:read', owner, repo);
  const r = await fetchRepo(ctx, kit, owner, repo);
  return withBranches ? { ...r, branches: await fetchBranches(kit, owner, repo) } : r;
}

export async function deleteRepo(ctx: AppContext, actor: Actor, owner: string, repo: string) {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:admin', owner, repo);
  await gh.call(() => kit.request('DELETE /repos/{owner}/{repo}', { owner, repo }));
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.repo.delete', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: {} });
  return { deleted: true, fullName: `${owner}/${repo}` };
}

export async function listBranches(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<Branch[]> {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:list', owner, repo);
  return fetchBranches(kit, owner, repo);
}

function contentsRoute(path: string): string {
  const clean = path.replace(/^\/+|\/+$/g, '');
  if (clean.split('/').some((seg) => seg === '..' || seg === '.')) throw invalid('path', 'path must not contain . or .. segments');
  return clean ? `GET /repos/{owner}/{repo}/contents/${clean.split('/').map(encodeURIComponent).join('/')}` : 'GET /repos/{owner}/{repo}/contents';
}

export async function listFiles(ctx: AppContext, actor: Actor, owner: string, repo: string, q: { path?: string; branch?: string }): Promise<FileEntry[]> {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:list', owner, repo);
  const route = contentsRoute(q.path ?? '');
  const data = (await gh.call(() => kit.request(route as 'GET /repos/{owner}/{repo}/contents/{path}', { owner, repo, ...(q.branch ? { ref: q.branch } : {}) } as never), 'path')).data as any;
  const items: any[] = Array.isArray(data) ? data : [data];
  return items.map((x) => ({ name: String(x.name), path: String(x.path), type: x.type === 'dir' ? ('dir' as const) : ('file' as const), size: Number(x.size ?? 0) }));
}

export async function readFile(ctx: AppContext, actor: Actor, owner: string, repo: string, q: { file?: string; branch?: string }) {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:read', owner, repo);
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

// ---------------------------------------------------------------- clone tokens

const CLONE_TOKEN_MAX_MS = 59 * 60 * 1000;

/** A fresh installation token scoped to one repository (contents: read), for cloning. */
export async function cloneCredentialFor(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<{ username: string; token: string; cloneUrl: string; expiresAt: string }> {
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

export async function cloneToken(ctx: AppContext, actor: Actor, owner: string, repo: string) {
  const s = await orgSources(ctx, actor.orgId);
  checkRepo(actor, 'gitprovider:read', s, owner, repo);
  const c = await cloneCredentialFor(ctx, actor.orgId, owner, repo);
  const basic = Buffer.from(`${c.username}:${c.token}`).toString('base64');
  // The credential rides in a header, not in the URL, so it never lands in .git/config or a log line.
  const command = `git -c http.extraHeader="Authorization: Basic ${basic}" clone ${c.cloneUrl}`;
  return { token: c.token, cloneUrl: c.cloneUrl, command, expiresAt: c.expiresAt, username: c.username };
}

// ---------------------------------------------------------------- webhooks (at GitHub)

async function webhookTarget(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<string> {
  const linked = await store.projectsLinkedTo(ctx.db, orgId, owner, repo);
  const domain = linked.find((p) => p.webhookDomain)?.webhookDomain;
  return `${domain ? `https://${domain}` : ctx.publicUrl()}/api/gitprovider/webhook`;
}

export async function listWebhooks(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<Webhook[]> {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:list', owner, repo);
  const data = (await gh.call(() => kit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo, per_page: 100 }))).data;
  return data.map(toWebhook);
}

async function ensureHook(ctx: AppContext, kit: Octokit, owner: string, repo: string, url: string): Promise<{ hook: Webhook; created: boolean }> {
  const secret = ctx.config.github.webhookSecret;
  if (!secret) throw new AppError('CONFLICT', 'BERTH_GITHUB_WEBHOOK_SECRET is not set: deliveries would all be refused, so no webhook is registered');
  const hooks = (await gh.call(() => kit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo, per_page: 100 }))).data.map(toWebhook);
  const existing = hooks.find((h) => h.url === url);
  if (existing) {
    // Reuse: make sure it is active and delivers pushes, with our secret.
    if (!existing.active || !existing.events.includes('push')) {
      const upd = (
        await gh.call(() =>
          kit.request('PATCH /repos/{owner}/{repo}/hooks/{hook_id}', {
            owner,
            repo,
            hook_id: existing.id,
            active: true,
            add_events: ['push'],
            config: { url, content_type: 'json', secret, insecure_ssl: '0' },
          }),
        )
      ).data;
      return { hook: toWebhook(upd), created: false };
    }
    return { hook: existing, created: false };
  }
  const data = (
    await gh.call(() =>
      kit.request('POST /repos/{owner}/{repo}/hooks', { owner, repo, name: 'web', active: true, events: ['push'], config: { url, content_type: 'json', secret, insecure_ssl: '0' } }),
    )
  ).data;
  return { hook: toWebhook(data), created: true };
}

export async function registerWebhook(ctx: AppContext, actor: Actor, owner: string, repo: string) {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:write', owner, repo);
  const url = await webhookTarget(ctx, actor.orgId, owner, repo);
  const out = await ensureHook(ctx, kit, owner, repo, url);
  if (out.created) {
    await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.webhook.create', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: { hookId: out.hook.id } });
  }
  return out;
}

export async function deleteWebhook(ctx: AppContext, actor: Actor, owner: string, repo: string, hookId: number) {
  const { kit } = await openRepo(ctx, actor, 'gitprovider:admin', owner, repo);
  await gh.call(() => kit.request('DELETE /repos/{owner}/{repo}/hooks/{hook_id}', { owner, repo, hook_id: hookId }), 'webhook');
  const linked = (await store.projectsLinkedTo(ctx.db, actor.orgId, owner, repo)).filter((p) => p.webhookId === String(hookId));
  await store.clearProjectWebhook(ctx.db, actor.orgId, linked.map((p) => p.id));
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.webhook.delete', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: { hookId } });
  return { deleted: true, hookId };
}

// ---------------------------------------------------------------- the projects port

export const gitPortImpl = {
  async repository(ctx: AppContext, orgId: string, owner: string, repo: string) {
    const { kit } = await clientFor(ctx, orgId, owner);
    const r = await fetchRepo(ctx, kit, owner, repo);
    return { owner: r.owner, name: r.name, fullName: r.fullName, private: r.private, defaultBranch: r.defaultBranch, cloneUrl: r.cloneUrl };
  },
  async defaultBranch(ctx: AppContext, orgId: string, owner: string, repo: string) {
    return (await gitPortImpl.repository(ctx, orgId, owner, repo)).defaultBranch;
  },
  async branches(ctx: AppContext, orgId: string, owner: string, repo: string) {
    const { kit } = await clientFor(ctx, orgId, owner);
    return fetchBranches(kit, owner, repo);
  },
  async headCommit(ctx: AppContext, orgId: string, owner: string, repo: string, branch: string) {
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
  async ensureWebhook(ctx: AppContext, orgId: string, owner: string, repo: string, url: string) {
    const { kit } = await clientFor(ctx, orgId, owner);
    const { hook } = await ensureHook(ctx, kit, owner, repo, url);
    return { id: String(hook.id), url: hook.url };
  },
  async projectNotice(ctx: AppContext, orgId: string, projectId: string) {
    return projectNotice(ctx, orgId, projectId);
  },
};

// ---------------------------------------------------------------- incoming deliveries

export const DELIVERY_JOB = 'gitprovider.delivery';
const HANDLED_EVENTS = new Set(['push', 'installation', 'installation_repositories']);

/** Verifies `X-Hub-Signature-256` over the raw bytes in constant time; fails closed without a secret. */
export function verifySignature(secret: string | undefined, raw: Buffer, header: string | undefined): boolean {
  if (!secret || !header || !header.startsWith('sha256=')) return false;
  const expected = `sha256=${hmacSha256Hex(secret, raw)}`;
  return safeEqual(header, expected);
}

export async function receiveDelivery(
  ctx: AppContext,
  d: { raw: Buffer; signature?: string; event?: string; deliveryId?: string; hookId?: string },
): Promise<{ status: number; body: unknown }> {
  if (!verifySignature(ctx.config.github.webhookSecret, d.raw, d.signature)) {
    throw new AppError('UNAUTHENTICATED', ctx.config.github.webhookSecret ? 'missing or invalid X-Hub-Signature-256' : 'webhook deliveries are refused: BERTH_GITHUB_WEBHOOK_SECRET is not set');
  }
  if (!d.deliveryId || d.deliveryId.length > 128) throw invalid('X-GitHub-Delivery', 'X-GitHub-Delivery header is required');
  if (!d.event || d.event.length > 64) throw invalid('X-GitHub-Event', 'X-GitHub-Event header is required');
  let payload: unknown;
  try {
    payload = JSON.parse(d.raw.toString('utf8'));
  } catch {
    throw invalid('body', 'the delivery body is not JSON');
  }
  if (!payload || typeof payload !== 'object') throw invalid('body', 'the delivery body must be a JSON object');
  if (!HANDLED_EVENTS.has(d.event)) return { status: 200, body: { data: { received: true, ignored: true, event: d.event } } };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertDelivery(tx, { deliveryId: d.deliveryId!, event: d.event!, hookId: d.hookId && /^\d{1,20}$/.test(d.hookId) ? d.hookId : null, payload: d.raw.toString('utf8') });
      await ctx.jobs.enqueue(DELIVERY_JOB, { deliveryId: d.deliveryId }, { db: tx, maxAttempts: 5 });
    });
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    // A repeated delivery is a no-op, unless the first one failed for good: GitHub's "Redeliver"
    // sends the same id (and the same signed body), and it is how a user retries a push whose
    // processing failed.
    const requeued = await transaction(ctx.db, async (tx) => {
      if (!(await store.requeueFailedDelivery(tx, d.deliveryId!, d.raw.toString('utf8')))) return false;
      await ctx.jobs.enqueue(DELIVERY_JOB, { deliveryId: d.deliveryId }, { db: tx, maxAttempts: 5 });
      return true;
    });
    if (!requeued) return { status: 200, body: { data: { received: true, duplicate: true } } };
    ctx.jobs.wake();
    return { status: 202, body: { data: { received: true, queued: true, redelivered: true } } };
  }
  return { status: 202, body: { data: { received: true, queued: true } } };
}

/**
 * Runs one stored delivery (the jobs worker calls it). When its last attempt fails the delivery is
 * marked `failed` with the reason, so that a redelivery of the same id runs it again.
 */
export async function processDelivery(ctx: AppContext, deliveryId: string, attempt?: { attempts: number; maxAttempts: number }): Promise<void> {
  const row = await store.findDelivery(ctx.db, deliveryId);
  if (!row || row.status === 'done') return;
  try {
    const p = JSON.parse(row.payload) as any;
    let result: unknown = null;
    if (row.event === 'push') result = await onPush(ctx, p, row.hookId);
    else if (row.event === 'installation') result = await onInstallation(ctx, p);
    else if (row.event === 'installation_repositories') result = await onInstallationRepositories(ctx, p);
    await store.finishDelivery(ctx.db, deliveryId, 'done', result);
  } catch (e) {
    if (attempt && attempt.attempts >= attempt.maxAttempts) {
      await store.finishDelivery(ctx.db, deliveryId, 'failed', { error: String((e as Error)?.message ?? e).slice(0, 500) }).catch(() => {});
    }
    throw e;
  }
}

async function onPush(ctx: AppContext, p: any, hookId: string | null) {
  const ref = String(p.ref ?? '');
  if (!ref.startsWith('refs/heads/') || p.deleted || /^0+$/.test(String(p.after ?? '0'))) return { deployments: [] };
  const branch = ref.slice('refs/heads/'.length);
  const owner = String(p.repository?.owner?.login ?? p.repository?.owner?.name ?? '');
  const repo = String(p.repository?.name ?? '');
  const commit = String(p.after);
  const defaultBranch = String(p.repository?.default_branch ?? '');
  if (!owner || !repo) return { deployments: [] };
  let where: { orgId?: string; hookId?: string } = {};
  if (p.installation?.id !== undefined) {
    const inst = await store.findInstallationByGithubId(ctx.db, String(p.installation.id));
    if (inst?.orgId) where = { orgId: inst.orgId };
  }
  const projects: { id: string; orgId: string; gitBranch: string | null }[] = [];
  if (where.orgId) projects.push(...(await store.autoDeployProjects(ctx.db, where, owner, repo)));
  if (hookId) for (const pr of await store.autoDeployProjects(ctx.db, { hookId }, owner, repo)) if (!projects.some((x) => x.id === pr.id)) projects.push(pr);
  const created: string[] = [];
  for (const pr of projects) {
    if ((pr.gitBranch || defaultBranch) !== branch) continue;
    if (await store.pushDeploymentExists(ctx.db, pr.orgId, pr.id, commit)) continue;
    const id = await createPushDeployment(ctx, { orgId: pr.orgId, projectId: pr.id, commit, branch });
    if (id) created.push(id);
  }
  return { deployments: created };
}

/**
 * Creates a `push` deployment through the deployments area (queued row + build job), acting as the
 * GitHub integration of the project's org; the record carries the pushed commit.
 */
async function createPushDeployment(ctx: AppContext, p: { orgId: string; projectId: string; commit: string; branch: string }): Promise<string | null> {
  const system: Actor = { userId: 'github', email: '', orgId: p.orgId, role: 'owner', scopes: null, via: 'token', grants: [] };
  try {
    const d = await createDeployment(ctx, system, { projectId: p.projectId, ref: p.branch, commit: p.commit }, 'push');
    return d.id;
  } catch (e) {
    // A project that cannot deploy (disabled, no source) is skipped; the delivery is still done.
    if (e instanceof AppError && e.status < 500) {
      ctx.log.info({ projectId: p.projectId, reason: e.message }, 'push did not create a deployment');
      return null;
    }
    throw e;
  }
}

async function onInstallation(ctx: AppContext, p: any) {
  const inst = p.installation ?? {};
  const installationId = String(inst.id ?? '');
  if (!/^\d+$/.test(installationId)) return { ignored: true };
  const account = inst.account ?? {};
  if (p.action === 'created' || p.action === 'new_permissions_accepted' || p.action === 'unsuspend') {
    await store.upsertInstallation(ctx.db, { installationId, accountLogin: String(account.login ?? ''), accountType: String(account.type ?? 'User'), accountId: account.id !== undefined ? String(account.id) : null });
    return { recorded: installationId };
  }
  if (p.action === 'deleted' || p.action === 'suspend') {
    const row = await store.findInstallationByGithubId(ctx.db, installationId);
    gh.forgetInstallationToken(ctx, installationId);
    const paused: string[] = [];
    if (row?.orgId) {
      const orgId = row.orgId;
      const verb = p.action === 'deleted' ? 'uninstalled' : 'suspended';
      const reason = `auto-deploy paused: the GitHub App was ${verb} for ${row.accountLogin}`;
      await transaction(ctx.db, async (tx) => {
        for (const pr of await store.projectsLinkedTo(tx, orgId, row.accountLogin)) {
          if (!pr.autoDeploy) continue;
          await store.pauseAutoDeploy(tx, orgId, pr.id, reason);
          paused.push(pr.id);
        }
        await insertAuditEvent(tx, { orgId, actorId: null, action: `gitprovider.installation.${p.action}`, resourceType: 'gitprovider_installation', resourceId: installationId, details: { login: row.accountLogin, pausedProjects: paused } });
      });
    }
    if (p.action === 'deleted') await store.deleteInstallation(ctx.db, installationId);
    return { paused };
  }
  return { ignored: true };
}

async function onInstallationRepositories(ctx: AppContext, p: any) {
  const installationId = String(p.installation?.id ?? '');
  const row = await store.findInstallationByGithubId(ctx.db, installationId);
  if (!row?.orgId || p.action !== 'removed') return { ignored: true };
  const orgId = row.orgId;
  const unlinked: string[] = [];
  const removed: any[] = Array.isArray(p.repositories_removed) ? p.repositories_removed : [];
  await transaction(ctx.db, async (tx) => {
    for (const r of removed) {
      const full = String(r.full_name ?? `${row.accountLogin}/${r.name}`);
      const [owner, name] = [full.split('/')[0]!, full.split('/').slice(1).join('/')];
      for (const pr of await store.projectsLinkedTo(tx, orgId, owner, name)) {
        await store.unlinkProject(tx, orgId, pr.id, `repository ${full} was removed from the GitHub App installation; the project was unlinked and auto-deploy turned off`);
        unlinked.push(pr.id);
      }
    }
    if (unlinked.length) {
      await insertAuditEvent(tx, { orgId, actorId: null, action: 'gitprovider.installation.repositories_removed', resourceType: 'gitprovider_installation', resourceId: installationId, details: { unlinkedProjects: unlinked } });
    }
  });
  return { unlinked };
}

/** Why the provider paused or unlinked a project, while auto-deploy stays off; cleared once it is on again. */
export async function projectNotice(ctx: AppContext, orgId: string, projectId: string): Promise<{ reason: string; at: string } | null> {
  const n = await store.findNotice(ctx.db, orgId, projectId);
  if (!n) return null;
  if ((await store.projectAutoDeploy(ctx.db, orgId, projectId)) === 1) {
    await store.clearNotice(ctx.db, orgId, projectId);
    return null;
  }
  return n;
}

// ---------------------------------------------------------------- grantable resources (permissions catalog)

/** Catalog entries `{ id, label, meta }` of the org's installations or repositories (ids: installation id; `owner/repo` lowercase). */
export async function grantableResources(ctx: AppContext, orgId: string, type: 'gitprovider_installation' | 'gitprovider_repository', owner?: string) {
  const s = await orgSources(ctx, orgId);
  if (type === 'gitprovider_installation') {
    return s.installations.map((i) => ({ id: i.installationId, label: i.accountLogin, meta: { accountType: i.accountType } }));
  }
  const creds: Cred[] = [];
  for (const i of s.installations) {
    if (owner && i.accountLogin.toLowerCase() !== owner.toLowerCase()) continue;
    creds.push({ source: 'app', installationId: i.installationId, token: (await gh.installationToken(ctx, i.installationId)).token });
  }
  if (!creds.length) creds.push(...(await userCreds(ctx, orgId, s)).slice(0, 1));
  const seen = new Map<string, { id: string; label: string; meta: { owner: string; private: boolean } }>();
  for (const c of creds) {
    for (const r of await reposFrom(ctx, c, owner)) seen.set(r.fullName.toLowerCase(), { id: r.fullName.toLowerCase(), label: r.fullName, meta: { owner: r.owner, private: r.private } });
  }
  return [...seen.values()];
}

/** Housekeeping (leader-only, every 6 h): handled deliveries, device flows and used state nonces older than 30 days are forgotten. */
export async function pruneOld(ctx: AppContext): Promise<void> {
  await store.pruneOld(ctx.db, new Date(Date.now() - 30 * 24 * 3600_000).toISOString());
}
