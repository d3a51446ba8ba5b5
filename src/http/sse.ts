import type { FastifyReply } from 'fastify';

export interface SseWriter {
  /** Writes one event frame: `id`, `event`, `data` (JSON). */
  send(event: string, data: unknown, id?: number | string): void;
  /** Writes a comment line (`: text`), which clients ignore; says why a stream ends. */
  comment(text: string): void;
  close(): void;
  readonly closed: boolean;
  /** Called once when the client goes away or close() runs. */
  onClose(fn: () => void): void;
}

/**
 * Takes over the reply for Server-Sent Events: headers, a comment heartbeat every
 * `heartbeatMs` (15 s by default), and cleanup when the client disconnects.
 */
export function openSse(reply: FastifyReply, opts: { heartbeatMs?: number; requestId?: string } = {}): SseWriter {
  reply.hijack();
  const res = reply.raw;
  const headers: Record<string, string> = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  };
  if (opts.requestId) headers['x-request-id'] = opts.requestId;
  res.writeHead(200, headers);
  res.write(': stream open\n\n');
  let closed = false;
  const listeners: Array<() => void> = [];
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    for (const fn of listeners.splice(0)) {
      try {
        fn();
      } catch {
        /* a listener's failure must not stop the others */
      }
    }
  };
  const timer = setInterval(() => {
    if (!closed) res.write(': heartbeat\n\n');
  }, opts.heartbeatMs ?? 15000);
  timer.unref();
  res.on('close', finish);
  return {
    send(event, data, id) {
      if (closed) return;
      let frame = '';
      if (id !== undefined) frame += `id: ${id}\n`;
      frame += `event: ${event}\n`;
      for (const line of JSON.stringify(data).split('\n')) frame += `data: ${line}\n`;
      res.write(frame + '\n');
    },
    comment(text) {
      if (closed) return;
      res.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
    },
    close() {
      if (closed) return;
      res.end();
      finish();
    },
    get closed() {
      return closed;
    },
    onClose(fn) {
      if (closed) fn();
      else listeners.push(fn);
    },
  };
}
