import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { hashPassword } from '../../lib/crypto.js';
import { newId, nowIso } from '../../lib/ids.js';
import { acceptInvitation, openInvitationIdsFor } from '../permissions/index.js';
import { switchSessionOrg } from './auth.me.js';
import { presentUser, type UserView } from './auth.presenters.js';
import { newSession } from './auth.sessions.js';
import * as store from './auth.store.js';

/** Accounts: new users (sign-up) and new orgs with their owner; the sign-up policy of the instance. */

export interface CreateUserInput {
  email: string;
  password?: string;
  name?: string;
}

export function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 254) throw new AppError('VALIDATION_FAILED', 'email is not a valid address', { field: 'email' });
  return e;
}

export function checkPassword(pw: string): void {
  if (pw.length < 8) throw new AppError('VALIDATION_FAILED', 'password must be at least 8 characters', { field: 'password' });
  if (pw.length > 512) throw new AppError('VALIDATION_FAILED', 'password must be at most 512 characters', { field: 'password' });
}

export async function newUserRow(input: CreateUserInput) {
  const email = normaliseEmail(input.email);
  if (input.password !== undefined) checkPassword(input.password);
  const at = nowIso();
  return {
    id: newId('usr'),
    email,
    name: input.name?.trim() || email.split('@')[0]!,
    passwordHash: input.password !== undefined ? await hashPassword(input.password) : null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * Creates an organization with `userId` as its owner. `access` (absent in the operator's CLI, which
 * runs no server) hears that the user joined an org.
 */
export async function createOrgWithOwner(
  { db, access }: { db: Db; access?: AppContext['access'] },
  userId: string,
  name: string,
  isTeam: boolean,
): Promise<{ id: string; name: string; isTeam: boolean }> {
  const at = nowIso();
  const org = { id: newId('org'), name, isTeam: isTeam ? 1 : 0, createdAt: at };
  await transaction(db, async (tx) => {
    await store.insertOrg(tx, org);
    await store.insertMembership(tx, { orgId: org.id, userId, role: 'owner', createdAt: at });
  });
  access?.changed({ userId, orgId: org.id });
  return { id: org.id, name, isTeam };
}

/**
 * Whether `email` may sign up (contract section 10): `open` anyone, `closed` nobody, `invite` only an
 * email with a pending invitation; the self-hosted default lets the first account in (it owns the
 * instance) and is `invite` afterwards.
 */
async function checkSignupAllowed(ctx: AppContext, email: string): Promise<void> {
  const mode = ctx.config.signup;
  if (mode === 'open') return;
  if (mode === 'closed') throw new AppError('SIGNUP_CLOSED', 'sign-up is closed on this instance; ask its operator for an account');
  if (mode === 'first-then-invite' && !(await store.anyUser(ctx.db))) return;
  if ((await openInvitationIdsFor(ctx, email)).length === 0) throw new AppError('SIGNUP_CLOSED', 'sign-up on this instance is by invitation only; ask an admin of an organization to invite this email');
}

/** A new account with its personal org (owner) and a session in it. */
export async function signup({ db }: Pick<AppContext, 'db'>, input: CreateUserInput): Promise<{ user: UserView; orgId: string; sessionToken: string }> {
  if (input.password === undefined) throw new AppError('VALIDATION_FAILED', 'password is required', { field: 'password' });
  const user = await newUserRow(input);
  if (await store.findUserByEmail(db, user.email)) throw new AppError('CONFLICT', 'an account with this email already exists', { field: 'email' });
  const at = user.createdAt;
  const orgId = newId('org');
  const session = newSession(user.id, orgId);
  try {
    await transaction(db, async (tx) => {
      await store.insertUser(tx, user);
      await store.insertOrg(tx, { id: orgId, name: `${user.name}'s workspace`, isTeam: 0, createdAt: at });
      await store.insertMembership(tx, { orgId, userId: user.id, role: 'owner', createdAt: at });
      await store.insertSession(tx, session.row);
    });
  } catch (e) {
    if (await store.findUserByEmail(db, user.email)) throw new AppError('CONFLICT', 'an account with this email already exists', { field: 'email' });
    throw e;
  }
  return { user: presentUser(user), orgId, sessionToken: session.token };
}

/**
 * POST signup: the sign-up policy, the account and its personal org, then the account joins every org
 * that invited its email; the first of those becomes the session's org. Answers the session's token.
 */
export async function signupJoiningInvitations(ctx: AppContext, input: CreateUserInput): Promise<{ user: UserView; orgId: string; sessionToken: string }> {
  await checkSignupAllowed(ctx, input.email);
  const out = await signup(ctx, input);
  let orgId = out.orgId;
  const invitee: Actor = { userId: out.user.id, email: out.user.email, orgId: out.orgId, role: 'owner', scopes: null, via: 'session', grants: [] };
  for (const id of await openInvitationIdsFor(ctx, out.user.email)) {
    const inv = await acceptInvitation(ctx, invitee, id).catch(() => null);
    if (inv && orgId === out.orgId) orgId = inv.orgId;
  }
  if (orgId !== out.orgId) await switchSessionOrg(ctx, out.sessionToken, orgId);
  return { ...out, orgId };
}
