import { isRole } from '../../authz/roles.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { hashPassword } from '../../lib/crypto.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { checkPassword, createOrgWithOwner, newUserRow, normaliseEmail, type CreateUserInput } from './auth.accounts.js';
import { issueToken } from './auth.tokens.js';
import * as store from './auth.store.js';

/** Operator account creation (`berth admin create-user`; the tests' user factory). */

export interface AdminCreateUserInput extends CreateUserInput {
  orgId?: string;
  role?: string;
  team?: boolean;
  /** Allow an email that already has an account (its password is set when `password` is given). */
  existing?: boolean;
}

/**
 * Without an org, a new org (personal, or team with `team`) owned by the user; with an org, the user
 * (created when the email is new) joins it with `role` (default member). Answers a new personal access
 * token of that user acting in that org. `access` is the running server's (the CLI runs none).
 */
export async function adminCreateUser(
  { db, access }: { db: Db; access?: AppContext['access'] },
  input: AdminCreateUserInput,
): Promise<{ userId: string; orgId: string; token: string }> {
  const role = input.role ?? (input.orgId ? 'member' : 'owner');
  if (!isRole(role)) throw new AppError('VALIDATION_FAILED', 'role must be one of owner, admin, member, restricted', { field: 'role' });
  const email = normaliseEmail(input.email);
  let user = await store.findUserByEmail(db, email);
  if (user && !input.existing) throw new AppError('CONFLICT', `an account with the email ${email} already exists; pass --existing to add it to an org or reset its password`, { field: 'email' });
  if (!user) {
    const row = await newUserRow({ ...input, email });
    await store.insertUser(db, row);
    user = row;
  } else if (input.password !== undefined) {
    checkPassword(input.password);
    await store.setPasswordHash(db, user.id, await hashPassword(input.password), nowIso());
    access?.changed({ userId: user.id });
  }
  let orgId: string;
  if (input.orgId) {
    const org = await store.findOrg(db, input.orgId);
    if (!org) throw new AppError('NOT_FOUND', `organization ${input.orgId} not found`);
    orgId = org.id;
    const existing = await store.findMembership(db, orgId, user.id);
    if (!existing) {
      await store.insertMembership(db, { orgId, userId: user.id, role, createdAt: nowIso() });
      access?.changed({ userId: user.id, orgId });
      await insertAuditEvent(db, { orgId, actorId: null, action: 'member.add', resourceType: 'membership', resourceId: user.id, details: { role, via: 'cli' } });
    }
  } else {
    const org = await createOrgWithOwner({ db, access }, user.id, input.team ? `${user.name}'s team` : `${user.name}'s workspace`, !!input.team);
    orgId = org.id;
  }
  const t = await issueToken(db, user.id, orgId, { name: 'admin create-user' }, null);
  return { userId: user.id, orgId, token: t.token };
}
