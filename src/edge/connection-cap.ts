import type { Duplex } from 'node:stream';
import type { AddressCounter } from '../lib/address-counter.js';
import { normalizeIp } from '../lib/cidr.js';
import type { EdgeLimits } from './limits.js';

/** On a socket: the address its connection is counted under, and whether it was over the cap. */
const COUNTED = Symbol('edgeCountedAddress');
const OVER_CAP = Symbol('edgeOverCap');
type CountedSocket = Duplex & { [COUNTED]?: string; [OVER_CAP]?: boolean; remoteAddress?: string };

/**
 * Counts a new connection under its socket address (trusted proxies are not capped: they carry many
 * clients). One over the cap is marked, and its first request is answered 503 and the connection closed.
 * A socket handed back to the HTTP server after an upgrade that was not accepted is already counted.
 */
export function countConnection(socket: CountedSocket, connections: AddressCounter, limits: EdgeLimits): void {
  if (socket[COUNTED] !== undefined) return;
  const addr = normalizeIp(socket.remoteAddress ?? '');
  const trusted = limits.trustedProxies;
  if (trusted.size > 0 && trusted.trusts(addr)) {
    socket[COUNTED] = '';
    return;
  }
  socket[COUNTED] = addr;
  if (connections.add(addr, socket) > limits.maxConnectionsPerAddress) socket[OVER_CAP] = true;
}

/** Was the socket's connection over the per-address cap when it was counted? */
export function isOverCap(socket: Duplex): boolean | undefined {
  return (socket as CountedSocket)[OVER_CAP];
}
