import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * HTTP/1.1 Upgrade on the API (the services area's tunnel: `berth services connect`). Node hands a
 * request with `Connection: Upgrade` to the server's `upgrade` event, not to Fastify; here it goes
 * through Fastify's routing like any request, so its route's gate (credential, tag, record) runs as
 * usual, with a response bound to the connection: an error is answered with the JSON envelope and the
 * connection closed. A route that speaks the protocol takes the connection with `takeUpgrade` and, once
 * it has checked what it needs, `accept()`s it (101) and owns the raw socket from then on. Other
 * routes answer an upgrade request as any other, and the connection closes after the answer.
 */

const kUpgrade = Symbol('berth.upgrade');

interface Pending {
  protocol: string;
  socket: Socket;
  head: Buffer;
  taken: boolean;
}

type WithUpgrade = IncomingMessage & { [kUpgrade]?: Pending };

/** An upgrade request a route may accept: `accept()` answers 101 and hands over the socket and the bytes that came after the headers. */
export interface UpgradeRequest {
  accept(): { socket: Socket; head: Buffer };
}

/** Routes Upgrade requests through `app`'s routes; the connections accepted end when the server closes. */
export function routeUpgrades(app: FastifyInstance): void {
  const open = new Set<Socket>();
  app.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const pending: Pending = { protocol: String(req.headers.upgrade ?? '').trim().toLowerCase(), socket, head, taken: false };
    (req as WithUpgrade)[kUpgrade] = pending;
    socket.on('error', () => socket.destroy());
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    // An answer (an error, or a route that does not upgrade) ends the connection.
    res.on('finish', () => {
      if (!pending.taken) socket.end();
    });
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    app.routing(req, res);
  });
  app.addHook('preClose', (done) => {
    for (const s of open) s.destroy();
    done();
  });
}

/**
 * The upgrade to `protocol` this request asks for, or null when it asks for none (or another one).
 * Nothing is answered until `accept()`: errors thrown before it reach the client as usual.
 */
export function takeUpgrade(req: IncomingMessage, protocol: string): UpgradeRequest | null {
  const pending = (req as WithUpgrade)[kUpgrade];
  if (!pending || pending.protocol !== protocol.toLowerCase()) return null;
  return {
    accept() {
      pending.taken = true;
      const { socket } = pending;
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${protocol}\r\n\r\n`);
      return { socket, head: pending.head };
    },
  };
}
