import type { FastifyReply } from 'fastify';
import { openSse } from '../../http/sse.js';
import { endWithAccess, type StreamAccess } from '../../http/stream-access.js';
import type { BackupEvents } from './events.js';
import { isTerminal } from './retention.js';

const STREAM_POLL_MS = 1000;

/**
 * SSE of one run or restore: `snapshot` first, then live `transition` and `progress`, then `complete`
 * and close. Events come from the in-process bus; the row is also polled, so a run executing on
 * another instance is followed as well.
 */
export function streamRecord<T extends { status: string }>(
  events: BackupEvents,
  reply: FastifyReply,
  reqId: string,
  key: string,
  load: () => Promise<T | undefined>,
  view: (row: T) => unknown,
  initial: T,
  access: StreamAccess | null,
): void {
  const sse = openSse(reply, { requestId: reqId });
  // The stream ends when the access that opened it ends (docs/security.md).
  if (access) endWithAccess(sse, access);
  let seq = 0;
  let last = initial.status;
  let done = false;
  const finish = async () => {
    if (done) return;
    done = true;
    const row = (await load().catch(() => undefined)) ?? initial;
    sse.send('complete', view(row), ++seq);
    sse.close();
  };
  sse.send('snapshot', view(initial), ++seq);
  if (isTerminal(initial.status)) {
    void finish();
    return;
  }
  const unsub = events.subscribe(key, (ev) => {
    if (done) return;
    if (ev.type === 'transition') {
      if (ev.data.to === last) return;
      last = ev.data.to;
      sse.send('transition', ev.data, ++seq);
      if (isTerminal(ev.data.to)) void finish();
    } else {
      sse.send('progress', ev.data, ++seq);
    }
  });
  const poll = setInterval(() => {
    void (async () => {
      if (done) return;
      const row = await load().catch(() => undefined);
      if (done) return;
      if (!row) {
        // Pruned or deleted while watched.
        done = true;
        sse.close();
        return;
      }
      if (row.status !== last) {
        sse.send('transition', { from: last, to: row.status, at: new Date().toISOString() }, ++seq);
        last = row.status;
        if (isTerminal(row.status)) await finish();
      }
    })();
  }, STREAM_POLL_MS);
  poll.unref();
  sse.onClose(() => {
    done = true;
    unsub();
    clearInterval(poll);
  });
}
