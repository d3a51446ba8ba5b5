/**
 * Fixture registry of the authorization matrix: one entry per record kind. A fixture makes a real
 * record (through services or real rows, never mocks) either in org A (`which: 'own'`) or in org B
 * (`which: 'other'`), and says which path parameters name it and which grant keys cover it.
 *
 * Areas add their kinds here (one entry, in alphabetical order) or export `fixtures` from their
 * own `rows/<module>.ts`; both are merged by the matrix.
 */
import type { Actor } from '../../src/authz/actor.js';
import { randomString } from '../../src/lib/ids.js';
import { issueToken, createOrgWithOwner } from '../../src/modules/auth/auth.service.js';
import { acceptInvitation, invite } from '../../src/modules/permissions/invitations.service.js';
import { createProject } from '../../src/modules/projects/projects.service.js';
import { createUser, type TestUser } from '../support/factories.js';
import type { Fixture, World } from './matrix.js';

export function actorOf(u: TestUser, orgId = u.orgId, role: Actor['role'] = u.role): Actor {
  return { userId: u.userId, email: u.email, orgId, role, scopes: null, via: 'token', grants: [] };
}

/** The owner of the org a fixture writes into. */
export function ownerFor(w: World, which: 'own' | 'other'): TestUser {
  return which === 'own' ? w.orgA.owner : w.orgB.owner;
}

const randomEmail = () => `mx-${randomString(10)}@example.test`;

/** The owner of the orgs that invite the principals (a user who is none of them). */
const inviters = new WeakMap<World, Promise<TestUser>>();

/** An invitation in a fresh team org (of a third user) addressed to `email`. */
async function invitationTo(w: World, email: string): Promise<{ id: string; orgId: string }> {
  if (!inviters.has(w)) inviters.set(w, createUser(w.server, { team: true }));
  const inviter = await inviters.get(w)!;
  const org = await createOrgWithOwner(w.server.ctx.db, inviter.userId, `mx-${randomString(6)}`, true);
  const inv = await invite(w.server.ctx, actorOf(inviter, org.id, 'owner'), { email, role: 'member', grants: [{ resourceType: 'audit', resourceId: '*', permissions: ['read'] }] });
  return { id: inv.id, orgId: org.id };
}

export const coreFixtures: Record<string, Fixture> = {
  /** An accepted invitation addressed to the caller (materialize). Someone else's for `other`. */
  acceptedInvitationForCaller: {
    perCaller: true,
    missingId: 'inv_missing0000000000000',
    async make({ world, which, caller }) {
      const mine = which === 'own' && caller;
      const email = mine ? caller.email : randomEmail();
      const inv = await invitationTo(world, email);
      if (mine) await acceptInvitation(world.server.ctx, actorOf(caller), inv.id);
      else {
        const invitee = await createUser(world.server, { email });
        await acceptInvitation(world.server.ctx, actorOf(invitee), inv.id);
      }
      return { params: { id: inv.id } };
    },
  },

  /** A grant row of org A's (or B's) restricted member. */
  grant: {
    missingId: 'grt_missing0000000000000',
    async make({ world, which }) {
      const orgId = which === 'own' ? world.orgA.orgId : world.orgB.orgId;
      const userId = which === 'own' ? world.orgA.restricted.userId : world.orgB.owner.userId;
      const at = new Date().toISOString();
      const id = `grt_${randomString(20)}`;
      await world.server.ctx.db
        .insertInto('grants')
        .values({ id, orgId, userId, resourceType: 'server', resourceId: `srv_${randomString(10)}`, permissions: '["read"]', createdAt: at, updatedAt: at })
        .execute();
      return { params: { id } };
    },
  },

  /** An unanswered invitation of org A (or B). */
  invitation: {
    missingId: 'inv_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const inv = await invite(world.server.ctx, actorOf(owner), { email: randomEmail(), role: 'member' });
      return { params: { id: inv.id } };
    },
  },

  /** A pending invitation addressed to the caller (accept, decline). Someone else's for `other`. */
  invitationForCaller: {
    perCaller: true,
    missingId: 'inv_missing0000000000000',
    async make({ world, which, caller }) {
      const inv = await invitationTo(world, which === 'own' && caller ? caller.email : randomEmail());
      return { params: { id: inv.id } };
    },
  },

  /** A member (role member) of org A (or B); the record id is the user id. */
  member: {
    missingId: 'usr_missing0000000000000',
    async make({ world, which }) {
      // Real rows, written directly: no password to hash keeps the many fresh members cheap.
      const orgId = which === 'own' ? world.orgA.orgId : world.orgB.orgId;
      const at = new Date().toISOString();
      const userId = `usr_${randomString(20)}`;
      await world.server.ctx.db.insertInto('users').values({ id: userId, email: `${userId}@example.test`, name: 'matrix member', passwordHash: null, createdAt: at, updatedAt: at }).execute();
      await world.server.ctx.db.insertInto('memberships').values({ orgId, userId, role: 'member', createdAt: at }).execute();
      return { params: { userId } };
    },
  },

  /** A project of org A (or B). */
  project: {
    missingId: 'prj_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server.ctx, actorOf(owner), { name: `mx-${randomString(6)}` });
      return { params: { id: p.id, projectId: p.id }, grantKeys: [{ type: 'project', id: p.id }] };
    },
  },

  /** A personal access token of the caller (someone else's for `other`). */
  token: {
    perCaller: true,
    missingId: 'tok_missing0000000000000',
    async make({ world, which, caller }) {
      const u = which === 'own' && caller ? caller : world.orgB.owner;
      const t = await issueToken(world.server.ctx.db, u.userId, u.orgId, { name: 'matrix' }, u.userId);
      return { params: { id: t.id } };
    },
  },
};
