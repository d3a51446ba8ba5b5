/**
 * Whose access may have narrowed: a user (token revoked, signed out), a member of an org (removed, role
 * or grants changed), or a whole org. Fields left out match everyone.
 */
export interface AccessChange {
  userId?: string;
  orgId?: string;
}

type Listener = (change: AccessChange) => void;

/**
 * Access-change events of one running server (`ctx.access`). A write that changes who can do what
 * calls `changed()` after it committed; listeners run in the order they subscribed: the auth area's
 * credential cache (subscribed when the auth module starts) drops its entries first, so that later
 * listeners (open streams re-authorizing themselves) read the new state. In-process only: another
 * instance sharing the database learns of it through its cache's short TTL and its streams' periodic
 * re-authorization (`src/http/stream-access.ts`).
 */
export class AccessEvents {
  private readonly listeners = new Set<Listener>();

  changed(change: AccessChange): void {
    for (const fn of [...this.listeners]) {
      try {
        fn(change);
      } catch {
        /* one listener's failure must not stop the others */
      }
    }
  }

  /** Listens for access changes; answers the function that stops listening. */
  on(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  }
}

/** Does `change` concern the access of `userId` in `orgId`? */
export function concerns(change: AccessChange, userId: string, orgId: string): boolean {
  return (change.userId === undefined || change.userId === userId) && (change.orgId === undefined || change.orgId === orgId);
}
