import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { sha256Hex, verifyPassword } from '../../lib/crypto.js';
import { isoPlus, newId, newSecretToken, nowIso } from '../../lib/ids.js';
import { newDeviceToken, verifyDeviceToken } from './auth.device.js';
import { presentUser, type UserView } from './auth.presenters.js';
import * as store from './auth.store.js';

/** Sessions: sign-in with email and password (and its lockout), new sessions, sign-out. */

export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
const LOGIN_WINDOW_MS = 15 * 60 * 1000;
const LOGIN_MAX_FAILURES = 10;

/** A new session of `userId` acting in `orgId`: its secret token and the row to store. */
export function newSession(userId: string, orgId: string) {
  const token = newSecretToken('berth_ses');
  const at = nowIso();
  return {
    token,
    row: { id: newId('ses'), tokenHash: sha256Hex(token), userId, orgId, createdAt: at, expiresAt: isoPlus(SESSION_TTL_MS), lastSeenAt: at },
  };
}

/**
 * Email and password sign-in. Failed attempts are counted per (client address, email): 10 within 15
 * minutes and further attempts from that pair are 429 with Retry-After, the right password included.
 * A client that presents a valid device cookie of this account (set by an earlier successful sign-in)
 * is counted on its own, per (device, email), so someone who only knows the email cannot lock the
 * account's owner out from a browser where the owner signed in before, even from the same address
 * (`docs/security.md`, "Login lockout").
 */
export async function login(
  { db, keyring }: Pick<AppContext, 'db' | 'keyring'>,
  input: { email: string; password: string; ip: string; device?: string },
): Promise<{ user: UserView; sessionToken: string; deviceToken: string }> {
  const email = input.email.trim().toLowerCase();
  const since = new Date(Date.now() - LOGIN_WINDOW_MS).toISOString();
  const user = await store.findUserByEmail(db, email);
  const deviceId = user ? verifyDeviceToken(keyring, user.id, input.device) : null;
  // The failure counter's key: the device when the client proved one, else the client address.
  const key = deviceId ? `device:${deviceId}` : input.ip;
  // The attempt counts as a failure before its password is checked, and the count includes it: of
  // attempts sent at once (on this instance or another), at most LOGIN_MAX_FAILURES get checked.
  const attempt = { id: newId('lgf'), ip: key, email, at: nowIso() };
  await store.insertLoginAttempt(db, attempt);
  const recent = await store.countRecentLoginFailures(db, key, email, since);
  if (Number(recent.n) > LOGIN_MAX_FAILURES) {
    await store.forgetLoginAttempt(db, attempt.id);
    const oldest = recent.oldest ? Date.parse(String(recent.oldest)) : Date.now();
    const retry = Math.max(1, Math.ceil((oldest + LOGIN_WINDOW_MS - Date.now()) / 1000));
    throw new AppError('RATE_LIMITED', 'too many failed sign-in attempts; try again later', { retryAfterSeconds: retry });
  }
  const ok = await verifyPassword(input.password, user?.passwordHash);
  if (!user || !ok) {
    await store.pruneLoginFailures(db, since);
    throw new AppError('UNAUTHENTICATED', 'wrong email or password');
  }
  await store.forgetLoginAttempt(db, attempt.id);
  const orgs = await store.listUserOrgs(db, user.id);
  if (orgs.length === 0) throw new AppError('UNAUTHENTICATED', 'this account belongs to no organization');
  const session = newSession(user.id, orgs[0]!.id);
  await store.insertSession(db, session.row);
  return { user: presentUser(user), sessionToken: session.token, deviceToken: newDeviceToken(keyring, user.id, deviceId ?? undefined) };
}

/** Ends the actor's session (a bearer request has none); its streams and cached credential end too. */
export async function logout({ db, access }: Pick<AppContext, 'db' | 'access'>, actor: Actor): Promise<void> {
  if (actor.sessionId) await store.deleteSession(db, actor.sessionId);
  access.changed({ userId: actor.userId });
}
