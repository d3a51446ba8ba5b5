import { createHmac, randomBytes } from 'node:crypto';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { invalid } from '../../lib/errors.js';
import { safeEqual } from '../../lib/crypto.js';
import * as gh from './github.js';
import * as store from './gitprovider.store.js';

/**
 * The signed `state` of the redirect flows (OAuth authorize, App install): it names the org and the
 * user who started the flow, expires after 10 minutes and is used once.
 */

const STATE_TTL_MS = 10 * 60 * 1000;

export interface StatePayload {
  /** Nonce (single use). */
  n: string;
  /** Org id. */
  o: string;
  /** User id. */
  u: string;
  p: 'oauth' | 'install';
  /** Expiry, ms since the epoch. */
  e: number;
}

export function signState(ctx: AppContext, actor: Actor, purpose: 'oauth' | 'install'): string {
  const payload: StatePayload = { n: randomBytes(16).toString('base64url'), o: actor.orgId, u: actor.userId, p: purpose, e: Date.now() + STATE_TTL_MS };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const sig = createHmac('sha256', gh.stateKey(ctx)).update(body).digest('base64url');
  return `${body}.${sig}`;
}

/** Verifies a state: signature, expiry, purpose, the user still a member of the org, and single use. */
export async function consumeState(ctx: AppContext, state: string | undefined, purpose: 'oauth' | 'install'): Promise<StatePayload> {
  const bad = () => invalid('state', 'state is missing, invalid, expired or already used: start the connection again');
  if (!state) throw bad();
  const [body, sig] = state.split('.');
  if (!body || !sig) throw bad();
  const expected = createHmac('sha256', gh.stateKey(ctx)).update(body).digest('base64url');
  if (!safeEqual(sig, expected)) throw bad();
  let p: StatePayload;
  try {
    p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as StatePayload;
  } catch {
    throw bad();
  }
  if (p.p !== purpose || typeof p.e !== 'number' || p.e < Date.now() || typeof p.n !== 'string' || typeof p.o !== 'string') throw bad();
  if (!(await ctx.ports.auth.memberActor(ctx, p.o, p.u))) throw bad();
  if (!(await store.useStateNonce(ctx.db, p.n, p.o, new Date(p.e).toISOString()))) throw bad();
  return p;
}
