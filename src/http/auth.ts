import type { FastifyRequest } from 'fastify';
import type { Actor } from '../authz/actor.js';
import type { AppContext } from '../context.js';
import { AppError } from '../lib/errors.js';

export const SESSION_COOKIE = 'berth_session';

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (!k || k in out) continue;
    try {
      out[k] = decodeURIComponent(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}

/**
 * Resolves the request's credential to an actor. A bearer header wins over a cookie. A credential
 * that is present but malformed, unknown, expired or revoked is 401 at once (thrown, or the promise
 * rejected); no credential is null. A credential this server's cache knows is answered without a
 * promise: every authenticated request but a credential's first few.
 */
export function authenticateRequest(ctx: AppContext, req: FastifyRequest): Actor | null | Promise<Actor | null> {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const m = /^Bearer ([A-Za-z0-9_\-.~+/]+=*)$/.exec(header.trim());
    if (!m) throw new AppError('UNAUTHENTICATED', 'malformed Authorization header: expected "Bearer <token>"');
    const actor = ctx.ports.auth.actorFromBearer(ctx, m[1]!);
    return actor instanceof Promise ? actor.then(knownBearer) : knownBearer(actor);
  }
  const cookie = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (cookie) {
    const actor = ctx.ports.auth.actorFromSession(ctx, cookie);
    return actor instanceof Promise ? actor.then(knownSession) : knownSession(actor);
  }
  return null;
}

function knownBearer(actor: Actor | null): Actor {
  if (!actor) throw new AppError('UNAUTHENTICATED', 'invalid, expired or revoked token');
  return actor;
}

function knownSession(actor: Actor | null): Actor {
  if (!actor) throw new AppError('UNAUTHENTICATED', 'session expired or signed out');
  return actor;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * Is `origin` this server reached over loopback under another name (`localhost` for `127.0.0.1`)?
 * Only when no BERTH_PUBLIC_URL is set: the derived public URL names one loopback address, while a
 * new user opens whichever their browser prefers. Another site cannot be on the same loopback
 * port, so this widens nothing.
 */
function sameLoopbackServer(ctx: AppContext, origin: string, expected: URL): boolean {
  if (ctx.config.publicUrl) return false;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  return o.protocol === expected.protocol && o.port === expected.port && LOOPBACK_HOSTS.test(o.hostname) && LOOPBACK_HOSTS.test(expected.hostname);
}

/**
 * Cookie-authenticated unsafe requests must carry an Origin equal to the public URL's origin (with
 * no BERTH_PUBLIC_URL set, any loopback name of the same port counts: `sameLoopbackServer`).
 */
export function checkCsrf(ctx: AppContext, req: FastifyRequest, actor: Actor): void {
  if (actor.via !== 'session' || SAFE_METHODS.has(req.method)) return;
  const origin = req.headers.origin;
  const expected = new URL(ctx.publicUrl());
  if (!origin || (origin !== expected.origin && !sameLoopbackServer(ctx, origin, expected))) {
    throw new AppError('FORBIDDEN', `cross-site request refused: the Origin header must be ${expected.origin}`);
  }
}
