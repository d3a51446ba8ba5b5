import { invalidateAuthCache } from '../modules/auth/auth.cache.js';

/**
 * Whose access may have narrowed: a user (token revoked, signed out), a member of an org (removed, role
 * or grants changed), or a whole org. Fields left out match everyone.
 */
export interface AccessChange {
  userId?: string;
  orgId?: string;
}

type Listener = (change: AccessChange) => void;

const listeners = new Set<Listener>();

/**
 * Says that access may have narrowed (call it after the write committed). The credential cache is
 * dropped first, so that listeners (open streams re-authorizing themselves) read the new state. This is
 * in-process: another instance sharing the database learns of it through its streams' periodic
 * re-authorization (`src/http/stream-access.ts`).
 */
export function accessChanged(change: AccessChange): void {
  invalidateAuthCache();
  for (const fn of [...listeners]) {
    try {
      fn(change);
    } catch {
      /* one listener's failure must not stop the others */
    }
  }
}

/** Listens for access changes; answers the function that stops listening. */
export function onAccessChange(fn: Listener): () => void {
  listeners.add(fn);
  return () => {
    listeners.delete(fn);
  };
}

/** Does `change` concern the access of `userId` in `orgId`? */
export function concerns(change: AccessChange, userId: string, orgId: string): boolean {
  return (change.userId === undefined || change.userId === userId) && (change.orgId === undefined || change.orgId === orgId);
}
