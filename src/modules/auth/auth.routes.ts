import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import { parseCookies, SESSION_COOKIE } from '../../http/auth.js';
import { defineRoute, type ModuleDef } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import * as auth from './auth.service.js';
import { acceptInvitation, openInvitationIdsFor } from '../permissions/invitations.service.js';

function sessionCookie(ctx: AppContext, token: string, maxAgeSeconds: number): string {
  const secure = ctx.publicUrl().startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

/** Sent only to the login route: it exempts this client from the per-address lockout (`auth.login`). */
function deviceCookie(ctx: AppContext, token: string): string {
  const secure = ctx.publicUrl().startsWith('https:') ? '; Secure' : '';
  return `${auth.DEVICE_COOKIE}=${token}; Path=/api/auth/login; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(auth.DEVICE_TTL_MS / 1000)}${secure}`;
}

function setSession(reply: FastifyReply, ctx: AppContext, token: string): void {
  reply.header('set-cookie', sessionCookie(ctx, token, Math.floor(auth.SESSION_TTL_MS / 1000)));
}

const OrgRef = Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean() });
const MeView = Type.Object({
  user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String(), createdAt: Type.String() }),
  org: Type.Union([OrgRef, Type.Null()]),
  role: Type.String(),
  orgs: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean(), role: Type.String() })),
});

const TokenBody = Obj({
  name: Str({ min: 1, max: 100 }),
  expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  scopes: Type.Optional(Type.Array(Str({ max: 100 }), { maxItems: 50 })),
});

export const authModule: ModuleDef = {
  name: 'auth',
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/auth/signup',
      summary: 'Create an account and its personal organization; signs in',
      access: 'public',
      status: 201,
      schema: { body: Obj({ email: Str({ min: 3, max: 254 }), password: Str({ min: 1, max: 512 }), name: Type.Optional(Str({ max: 100 })) }) },
      async handler({ body, reply }, ctx) {
        await auth.checkSignupAllowed(ctx, body.email, (email) => openInvitationIdsFor(ctx, email));
        const out = await auth.signup(ctx, body);
        // The account joins every org that invited its email; the first becomes the session's org.
        let orgId = out.orgId;
        const invitations = await openInvitationIdsFor(ctx, out.user.email);
        for (const id of invitations) {
          const inv = await acceptInvitation(ctx, { userId: out.user.id, email: out.user.email, orgId: out.orgId, role: 'owner', scopes: null, via: 'session', grants: [] }, id).catch(() => null);
          if (inv && orgId === out.orgId) orgId = inv.orgId;
        }
        if (orgId !== out.orgId) await auth.switchSessionOrg(ctx, out.sessionToken, orgId);
        setSession(reply, ctx, out.sessionToken);
        return { user: out.user, orgId };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/login',
      summary: 'Sign in with email and password; sets the session cookie',
      access: 'public',
      schema: { body: Obj({ email: Str({ min: 1, max: 254 }), password: Str({ min: 1, max: 512 }) }) },
      async handler({ body, req, reply }, ctx) {
        const out = await auth.login(ctx, { ...body, ip: req.ip, device: parseCookies(req.headers.cookie)[auth.DEVICE_COOKIE] });
        setSession(reply, ctx, out.sessionToken);
        reply.header('set-cookie', deviceCookie(ctx, out.deviceToken));
        return { user: out.user };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/logout',
      summary: 'Sign out: ends the session and clears its cookie',
      access: 'authenticated',
      async handler({ actor, reply }, ctx) {
        await auth.logout(ctx, actor);
        reply.header('set-cookie', sessionCookie(ctx, '', 0));
        return { loggedOut: true };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/auth/me',
      summary: 'The signed-in user, the active org and role, and every org of the user',
      access: 'authenticated',
      schema: { response: MeView },
      async handler({ actor }, ctx) {
        return auth.me(ctx, actor);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/switch-org',
      summary: "Change the session's active org (member orgs only)",
      access: 'authenticated',
      schema: { body: Obj({ orgId: Id }) },
      async handler({ actor, body }, ctx) {
        return auth.switchOrg(ctx, actor, body.orgId);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/tokens',
      summary: 'Create a personal access token bound to the active org (shown once)',
      access: 'authenticated',
      status: 201,
      schema: { body: TokenBody },
      async handler({ actor, body }, ctx) {
        return auth.createToken(ctx, actor, body);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/auth/tokens',
      summary: 'List your personal access tokens (no secrets)',
      access: 'authenticated',
      async handler({ actor }, ctx) {
        return auth.listTokens(ctx, actor);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/auth/tokens/:id',
      summary: 'Revoke one of your personal access tokens',
      access: 'authenticated',
      schema: { params: Obj({ id: Id }) },
      async handler({ actor, params }, ctx) {
        return auth.revokeToken(ctx, actor, params.id);
      },
    }),
  ],
};

