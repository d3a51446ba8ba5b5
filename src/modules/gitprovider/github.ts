import { spawn } from 'node:child_process';
import { createHmac, createSign } from 'node:crypto';
import type { Octokit } from '@octokit/core';
import type { RequestError } from '@octokit/request-error';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';

/**
 * Talking to GitHub: the App JWT, installation tokens (cached until shortly before expiry), OAuth
 * code and device flows, the `gh` CLI, and octokit clients on BERTH_GITHUB_API_URL (which may carry
 * a path such as /api/v3 on GitHub Enterprise Server).
 */

const UPSTREAM_TIMEOUT_MS = 15000;

export function appConfigured(ctx: AppContext): boolean {
  const g = ctx.config.github;
  return !!(g.appId && g.appPrivateKey);
}

export function oauthConfigured(ctx: AppContext): boolean {
  return !!ctx.config.github.clientId;
}

/**
 * An octokit client (@octokit/core: requests only, no retry or throttling plugins, so callers answer
 * fast) on the configured API base.
 */
export async function octokitFor(ctx: AppContext, token: string): Promise<Octokit> {
  // Loaded on first use: a server that never talks to GitHub does not hold octokit in memory.
  const { Octokit } = await import('@octokit/core');
  // A JWT (the App) is sent as `Bearer`, any other token as `token` (@octokit/auth-token decides).
  return new Octokit({
    auth: token,
    baseUrl: ctx.config.github.apiUrl,
    userAgent: 'berth',
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    request: {
      fetch: (url: string, init: RequestInit) => fetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(UPSTREAM_TIMEOUT_MS) }),
    },
  } as ConstructorParameters<typeof Octokit>[0]);
}

/** The GitHub App's JWT (RS256, iss = app id, 9 minutes, issued 60 s in the past for clock drift). */
export function appJwt(ctx: AppContext, now = Date.now()): string {
  const g = ctx.config.github;
  if (!g.appId || !g.appPrivateKey) throw new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no GitHub App is configured on this instance');
  const iat = Math.floor(now / 1000) - 60;
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ iat, exp: iat + 600 - 60, iss: g.appId })).toString('base64url');
  const signer = createSign('RSA-SHA256');
  signer.update(`${header}.${payload}`);
  const sig = signer.sign(g.appPrivateKey.replace(/\\n/g, '\n')).toString('base64url');
  return `${header}.${payload}.${sig}`;
}

/** An octokit authenticated as the App itself (JWT). */
export function appOctokit(ctx: AppContext): Promise<Octokit> {
  return octokitFor(ctx, appJwt(ctx));
}

export interface InstallationToken {
  token: string;
  expiresAt: string;
}

const REFRESH_MARGIN_MS = 5 * 60 * 1000;

/** Installation tokens by `${apiUrl}|${installationId}`, kept until shortly before they expire, and how many were minted. */
export interface InstallationTokenCache {
  tokens: Map<string, { token: string; expiresAt: string }>;
  /** Tokens minted by this server (tests read it to check the cache). */
  minted: number;
}

/** The git provider area's per-server state (`ctx.state.gitprovider`, made by its module). */
export interface GitproviderState {
  /** This server's GitHub App installation tokens, cached and counted. */
  installationTokens: InstallationTokenCache;
}

declare module '../../state.js' {
  interface AreaState {
    gitprovider: GitproviderState;
  }
}

/** A server's empty state: no installation token yet. */
export function createGitproviderState(): GitproviderState {
  return { installationTokens: { tokens: new Map(), minted: 0 } };
}

/** This server's installation token cache. */
function tokenCache(ctx: AppContext): InstallationTokenCache {
  return ctx.state.gitprovider.installationTokens;
}

export function forgetInstallationToken(ctx: AppContext, installationId: string): void {
  tokenCache(ctx).tokens.delete(`${ctx.config.github.apiUrl}|${installationId}`);
}

/** A cached installation token for API calls, refreshed shortly before it expires (5 minutes). */
export async function installationToken(ctx: AppContext, installationId: string): Promise<InstallationToken> {
  const key = `${ctx.config.github.apiUrl}|${installationId}`;
  const hit = tokenCache(ctx).tokens.get(key);
  if (hit && Date.parse(hit.expiresAt) - Date.now() > REFRESH_MARGIN_MS) return hit;
  const fresh = await mintInstallationToken(ctx, installationId);
  tokenCache(ctx).tokens.set(key, fresh);
  return fresh;
}

/** A new installation token; with `repositories`, scoped to those repositories and read-only contents. */
export async function mintInstallationToken(ctx: AppContext, installationId: string, repositories?: string[]): Promise<InstallationToken> {
  const body: Record<string, unknown> = {};
  if (repositories) {
    body.repositories = repositories;
    body.permissions = { contents: 'read', metadata: 'read' };
  }
  const res = await call(async () =>
    (await appOctokit(ctx)).request('POST /app/installations/{installation_id}/access_tokens', { installation_id: Number(installationId), ...body }),
  );
  tokenCache(ctx).minted++;
  return { token: res.data.token, expiresAt: res.data.expires_at };
}

/** Maps an upstream failure to the closed error set; never echoes upstream bodies or credentials. */
export async function call<T>(fn: () => Promise<T>, what = 'repository'): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw upstreamError(e, what);
  }
}

/** octokit's RequestError, recognised without loading octokit (its name is `HttpError`). */
function isRequestError(e: unknown): e is RequestError {
  return e instanceof Error && e.name === 'HttpError' && typeof (e as { status?: unknown }).status === 'number';
}

export function upstreamError(e: unknown, what = 'repository'): AppError {
  if (e instanceof AppError) return e;
  if (isRequestError(e)) {
    if (e.status === 404) return new AppError('NOT_FOUND', `${what} not found or not visible to the connected GitHub account`);
    if (e.status === 401) return new AppError('GIT_PROVIDER_NOT_CONNECTED', 'GitHub refused the stored credential: connect again');
    if (e.status === 403) return new AppError('FORBIDDEN', 'GitHub refused this operation for the connected account');
    if (e.status === 409) return new AppError('CONFLICT', 'GitHub reported a conflict (for example an empty repository)');
    if (e.status === 422) {
      const msg = JSON.stringify((e.response?.data as { errors?: unknown })?.errors ?? '');
      if (/already exists/i.test(msg)) return new AppError('CONFLICT', `${what} already exists`);
      return new AppError('VALIDATION_FAILED', `GitHub refused the request as invalid`);
    }
  }
  return new AppError('INTERNAL', 'GitHub did not answer as expected; try again');
}

// ---------------------------------------------------------------- OAuth (web base)

async function webPost(ctx: AppContext, path: string, body: Record<string, string>): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${ctx.config.github.webUrl}${path}`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', 'user-agent': 'berth' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch {
    throw new AppError('INTERNAL', 'GitHub could not be reached; try again');
  }
  if (!res.ok) throw new AppError('INTERNAL', `GitHub answered ${res.status}; try again`);
  try {
    return (await res.json()) as Record<string, unknown>;
  } catch {
    throw new AppError('INTERNAL', 'GitHub did not answer as expected; try again');
  }
}

/** Exchanges an OAuth `code` for a user access token; null when GitHub refuses the code. */
export async function exchangeOAuthCode(ctx: AppContext, code: string, redirectUri: string): Promise<string | null> {
  const g = ctx.config.github;
  if (!g.clientId || !g.clientSecret) throw new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no OAuth app is configured on this instance');
  const out = await webPost(ctx, '/login/oauth/access_token', { client_id: g.clientId, client_secret: g.clientSecret, code, redirect_uri: redirectUri });
  return typeof out.access_token === 'string' ? out.access_token : null;
}

export interface DeviceCode {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  expiresIn: number;
  interval: number;
}

export async function startDeviceFlow(ctx: AppContext): Promise<DeviceCode> {
  const g = ctx.config.github;
  if (!g.clientId) throw new AppError('GIT_PROVIDER_NOT_CONNECTED', 'no OAuth app is configured on this instance');
  const out = await webPost(ctx, '/login/device/code', { client_id: g.clientId, scope: 'repo admin:repo_hook read:org' });
  if (typeof out.device_code !== 'string' || typeof out.user_code !== 'string') throw new AppError('INTERNAL', 'GitHub did not start a device login');
  return {
    deviceCode: out.device_code,
    userCode: out.user_code,
    verificationUri: String(out.verification_uri ?? `${g.webUrl}/login/device`),
    expiresIn: Number(out.expires_in ?? 900),
    interval: Number(out.interval ?? 5),
  };
}

export type DevicePoll = { status: 'pending'; slowDown?: boolean } | { status: 'connected'; token: string } | { status: 'expired' } | { status: 'denied' };

export async function pollDeviceFlow(ctx: AppContext, deviceCode: string): Promise<DevicePoll> {
  const g = ctx.config.github;
  const out = await webPost(ctx, '/login/oauth/access_token', {
    client_id: g.clientId ?? '',
    device_code: deviceCode,
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
  });
  if (typeof out.access_token === 'string') return { status: 'connected', token: out.access_token };
  switch (out.error) {
    case 'authorization_pending':
      return { status: 'pending' };
    case 'slow_down':
      return { status: 'pending', slowDown: true };
    case 'expired_token':
      return { status: 'expired' };
    case 'access_denied':
      return { status: 'denied' };
    default:
      return { status: 'denied' };
  }
}

// ---------------------------------------------------------------- gh CLI

function run(bin: string, args: string[], timeoutMs = 10000): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ code, stdout });
    };
    let child;
    try {
      child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, GH_PROMPT_DISABLED: '1', NO_COLOR: '1' } });
    } catch {
      return finish(127);
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(124);
    }, timeoutMs);
    child.stdout!.on('data', (d: Buffer) => {
      if (stdout.length < 64 * 1024) stdout += d.toString('utf8');
    });
    child.on('error', () => finish(127));
    child.on('close', (code) => finish(code ?? 1));
  });
}

/** The GitHub host `gh` should talk to (github.com, or the Enterprise host of BERTH_GITHUB_WEB_URL). */
export function ghHostname(ctx: AppContext): string {
  try {
    return new URL(ctx.config.github.webUrl).host;
  } catch {
    return 'github.com';
  }
}

/** The host's `gh` token, or null when gh is missing or not signed in. Never stored. */
export async function ghToken(ctx: AppContext): Promise<string | null> {
  const host = ghHostname(ctx);
  const status = await run(ctx.config.ghBin, ['auth', 'status', '--hostname', host]);
  if (status.code !== 0) return null;
  const out = await run(ctx.config.ghBin, ['auth', 'token', '--hostname', host]);
  const token = out.stdout.trim();
  if (out.code !== 0 || !token || token.length > 512 || /\s/.test(token)) return null;
  return token;
}

/** HMAC key for signing redirect `state` values, derived from the instance's secret key. */
export function stateKey(ctx: AppContext): Buffer {
  return createHmac('sha256', ctx.keyring.current.key).update('berth:gitprovider:state:v1').digest();
}
