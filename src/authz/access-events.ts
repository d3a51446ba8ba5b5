/**
 * Whose access may have narrowed: a user (token revoked, signed out), a member of an org (removed, role
 * or grants changed), or a whole org. Fields left out match everyone.
 */
export interface AccessChange {
  userId?: string;
  orgId?: string;
}

type Listener = (change: AccessChange) => void;

/** What AccessEvents needs of the notification bus (`src/db/notify.ts`, `ctx.bus`). */
export interface AccessRelay {
  readonly instanceId: string;
  /** False while the bus may be missing messages (its PostgreSQL listener is down). */
  readonly live: boolean;
  publish(channel: string, payload?: unknown, opts?: { hold?: boolean }): Promise<void>;
  subscribe(channel: string, fn: (payload: any, origin: string | null) => void): () => void;
  onResync(fn: () => void): () => void;
}

/** The bus channel of access changes (payload: the AccessChange, ids only). */
export const ACCESS_CHANNEL = 'access';

/**
 * Access-change events of one running server (`ctx.access`). A write that changes who can do what
 * calls `changed()` after it committed; listeners run in the order they subscribed: the auth area's
 * credential cache (subscribed when the auth module starts) drops its entries first, so that later
 * listeners (open streams re-authorizing themselves) read the new state. Relayed over the bus
 * (`relay`): every other instance sharing the database hears the change at once and tells its own
 * listeners; when the bus may have missed messages (its PostgreSQL listener dropped), listeners are
 * told that everyone's access may have changed (`{}`), and every second until it is back.
 */
export class AccessEvents {
  private readonly listeners = new Set<Listener>();
  private bus: AccessRelay | null = null;

  /** Publishes this server's changes on `bus` and delivers the other instances' ones here. */
  relay(bus: AccessRelay): void {
    this.bus = bus;
    bus.subscribe(ACCESS_CHANNEL, (change: AccessChange, origin) => {
      // Our own changes were delivered when they were made.
      if (origin !== bus.instanceId && this.bus === bus && change && typeof change === 'object') this.deliver(pick(change));
    });
    // Messages may have been missed: everyone's access may have changed. While the bus stays down,
    // again every second (caches then keep nothing longer than that).
    let outage: NodeJS.Timeout | null = null;
    bus.onResync(() => {
      this.deliver({});
      if (bus.live || outage) return;
      outage = setInterval(() => {
        this.deliver({});
        if (bus.live && outage) {
          clearInterval(outage);
          outage = null;
        }
      }, 1000);
      outage.unref();
    });
  }

  changed(change: AccessChange): void {
    this.deliver(change);
    // The request's answer waits until the other instances have it (`hold`).
    if (this.bus) void this.bus.publish(ACCESS_CHANNEL, pick(change), { hold: true }).catch(() => {});
  }

  private deliver(change: AccessChange): void {
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

function pick(c: AccessChange): AccessChange {
  const out: AccessChange = {};
  if (typeof c.userId === 'string') out.userId = c.userId;
  if (typeof c.orgId === 'string') out.orgId = c.orgId;
  return out;
}

/** Does `change` concern the access of `userId` in `orgId`? */
export function concerns(change: AccessChange, userId: string, orgId: string): boolean {
  return (change.userId === undefined || change.userId === userId) && (change.orgId === undefined || change.orgId === orgId);
}
