/**
 * Fixture registry of the authorization matrix: one entry per record kind. A fixture makes a real
 * record (through services or real rows, never mocks) either in org A (`which: 'own'`) or in org B
 * (`which: 'other'`), and says which path parameters name it and which grant keys cover it.
 *
 * Areas add their kinds here (one entry, in alphabetical order) or export `fixtures` from their
 * own `rows/<module>.ts`; both are merged by the matrix.
 */
import { randomString } from '../../src/lib/ids.js';
import { createOrgWithOwner, issueToken } from '../../src/modules/auth/index.js';
import { acceptInvitation, invite } from '../../src/modules/permissions/invitations.service.js';
import { actorOf, createGrant, createProject, createUser, type TestUser } from '../support/factories.js';
import type { Fixture, World } from './matrix.js';

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
  const org = await createOrgWithOwner(w.server.ctx, inviter.userId, `mx-${randomString(6)}`, true);
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
      const user = which === 'own' ? world.orgA.restricted : world.orgB.owner;
      const id = await createGrant(world.server, user, 'server', `srv_${randomString(10)}`, ['read']);
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
      // No password to hash keeps the many fresh members cheap.
      const orgId = which === 'own' ? world.orgA.orgId : world.orgB.orgId;
      const { userId } = await createUser(world.server, { orgId, role: 'member', noPassword: true });
      return { params: { userId } };
    },
  },

  /** A project of org A (or B). */
  project: {
    missingId: 'prj_missing0000000000000',
    async make({ world, which }) {
      const owner = ownerFor(world, which);
      const p = await createProject(world.server, owner, { name: `mx-${randomString(6)}` });
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
