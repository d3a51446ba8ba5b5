import { concerns, type AccessEvents } from '../authz/access-events.js';
import { AppError } from '../lib/errors.js';

/**
 * How often every open stream re-runs its authorization. Together with the credential cache's 2 s
 * this bounds how long a stream outlives a change made on another instance sharing the database
 * (about 7 s); changes made on this instance end streams at once (`ctx.access.changed`).
 */
export const REAUTHORIZE_EVERY_MS = 5000;

/** What `endWithAccess` ends: an SSE writer, or any other open stream (a tunnel) with the same few calls. */
export interface EndableStream {
  /** Says why it ends, where the stream can carry a word (a tunnel cannot: a no-op). */
  comment(text: string): void;
  close(): void;
  readonly closed: boolean;
  onClose(fn: () => void): void;
}

/** What an open stream needs to re-check its access: whose it is, and the check itself. */
export interface StreamAccess {
  userId: string;
  orgId: string;
  /** The server's access events (`ctx.access`): a change that concerns this stream re-runs the check at once. */
  events: AccessEvents;
  /** Re-runs the authorization that let the stream open (the credential re-validated); throws the same errors. */
  check(): Promise<unknown>;
}

/** Errors that mean "no access any more"; anything else (a database hiccup) is tried again later. */
function isAccessError(e: unknown): e is AppError {
  return e instanceof AppError && (e.status === 401 || e.status === 403 || e.status === 404);
}

/**
 * Ends `sse` once its access ends: on every access change that concerns the stream's user and org
 * (membership removed, role or grants changed, token revoked, session signed out, on this instance), and
 * at least every `everyMs` (changes made elsewhere). The stream gets a last comment naming why, then
 * closes; a browser EventSource that reconnects meets the route's own 401/403/404.
 */
export function endWithAccess(sse: EndableStream, access: StreamAccess, everyMs = REAUTHORIZE_EVERY_MS): void {
  let running = false;
  let again = false;
  const run = async (): Promise<void> => {
    if (sse.closed) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        try {
          await access.check();
        } catch (e) {
          if (!isAccessError(e)) continue;
          if (!sse.closed) {
            sse.comment(`access ended (${e.status} ${e.code})`);
            sse.close();
          }
          return;
        }
      } while (again && !sse.closed);
    } finally {
      running = false;
    }
  };
  const off = access.events.on((change) => {
    if (concerns(change, access.userId, access.orgId)) void run();
  });
  const timer = setInterval(() => void run(), everyMs);
  timer.unref();
  sse.onClose(() => {
    off();
    clearInterval(timer);
  });
}

/** The access of a stream opened through the route gate (set on raw routes); null on public routes. */
export function gateAccess(req: { streamAccess?: StreamAccess }): StreamAccess | null {
  return req.streamAccess ?? null;
}
