import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * After an early answer (413, 400, 401 while the body is still arriving): close the connection once
 * the answer is written, so the client can read it, and stop storing the rest at once. A plain close
 * with unread bytes in the socket would send a TCP reset that can destroy the answer in flight at the
 * client, so the close lingers: the server sends its FIN (half-close), discards whatever still
 * arrives, and destroys the socket when the client closes or after 2 s.
 */
export function closeAfterAnswer(req: FastifyRequest, reply: FastifyReply): void {
  if (req.raw.readableEnded) return;
  // A request stream destroyed by its reader (an iterator thrown into) no longer names its socket;
  // the answer still does.
  const socket = req.raw.socket ?? reply.raw.socket;
  if (!socket) return;
  reply.header('connection', 'close');
  // Node's server calls destroySoon() after a `Connection: close` answer: half-close instead.
  (socket as unknown as { destroySoon: () => void }).destroySoon = () => socket.end();
  reply.raw.once('finish', () => {
    req.raw.resume();
    socket.resume();
    const t = setTimeout(() => socket.destroy(), 2000);
    t.unref();
    socket.once('close', () => clearTimeout(t));
    socket.once('end', () => socket.destroy());
  });
}
