/**
 * The tunnel of `berth services connect` (contract section 19): an authenticated API request upgraded
 * to a raw TCP relay to a managed service, so a client on the user's machine (`psql`, `mysql`,
 * `redis-cli`) reaches the database with no port opened on the host. The server reaches the service
 * from inside the service's own network namespace (a relay process there: runtime/netns-join.ts), since
 * the service's network admits no host address; the relay ends when either side closes or the access
 * that opened it ends.
 */
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { connectAt } from '../../runtime/netns-join.js';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { endWithAccess, type StreamAccess } from '../../http/stream-access.js';
import { conflict } from '../../lib/errors.js';
import { insertAuditEvent } from '../audit/index.js';
import type { ProjectRow } from '../projects/index.js';
import { findManagedOr404 } from './managed.service.js';

/** The protocol name of the upgrade (`Upgrade: berth-tcp`). */
export const TUNNEL_PROTOCOL = 'berth-tcp';

const CONNECT_TIMEOUT_MS = 10_000;

/** A TCP connection to the running service (409 when it does not run or does not answer); audited. */
export async function connectService(ctx: AppContext, actor: Actor, project: ProjectRow, serviceId: string): Promise<Duplex> {
  const row = await findManagedOr404(ctx, project, serviceId);
  const addr = ctx.state.services.runner?.address(row.id) ?? null;
  if (!addr) throw conflict(`service ${row.name} is not running (it is ${row.status}): start it first`);
  let upstream: Duplex;
  try {
    // From inside the service's own network (its namespace): the host itself cannot reach it.
    upstream = await connectAt(addr.host, addr.port, CONNECT_TIMEOUT_MS);
  } catch (e) {
    ctx.log.warn({ serviceId: row.id, err: (e as Error).message }, 'service tunnel: the service did not answer');
    throw conflict(`service ${row.name} did not answer (${(e as Error).message}): see its log`);
  }
  await insertAuditEvent(ctx.db, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.connect', resourceType: 'project', resourceId: project.id, details: { serviceId: row.id } });
  return upstream;
}

/** Relays bytes both ways until either side closes, or the access that opened the tunnel ends. */
export function relay(client: net.Socket, head: Buffer, upstream: Duplex, access: StreamAccess | null): void {
  const listeners: Array<() => void> = [];
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    client.destroy();
    upstream.destroy();
    for (const fn of listeners.splice(0)) fn();
  };
  client.setNoDelay(true);
  for (const s of [client, upstream]) {
    s.on('error', close);
    s.on('close', close);
  }
  if (head.length) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
  if (access) {
    endWithAccess(
      {
        comment: () => {},
        close,
        get closed() {
          return closed;
        },
        onClose: (fn) => (closed ? fn() : listeners.push(fn)),
      },
      access,
    );
  }
}
