import type { FastifyReply } from 'fastify';
import { openSse } from '../../http/sse.js';
import { endWithAccess, type StreamAccess } from '../../http/stream-access.js';
import { AppError } from '../../lib/errors.js';

/** A `since` query value as an ISO time (400 naming `query.since` when it is not one). */
export function checkSince(since: string | undefined): string | undefined {
  if (since === undefined) return undefined;
  const t = Date.parse(since);
  if (!Number.isFinite(t)) throw new AppError('VALIDATION_FAILED', 'since must be an ISO-8601 timestamp', { field: 'query.since' });
  return new Date(t).toISOString();
}

export interface LogStreamOptions {
  /** The SSE event name of each entry (`log`, `request`). */
  event: string;
  backlog: unknown[];
  subscribe(fn: (e: unknown) => void): () => void;
  /** `false`: send the backlog and close (no live tail). */
  follow: boolean;
  /** Polled every 500 ms: true once the stream should end (a build reached a terminal status). */
  until?: () => Promise<boolean>;
  /** What the open stream re-checks (`gateAccess(req)`); null: nothing to re-check. */
  access: StreamAccess | null;
}

/** Sends a backlog then live entries as Server-Sent Events, until the client leaves, `until` says so or access ends. */
export function streamLogs(reply: FastifyReply, requestId: string, o: LogStreamOptions): void {
  const sse = openSse(reply, { requestId });
  let seq = 0;
  for (const l of o.backlog) sse.send(o.event, l, ++seq);
  if (!o.follow) {
    sse.close();
    return;
  }
  const off = o.subscribe((e) => sse.send(o.event, e, ++seq));
  // A live stream ends when the access that opened it ends.
  if (o.access) endWithAccess(sse, o.access);
  let timer: NodeJS.Timeout | null = null;
  if (o.until) {
    const until = o.until;
    timer = setInterval(() => {
      void until().then((done) => {
        if (done) setTimeout(() => sse.close(), 200);
      });
    }, 500);
    timer.unref();
  }
  sse.onClose(() => {
    off();
    if (timer) clearInterval(timer);
  });
}
