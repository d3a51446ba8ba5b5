/**
 * The one way the suites build data: each factory writes real rows through the service function the
 * matching HTTP route (or admin CLI command) calls, acting as a given test user. Tests that are about
 * a route call that route themselves; everything they merely need beforehand comes from here.
 */
import { randomBytes, scrypt } from 'node:crypto';
import path from 'node:path';
import type { Actor } from '../../src/authz/actor.js';
import type { GrantResourceType } from '../../src/authz/grants.js';
import type { Role } from '../../src/authz/roles.js';
import { transaction } from '../../src/db/client.js';
import { randomString } from '../../src/lib/ids.js';
import { adminCreateUser, issueToken } from '../../src/modules/auth/index.js';
import { insertDeployment, markReady } from '../../src/modules/deployments/deployments.store.js';
import { createDestination as createDestinationRow, createPolicy as createPolicyRow } from '../../src/modules/backups/index.js';
import { checkGrantShape, writeGrant } from '../../src/modules/permissions/grants.service.js';
import { createProject as createProjectRow } from '../../src/modules/projects/projects.service.js';
import { tempDir, type TestServer } from './harness.js';

export interface TestUser {
  userId: string;
  orgId: string;
  token: string;
  email: string;
  /** Empty for an account made with `noPassword`, or one whose email already had an account (its password is kept). */
  password: string;
  role: Role;
}

/** The actor a test user's own token acts as (in its org, or `orgId` with `role`): what services are called with. */
export function actorOf(u: TestUser, orgId = u.orgId, role: Role = u.role): Actor {
  return { userId: u.userId, email: u.email, orgId, role, scopes: null, via: 'token', grants: [] };
}

/**
 * A real user (and org, or membership) written through the same service the admin CLI uses.
 * `noPassword` makes an account without a password (no hash to compute: cheap in bulk).
 */
export async function createUser(server: TestServer, opts: { orgId?: string; role?: Role; email?: string; team?: boolean; noPassword?: boolean } = {}): Promise<TestUser> {
  const email = opts.email ?? `u-${randomString(8)}@example.test`;
  let password = opts.noPassword ? '' : `pw-${randomString(12)}`;
  // An email that already has an account joins the org with its password unchanged (not known here).
  const input = { email, orgId: opts.orgId, role: opts.role, team: opts.team };
  let made = true;
  const out = await adminCreateUser(server.ctx, input).catch((e) => {
    if ((e as { code?: string }).code !== 'CONFLICT') throw e;
    made = false;
    password = '';
    return adminCreateUser(server.ctx, { ...input, existing: true });
  });
  if (made && password) {
    await server.ctx.db.updateTable('users').set({ passwordHash: await cheapPasswordHash(password) }).where('id', '=', out.userId).execute();
  }
  return { ...out, email, password, role: opts.role ?? (opts.orgId ? 'member' : 'owner') };
}

/**
 * A real scrypt hash in the stored form (`scrypt$N$r$p$salt$key`, which sign-in reads its cost from)
 * at N=1024 instead of the server's 16384: the rows a user of an older, cheaper setting would have.
 * Sign-in still verifies it with scrypt; only its cost is lower. The suites make thousands of users,
 * each hash at full cost took 50-300 ms of CPU (tests of hashing itself use `hashPassword`).
 */
async function cheapPasswordHash(password: string): Promise<string> {
  const salt = randomBytes(16);
  const N = 1024, r = 8, p = 1;
  const key = await new Promise<Buffer>((resolve, reject) => scrypt(password, salt, 32, { N, r, p }, (e, k) => (e ? reject(e) : resolve(k))));
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
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

/**
 * A grant of `permissions` on one resource to `user` in its org, written by the grants service's own
 * write (row and audit event; access caches told), without the granter checks the route adds.
 * Answers the grant's id.
 */
export async function createGrant(server: TestServer, user: TestUser, resourceType: GrantResourceType | string, resourceId: string, permissions: string[]): Promise<string> {
  const g = checkGrantShape({ resourceType: resourceType as GrantResourceType, resourceId, permissions: permissions as never });
  const row = await transaction(server.ctx.db, (tx) => writeGrant(tx, user.orgId, null, user.userId, g));
  server.ctx.access.changed({ orgId: user.orgId, userId: user.userId });
  return row!.id;
}

/** A personal access token of `user` in its org (optionally scoped), made by the service the sign-in flows use. */
export async function createToken(server: TestServer, user: TestUser, input: { name?: string; scopes?: string[]; expiresInDays?: number } = {}): Promise<{ id: string; token: string }> {
  const t = await issueToken(server.ctx.db, user.userId, user.orgId, { name: input.name ?? 'test', scopes: input.scopes, expiresInDays: input.expiresInDays }, user.userId);
  return { id: t.id, token: t.token };
}

/** A project's record as the API answers it. */
export type TestProject = Awaited<ReturnType<typeof createProjectRow>>;

/** A project in `user`'s org, made through the projects service (records only: no build starts). */
export async function createProject(server: TestServer, user: TestUser, input: Record<string, unknown> & { name?: string } = {}): Promise<TestProject> {
  return createProjectRow(server.ctx, actorOf(user), { ...input, name: input.name ?? `p-${randomString(6)}` } as never);
}

/** A project as `createProject` makes it, with its `data` volume service's id and folder (for the backup suites). */
export async function createProjectWithVolume(server: TestServer, user: TestUser, input: Record<string, unknown> & { name?: string } = {}): Promise<TestProject & { dataServiceId: string; volume: string }> {
  const p = await createProject(server, user, input);
  const svc = await server.ctx.db.selectFrom('services').select('id').where('projectId', '=', p.id).where('name', '=', 'data').executeTakeFirstOrThrow();
  return { ...p, dataServiceId: svc.id, volume: path.join(server.dataDir, 'volumes', p.id, 'data') };
}

/** A local backup destination in a fresh folder (or `dir`), made through the backups service as `user`. */
export async function createDestination(server: TestServer, user: TestUser, opts: { name?: string; dir?: string } = {}): Promise<{ id: string; dir: string }> {
  const dir = opts.dir ?? tempDir('berth-dest-');
  const d = await createDestinationRow(server.ctx, actorOf(user), { name: opts.name ?? 'local', kind: 'local', path: dir });
  return { id: d.id, dir };
}

/** A backup policy of `project` to `destinationId` (on its `data` volume unless `serviceId`), made through the backups service as `user`. */
export async function createPolicy(server: TestServer, user: TestUser, project: { id: string }, body: { destinationId: string } & Record<string, unknown>): Promise<{ id: string; webhookToken?: string } & Record<string, any>> {
  return createPolicyRow(server.ctx, actorOf(user), { id: project.id, orgId: user.orgId }, body as never) as never;
}

/**
 * A deployment that has already ended (default: `ready`, of the production environment), written with
 * its build row through the deployments store as the deployments service writes them; no build runs.
 * Answers its id (`id` when given).
 */
export async function createDeployment(
  server: TestServer,
  project: { id: string; orgId: string },
  fields: { id?: string; status?: string; trigger?: string; commit?: string | null; ref?: string | null; environment?: string; finished?: boolean; current?: boolean } = {},
): Promise<string> {
  const now = new Date().toISOString();
  const id = fields.id ?? `dep_${randomString(20)}`;
  const finished = fields.finished ?? true;
  await insertDeployment(
    server.ctx.db,
    {
      id,
      orgId: project.orgId,
      projectId: project.id,
      environment: fields.environment ?? 'production',
      status: fields.status ?? 'ready',
      trigger: fields.trigger ?? 'api',
      commit: fields.commit ?? null,
      ref: fields.ref ?? null,
      createdAt: now,
      startedAt: finished ? now : null,
      finishedAt: finished ? now : null,
      error: null,
      updatedAt: now,
    },
    { deploymentId: id, orgId: project.orgId, projectId: project.id, sourceType: null, uploadDir: null, releaseDir: null, startCommand: null, createdBy: null },
  );
  // A ready deployment becomes its environment's current release, as a finished build makes it (unless `current: false`).
  if ((fields.status ?? 'ready') === 'ready' && fields.current !== false) {
    await markReady(server.ctx.db, { orgId: project.orgId, id, projectId: project.id, environment: fields.environment ?? 'production' }, ['ready'], { finishedAt: now });
  }
  return id;
}
