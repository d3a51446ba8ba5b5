import type { FastifyReply } from 'fastify';
import { openSse } from './sse.js';
import { endWithAccess, type StreamAccess } from './stream-access.js';

/**
 * A log as Server-Sent Events: the backlog, then live entries, until the client leaves, `until` says
 * so or the access that opened it ends. The streams of app, build, request and service logs share it.
 */
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
