import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import { SESSION_COOKIE } from '../../http/auth.js';
import { DEVICE_COOKIE, DEVICE_TTL_MS } from './auth.device.js';
import { SESSION_TTL_MS } from './auth.sessions.js';

/** The Set-Cookie values of the auth routes: the session cookie and the login route's device cookie. */

function secure(ctx: AppContext): string {
  return ctx.publicUrl().startsWith('https:') ? '; Secure' : '';
}

export function sessionCookie(ctx: AppContext, token: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure(ctx)}`;
}

/** Sent only to the login route: it exempts this client from the per-address lockout (`login`). */
export function deviceCookie(ctx: AppContext, token: string): string {
  return `${DEVICE_COOKIE}=${token}; Path=/api/auth/login; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(DEVICE_TTL_MS / 1000)}${secure(ctx)}`;
}

export function setSession(reply: FastifyReply, ctx: AppContext, token: string): void {
  reply.header('set-cookie', sessionCookie(ctx, token, Math.floor(SESSION_TTL_MS / 1000)));
}

export function clearSession(reply: FastifyReply, ctx: AppContext): void {
  reply.header('set-cookie', sessionCookie(ctx, '', 0));
}
