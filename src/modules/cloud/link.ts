import type { Agent, Dispatcher } from 'undici';
import { loadUndici } from '../../lib/undici.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';

/**
 * The link of a self-hosted instance to a cloud instance: `BERTH_CLOUD_URL` + `BERTH_CLOUD_TOKEN`
 * (a personal access token of an org on the cloud). The token is only ever put in the
 * Authorization header of requests to the cloud; it is never logged, returned or stored.
 */
export interface CloudLink {
  url: string;
  token: string;
  /** Made on the first request over the link (undici is loaded then). */
  agent: Agent | null;
}

/** The instance's link, or null when this is a cloud instance, no link is configured or no cloud module runs. */
export function cloudLink(ctx: Pick<AppContext, 'ports'>): CloudLink | null {
  return ctx.ports.cloud?.link() ?? null;
}

/** One request over the link's connection pool (the caller sets the headers, the token included). */
export async function linkRequest(link: CloudLink, url: string, opts: Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'dispatcher'>): Promise<Dispatcher.ResponseData> {
  const undici = await loadUndici();
  // bodyTimeout 0: SSE streams and long uploads may be quiet for a while (SSE sends heartbeats).
  link.agent ??= new undici.Agent({ connect: { timeout: 3000 }, headersTimeout: 60_000, bodyTimeout: 0, keepAliveTimeout: 2000 });
  return undici.request(url, { ...opts, dispatcher: link.agent });
}

export function unreachable(detail: string): AppError {
  return new AppError('cloud_unreachable', `the cloud service is unreachable: ${detail}`);
}

/** A short description of a network error, without anything from the request (no token, no body). */
export function describeNetworkError(e: unknown): string {
  const err = e as { code?: string; name?: string; message?: string };
  if (err?.name === 'TimeoutError' || err?.code === 'UND_ERR_CONNECT_TIMEOUT' || err?.code === 'UND_ERR_HEADERS_TIMEOUT') return 'it did not answer in time';
  if (err?.code === 'ECONNREFUSED') return 'connection refused';
  if (err?.code === 'ENOTFOUND' || err?.code === 'EAI_AGAIN') return 'its host name does not resolve';
  if (err?.code === 'ECONNRESET' || err?.code === 'UND_ERR_SOCKET') return 'the connection was reset';
  return err?.code ? `network error ${err.code}` : 'network error';
}

export interface LinkResponse<T = any> {
  status: number;
  body: T;
}

/**
 * One JSON call over the link. Network failures, timeouts and a refused link token are 503
 * `cloud_unreachable`; every other status comes back to the caller to judge.
 */
export async function linkJson<T = any>(
  ctx: AppContext,
  method: Dispatcher.HttpMethod,
  path: string,
  body?: unknown,
  opts: { timeoutMs?: number; requestId?: string } = {},
): Promise<LinkResponse<T>> {
  const link = cloudLink(ctx);
  if (!link) throw unreachable('this instance has no cloud link (set BERTH_CLOUD_URL and BERTH_CLOUD_TOKEN)');
  const headers: Record<string, string> = { authorization: `Bearer ${link.token}`, accept: 'application/json' };
  if (opts.requestId) headers['x-request-id'] = opts.requestId;
  let payload: string | undefined;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, link.url + path, {
      method,
      headers,
      body: payload,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  let text: string;
  try {
    text = await res.body.text();
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  if (res.statusCode === 401) throw unreachable('it refused this instance\'s link token (BERTH_CLOUD_TOKEN)');
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, body: parsed as T };
}

export interface LinkStatus {
  linked: boolean;
  /** The cloud answered within the timeout and accepted the link token. */
  reachable: boolean;
}

/**
 * Whether the link answers: `GET /api/auth/me` on the cloud with the link token, within
 * `timeoutMs` (2 s). Answers are cached for `maxAgeMs` (3 s) so that health checks and home feeds
 * do not each cost a round trip.
 */
export async function linkStatus(ctx: AppContext, opts: { timeoutMs?: number; maxAgeMs?: number } = {}): Promise<LinkStatus> {
  if (!cloudLink(ctx)) return { linked: false, reachable: false };
  const host = ctx.ports.cloud!;
  const cached = host.cachedStatus(opts.maxAgeMs ?? 3000);
  if (cached) return cached;
  const status = (async (): Promise<LinkStatus> => {
    try {
      const res = await linkJson(ctx, 'GET', '/api/auth/me', undefined, { timeoutMs: opts.timeoutMs ?? 2000 });
      return { linked: true, reachable: res.status === 200 };
    } catch {
      return { linked: true, reachable: false };
    }
  })();
  host.noteStatus(status);
  return status;
}

/** Forget the cached status (after a call over the link failed or succeeded in a way that tells). */
export function noteLinkStatus(ctx: AppContext, reachable: boolean): void {
  if (!cloudLink(ctx)) return;
  ctx.ports.cloud!.noteStatus(Promise.resolve({ linked: true, reachable }));
}

/**
 * For other areas (the git provider's connect route): true when this instance has a cloud link
 * and the cloud answers within 2 s. A route that needs the cloud answers 503 `cloud_unreachable`
 * when this is false and the instance is linked.
 */
export async function cloudReachable(ctx: AppContext): Promise<boolean> {
  return (await linkStatus(ctx)).reachable;
}

/**
 * True when this instance relies on the cloud for its GitHub App (linked, and no App configured
 * here) and the cloud does not answer: the git provider's connect route then answers 503
 * `cloud_unreachable` and its status reports `cloudUnreachable: true`.
 */
export async function cloudGithubUnreachable(ctx: AppContext): Promise<boolean> {
  if (!cloudLink(ctx) || ctx.config.github.appId) return false;
  return !(await cloudReachable(ctx));
}
