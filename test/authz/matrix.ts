/**
 * The authorization matrix as data: types, principals and expectation defaults. See the README
 * comment at the top of `matrix.test.ts` for how to add rows and fixtures.
 */
import type { Actor } from '../../src/authz/actor.js';
import { can } from '../../src/authz/authorize.js';
import type { GrantKey } from '../../src/authz/grants.js';
import type { Role } from '../../src/authz/roles.js';
import type { RouteInfo } from '../../src/http/route.js';
import type { TestUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';

export const PRINCIPALS = [
  'anonymous',
  'badToken',
  'revokedToken',
  'owner',
  'admin',
  'member',
  'restricted',
  'restrictedRead',
  'restrictedWrite',
  'restrictedAdmin',
  'otherOwner',
] as const;
export type PrincipalName = (typeof PRINCIPALS)[number];

/** The principals that are members of org A (the org of the "own record"). */
export const ORG_A_MEMBERS: PrincipalName[] = ['owner', 'admin', 'member', 'restricted', 'restrictedRead', 'restrictedWrite', 'restrictedAdmin'];

// ---------------------------------------------------------------- presets for `allow`

/** Every member of org A, whatever the role (open routes, per-user routes). */
export const ANY_MEMBER: PrincipalName[] = [...ORG_A_MEMBERS];
/** Owner and admin only (admin-gated routes, `*:admin` without grants). */
export const ADMINS: PrincipalName[] = ['owner', 'admin'];
/**
 * A record-level tag on a grant-backed record: owner, admin, member (unless `member: false`, e.g.
 * `:admin` tags), and the restricted principals whose grant on the record is at least `level`.
 */
export function byGrant(level: 'read' | 'write' | 'admin', opts: { member?: boolean } = {}): PrincipalName[] {
  const out: PrincipalName[] = ['owner', 'admin'];
  if (opts.member ?? level !== 'admin') out.push('member');
  if (level === 'read') out.push('restrictedRead', 'restrictedWrite', 'restrictedAdmin');
  if (level === 'write') out.push('restrictedWrite', 'restrictedAdmin');
  if (level === 'admin') out.push('restrictedAdmin');
  return out;
}

// ---------------------------------------------------------------- who may, from the route's declaration

const ROLE_OF: Partial<Record<PrincipalName, Role>> = {
  owner: 'owner',
  admin: 'admin',
  member: 'member',
  restricted: 'restricted',
  restrictedRead: 'restricted',
  restrictedWrite: 'restricted',
  restrictedAdmin: 'restricted',
};
const GRANT_LEVEL_OF: Partial<Record<PrincipalName, string>> = { restrictedRead: 'read', restrictedWrite: 'write', restrictedAdmin: 'admin' };

/**
 * Who of org A may call a route on org A's record, read from the route's declaration (`routeInfo`):
 * its access, role gate, tag and every one of its `requires`, checked on the record as the fixture
 * made it (`grantKeys`: the restricted principals hold a read / write / admin grant on each; a
 * requirement on the parent project is checked on the same keys, which name the project). A route
 * without a resource, or a row without a fixture, is checked org-wide. Rows give `allow` only where
 * the handler adds a domain rule the declaration cannot show.
 *
 * What this derivation takes on trust is checked elsewhere, independently: the declarations against
 * the seed's permission table (`seed-tags.test.ts`), and `can()` and the role table against contract
 * section 4 (`core.test.ts`). The matrix then shows that the gate enforces what is declared.
 */
export function declaredAllow(info: RouteInfo, grantKeys: GrantKey[] | undefined, withRecord: boolean): PrincipalName[] | 'public' {
  if (info.access === 'public') return 'public';
  if (info.access === 'member' || info.access === 'authenticated') return [...ANY_MEMBER];
  const ref = info.resource && withRecord ? { orgId: 'org_matrix', grantKeys: grantKeys ?? [] } : undefined;
  return ORG_A_MEMBERS.filter((p) => {
    const level = GRANT_LEVEL_OF[p];
    const actor: Actor = {
      userId: `usr_${p}`,
      email: `${p}@example.test`,
      orgId: 'org_matrix',
      role: ROLE_OF[p]!,
      scopes: null,
      via: 'token',
      grants: level ? (grantKeys ?? []).map((k, i) => ({ id: `grt_${i}`, resourceType: k.type, resourceId: k.id, permissions: [level] })) : [],
    };
    if (info.gate === 'admin' && actor.role !== 'owner' && actor.role !== 'admin') return false;
    return !!info.tag && can(actor, info.tag, ref) && info.requires.every((r) => can(actor, r.tag, ref));
  });
}

// ---------------------------------------------------------------- the world every row runs in

export interface OrgA {
  orgId: string;
  owner: TestUser;
  admin: TestUser;
  member: TestUser;
  restricted: TestUser;
  restrictedRead: TestUser;
  restrictedWrite: TestUser;
  restrictedAdmin: TestUser;
}

export interface World {
  server: TestServer;
  /** The principals' org: "own record" lives here. */
  orgA: OrgA;
  /** Another org: "another org's record" lives here; `otherOwner` is its owner. */
  orgB: { orgId: string; owner: TestUser };
  /** The bearer token each principal sends (none for `anonymous`). */
  tokens: Record<PrincipalName, string | undefined>;
  /** The user behind each principal (null for anonymous and bad/revoked tokens' requests). */
  users: Record<PrincipalName, TestUser | null>;
}

/** What a fixture makes: the path parameters that name it, and the grant keys that cover it. */
export interface RecordRef {
  params: Record<string, string>;
  /** Restricted principals get read/write/admin grants on these keys (`restrictedRead`, ...). */
  grantKeys?: GrantKey[];
  /** Anything a row's body or query function needs. */
  data?: Record<string, unknown>;
}

export interface FixtureInput {
  world: World;
  /** `own`: in org A (or, for per-caller fixtures, the caller's own); `other`: org B's (or someone else's). */
  which: 'own' | 'other';
  /** The caller the record is for (per-caller fixtures), null for anonymous-like principals. */
  caller: TestUser | null;
}

export interface Fixture {
  make(input: FixtureInput): Promise<RecordRef>;
  /**
   * The record belongs to the caller rather than to org A (own tokens, invitations addressed to
   * the caller): one is made per request, and "another org's record" means someone else's.
   */
  perCaller?: boolean;
  /** The id used for the "missing id" target (default `<prefix>_missing...`). */
  missingId?: string;
}

export type Expect = 'ok' | number;

export interface MatrixRow {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The route exactly as registered (`/api/projects/:id`). */
  path: string;
  /**
   * Fixture kind naming the record (see fixtures.ts); required when the path has parameters, unless
   * `params` is given. A route whose resource comes from the body or the query gets the record's id
   * there (the fixture's param of the same name) without the row saying so.
   */
  fixture?: string;
  /** The parameter that is the record id (default: the route's resource field, else the last path parameter). */
  idParam?: string;
  /** Static path parameters (merged under the fixture's). */
  params?: Record<string, string>;
  query?: string | ((rec: RecordRef | undefined, w: World, caller: TestUser | null) => string);
  body?: ((rec: RecordRef | undefined, w: World, caller: TestUser | null) => unknown) | Record<string, unknown> | unknown[] | string;
  /**
   * Who may do it on org A's own record: they must not get 401/403/404 (nor 5xx). `'public'`: everyone.
   * Default: what the route declares (`declaredAllow`); give it only for a handler's domain rule.
   */
  allow?: PrincipalName[] | 'public';
  /** Exact statuses per principal, overriding the defaults. */
  expect?: Partial<Record<PrincipalName, number>>;
  /** Status for another org's record (default 404, same body as a missing id); null skips the target. */
  otherOrg?: number | null;
  /** Status for a missing id (default 404); null skips the target. */
  missing?: number | null;
  /** A fresh own record per request (routes that delete or otherwise use up their record). */
  fresh?: boolean;
  note?: string;
}

/** What a principal should get on the own record, from the row and its defaults. */
export function expectedOwn(row: MatrixRow, allow: PrincipalName[] | 'public', p: PrincipalName, fixture: Fixture | undefined): Expect {
  if (row.expect && row.expect[p] !== undefined) return row.expect[p]!;
  if (allow === 'public') return 'ok';
  if (p === 'anonymous' || p === 'badToken' || p === 'revokedToken') return 401;
  if (p === 'otherOwner') {
    if (fixture && !fixture.perCaller) return 404;
    return allow.includes('otherOwner') || allow.includes('owner') ? 'ok' : 403;
  }
  return allow.includes(p) ? 'ok' : 403;
}

export function meets(status: number, want: Expect): boolean {
  if (want === 'ok') return status < 500 && status !== 401 && status !== 403 && status !== 404;
  return status === want;
}
