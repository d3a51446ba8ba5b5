import { Type, type Static } from '@sinclair/typebox';
import type { ApiTokensTable, UsersTable } from '../../db/schema.js';
import { Nullable, NullableObject } from '../../http/schemas.js';

/** The auth area's API shapes: rows to answers, and the TypeBox schemas the routes declare. */

export const UserView = Type.Object({ id: Type.String(), email: Type.String(), name: Type.String(), createdAt: Type.String() });
export type UserView = Static<typeof UserView>;

export function presentUser(u: Pick<UsersTable, 'id' | 'email' | 'name' | 'createdAt'>): UserView {
  return { id: u.id, email: u.email, name: u.name, createdAt: u.createdAt };
}

export const SignupView = Type.Object({ user: UserView, orgId: Type.String({ description: "the session's org: the first org that invited the email, else the new personal org" }) });
export const LoginView = Type.Object({ user: UserView });
export const LogoutView = Type.Object({ loggedOut: Type.Boolean() });

const OrgRef = Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean() });
export const MeView = Type.Object({
  user: UserView,
  /** Null when the active org is gone. */
  org: NullableObject(OrgRef),
  role: Type.String(),
  orgs: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), isTeam: Type.Boolean(), role: Type.String() })),
  grants: Type.Array(Type.Object({ resourceType: Type.String(), resourceId: Type.String(), permissions: Type.Array(Type.String()) }), {
    description: "the caller's grants in the active org: only a restricted member has any that count (other roles' rights come from the role), so empty for them",
  }),
});
export type MeView = Static<typeof MeView>;

export function presentMe(
  user: Pick<UsersTable, 'id' | 'email' | 'name' | 'createdAt'>,
  activeOrgId: string,
  role: string,
  orgs: { id: string; name: string; isTeam: number; role: string }[],
): MeView {
  const org = orgs.find((o) => o.id === activeOrgId);
  return {
    user: presentUser(user),
    org: org ? { id: org.id, name: org.name, isTeam: !!org.isTeam } : null,
    role,
    orgs: orgs.map((o) => ({ id: o.id, name: o.name, isTeam: !!o.isTeam, role: o.role })),
    grants: [],
  };
}

export const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'the first characters of the token, to recognise it' }),
  orgId: Type.String(),
  scopes: Nullable(Type.Array(Type.String())),
  expiresAt: Nullable(Type.String()),
  lastUsedAt: Nullable(Type.String()),
  revokedAt: Nullable(Type.String()),
  createdAt: Type.String(),
});
export type TokenView = Static<typeof TokenView>;

/** A new token: its view and, this once, the secret. */
export const NewTokenView = Type.Composite([TokenView, Type.Object({ token: Type.String({ description: 'shown once' }) })]);

export function presentToken(t: Omit<ApiTokensTable, 'userId' | 'tokenHash'>): TokenView {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    orgId: t.orgId,
    scopes: t.scopes ? (JSON.parse(t.scopes) as string[]) : null,
    expiresAt: t.expiresAt,
    lastUsedAt: t.lastUsedAt,
    revokedAt: t.revokedAt,
    createdAt: t.createdAt,
  };
}
