import type { Role } from '../../src/authz/roles.js';
import { adminCreateUser, invalidateAuthCache } from '../../src/modules/auth/auth.service.js';
import { randomString } from '../../src/lib/ids.js';
import type { TestServer } from './harness.js';

export interface TestUser {
  userId: string;
  orgId: string;
  token: string;
  email: string;
  password: string;
  role: Role;
}

/** Writes a real user (and org, or membership) through the same service the admin CLI uses. */
export async function createUser(server: TestServer, opts: { orgId?: string; role?: Role; email?: string; team?: boolean } = {}): Promise<TestUser> {
  const email = opts.email ?? `u-${randomString(8)}@example.test`;
  const password = `pw-${randomString(12)}`;
  // An email that already has an account joins the org with its password unchanged.
  const input = { email, orgId: opts.orgId, role: opts.role, team: opts.team };
  const out = await adminCreateUser(server.ctx, { ...input, password }).catch((e) => {
    if ((e as { code?: string }).code !== 'CONFLICT') throw e;
    return adminCreateUser(server.ctx, { ...input, existing: true });
  });
  return { ...out, email, password, role: opts.role ?? (opts.orgId ? 'member' : 'owner') };
}

export interface TestOrg {
  orgId: string;
  owner: TestUser;
  admin: TestUser;
  member: TestUser;
  restricted: TestUser;
}

/** A team org with one user of each role. */
export async function createTeam(server: TestServer): Promise<TestOrg> {
  const owner = await createUser(server, { team: true });
  const orgId = owner.orgId;
  const [admin, member, restricted] = await Promise.all([
    createUser(server, { orgId, role: 'admin' }),
    createUser(server, { orgId, role: 'member' }),
    createUser(server, { orgId, role: 'restricted' }),
  ]);
  return { orgId, owner, admin, member, restricted };
}

/** Writes a grants row directly (the permissions HTTP routes are tested on their own). */
export async function grantTo(server: TestServer, user: TestUser, resourceType: string, resourceId: string, permissions: string[]): Promise<void> {
  const now = new Date().toISOString();
  await server.ctx.db
    .insertInto('grants')
    .values({ id: `grt_${randomString(20)}`, orgId: user.orgId, userId: user.userId, resourceType, resourceId, permissions: JSON.stringify(permissions), createdAt: now, updatedAt: now })
    .execute();
  invalidateAuthCache();
}
