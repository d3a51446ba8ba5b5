import { Type } from '@sinclair/typebox';
import { parseCookies } from '../../http/auth.js';
import { defineRoute, JsonText, type ModuleDef } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { signupJoiningInvitations } from './auth.accounts.js';
import { clearSession, deviceCookie, setSession } from './auth.cookies.js';
import { Credentials } from './auth.credentials.js';
import { DEVICE_COOKIE } from './auth.device.js';
import { meJson, switchOrg } from './auth.me.js';
import { LoginView, LogoutView, MeView, NewTokenView, SignupView, TokenView } from './auth.presenters.js';
import { login, logout } from './auth.sessions.js';
import { createToken, listTokens, revokeToken } from './auth.tokens.js';

/** Accounts, sessions and personal access tokens (contract section 2): the user's own things. */

const TokenBody = Obj({
  name: Str({ min: 1, max: 100 }),
  expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  scopes: Type.Optional(Type.Array(Str({ max: 100 }), { maxItems: 50 })),
  orgId: Type.Optional(Id),
});

export const authModule: ModuleDef = {
  name: 'auth',
  // This server's credential lookups and their caches (`ctx.ports.auth`; the route gate authenticates through it).
  provides: (ctx) => ({ auth: new Credentials(ctx.access) }),
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/auth/signup',
      summary: 'Create an account and its personal organization; signs in',
      access: 'public',
      status: 201,
      schema: { body: Obj({ email: Str({ min: 3, max: 254 }), password: Str({ min: 1, max: 512 }), name: Type.Optional(Str({ max: 100 })) }), response: SignupView },
      async handler({ body, reply }, ctx) {
        const out = await signupJoiningInvitations(ctx, body);
        setSession(reply, ctx, out.sessionToken);
        return { user: out.user, orgId: out.orgId };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/login',
      summary: 'Sign in with email and password; sets the session cookie',
      access: 'public',
      schema: { body: Obj({ email: Str({ min: 1, max: 254 }), password: Str({ min: 1, max: 512 }) }), response: LoginView },
      async handler({ body, req, reply }, ctx) {
        const out = await login(ctx, { ...body, ip: req.ip, device: parseCookies(req.headers.cookie)[DEVICE_COOKIE] });
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
      schema: { response: LogoutView },
      async handler({ actor, reply }, ctx) {
        await logout(ctx, actor);
        clearSession(reply, ctx);
        return { loggedOut: true };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/auth/me',
      summary: 'The signed-in user, the active org and role, and every org of the user',
      access: 'authenticated',
      schema: { response: MeView },
      // Written once per cached answer and credential (meJson), not serialised on every request.
      handler: ({ actor, reply }, ctx) => {
        const json = meJson(ctx, actor, (value) => String(reply.serialize({ data: value })));
        return typeof json === 'string' ? new JsonText(json) : json.then((text) => new JsonText(text));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/switch-org',
      summary: "Change the session's active org (member orgs only)",
      access: 'authenticated',
      schema: { body: Obj({ orgId: Id }), response: MeView },
      handler: ({ actor, body }, ctx) => switchOrg(ctx, actor, body.orgId),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/auth/tokens',
      summary: 'Create a personal access token bound to the active org, or to another org of yours named by orgId (shown once)',
      access: 'authenticated',
      status: 201,
      schema: { body: TokenBody, response: NewTokenView },
      handler: ({ actor, body }, ctx) => createToken(ctx, actor, body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/auth/tokens',
      summary: 'List your personal access tokens (no secrets)',
      access: 'authenticated',
      schema: { response: Type.Array(TokenView) },
      handler: ({ actor }, ctx) => listTokens(ctx, actor),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/auth/tokens/:id',
      summary: 'Revoke one of your personal access tokens',
      access: 'authenticated',
      schema: { params: Obj({ id: Id }), response: TokenView },
      handler: ({ actor, params }, ctx) => revokeToken(ctx, actor, params.id),
    }),
  ],
};
