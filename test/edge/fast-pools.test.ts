/**
 * The fast path's kept connections to the apps (src/edge/fast/upstream.ts `RawPools`), against a real
 * TCP server on 127.0.0.1: a connection given back is taken again; one idle past its time, or one the
 * app closes while it is idle, leaves the pool and is closed; the idle timer never closes one in use;
 * requests are written at the end of the turn that sent them.
 */

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { RawPools, type RawAddress } from '../../src/edge/fast/upstream.js';
import { waitFor } from '../support/wait.js';

/** An exchange that only counts what its connection tells it. */
function user() {
  const seen = { data: 0, ends: 0, errors: [] as string[] };
  return { seen, onData: () => void seen.data++, onEnd: () => void seen.ends++, onError: (e: Error) => void seen.errors.push(e.message) };
}

/** Runs `fn` with a fresh pool, closed after. */
async function withPools(fn: (pools: RawPools) => Promise<void>): Promise<void> {
  const pools = new RawPools();
  try {
    await fn(pools);
  } finally {
    pools.close();
  }
}

/** A new connection to `up`, once connected, given back to the pool for `appKeepAliveMs` less a second. */
async function pooled(pools: RawPools, up: RawAddress, appKeepAliveMs: number | null) {
  const { conn } = pools.take(up, user());
  await new Promise((r) => conn.socket.once('connect', r));
  pools.give(up.key, conn, appKeepAliveMs);
  return conn;
}

describe('the kept connections to the apps', () => {
  let server: net.Server;
  const accepted: net.Socket[] = [];
  let up: RawAddress;

  before(async () => {
    server = net.createServer((s) => {
      accepted.push(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    up = { host: '127.0.0.1', port, key: `127.0.0.1:${port}` };
  });

  after(async () => {
    for (const s of accepted) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('a connection given back is the next one taken; a fresh take dials a new one', () =>
    withPools(async (pools) => {
      const first = pools.take(up, user());
      assert.equal(first.reused, false);
      await new Promise((r) => first.conn.socket.once('connect', r));
      pools.give(up.key, first.conn, null);
      const again = pools.take(up, user());
      assert.equal(again.reused, true);
      assert.equal(again.conn, first.conn);
      pools.give(up.key, again.conn, null);
      const fresh = pools.take(up, user(), true);
      assert.equal(fresh.reused, false);
      assert.notEqual(fresh.conn, first.conn);
      fresh.conn.drop();
    }));

  it("one idle past a second under the app's Keep-Alive timeout is closed and leaves the pool", () =>
    withPools(async (pools) => {
      const conn = await pooled(pools, up, 1150); // kept 150 ms
      await waitFor(() => conn.socket.destroyed, 'the idle connection to be closed', 5000, 20);
      assert.equal(pools.take(up, user()).reused, false, 'the pool no longer holds it');
    }));

  it('the idle timer does not close a connection in use; given back, it is kept its whole idle time again', () =>
    withPools(async (pools) => {
      const conn = await pooled(pools, up, 1150);
      const taken = pools.take(up, user());
      assert.equal(taken.conn, conn);
      await new Promise((r) => setTimeout(r, 300)); // past the 150 ms it was kept for
      assert.equal(conn.socket.destroyed, false, 'in use: not closed');
      pools.give(up.key, conn, 1150);
      await new Promise((r) => setTimeout(r, 60));
      assert.equal(conn.socket.destroyed, false, 'kept again from the moment it was given back');
      await waitFor(() => conn.socket.destroyed, 'the idle connection to be closed', 5000, 20);
    }));

  it('an idle connection the app closes, or sends on, leaves the pool; events reach the exchange using it', () =>
    withPools(async (pools) => {
      const u = user();
      const a = pools.take(up, u);
      const b = pools.take(up, user());
      await Promise.all([a, b].map((t) => new Promise((r) => (t.conn.socket.connecting ? t.conn.socket.once('connect', r) : r(null)))));
      const peerOf = (c: net.Socket) => waitFor(() => accepted.find((s) => s.remotePort === c.localPort), 'the connection accepted', 5000, 10);
      const sa = await peerOf(a.conn.socket);
      const sb = await peerOf(b.conn.socket);
      // In use: the app's bytes go to the exchange.
      sa.write('x');
      await waitFor(() => u.seen.data === 1, 'the data to reach the exchange', 5000, 10);
      pools.give(up.key, a.conn, null);
      pools.give(up.key, b.conn, null);
      sa.write('unasked');
      sb.end();
      await waitFor(() => a.conn.socket.destroyed && b.conn.socket.destroyed, 'both idle connections to be closed', 5000, 10);
      assert.equal(pools.take(up, user()).reused, false, 'neither is taken again');
    }));

  it('requests sent in one turn are written at its end, each on its connection; one whose connection closed in that turn is not', () =>
    withPools(async (pools) => {
      const taken = [pools.take(up, user()), pools.take(up, user()), pools.take(up, user())];
      await Promise.all(taken.map((t) => new Promise((r) => (t.conn.socket.connecting ? t.conn.socket.once('connect', r) : r(null)))));
      const peers = await Promise.all(taken.map((t) => waitFor(() => accepted.find((s) => s.remotePort === t.conn.socket.localPort), 'the connection accepted', 5000, 10)));
      const got = peers.map(() => '');
      const closed = peers.map(() => false);
      peers.forEach((s, i) => {
        s.on('data', (d: Buffer) => (got[i] += d.toString('latin1')));
        s.on('close', () => (closed[i] = true));
      });
      taken.forEach((t, i) => pools.send(t.conn.socket, `GET /${i} HTTP/1.1\r\nhost: a\r\n\r\n`));
      assert.deepEqual(taken.map((t) => t.conn.socket.bytesWritten), [0, 0, 0], 'nothing is written during the turn');
      taken[2]!.conn.socket.destroy();
      await waitFor(() => got[0]!.endsWith('\r\n\r\n') && got[1]!.endsWith('\r\n\r\n') && closed[2], 'the two requests to arrive and the third connection to close', 5000, 10);
      assert.equal(got[0], 'GET /0 HTTP/1.1\r\nhost: a\r\n\r\n');
      assert.equal(got[1], 'GET /1 HTTP/1.1\r\nhost: a\r\n\r\n');
      assert.equal(got[2], '', 'the closed connection carried nothing');
      for (const t of taken) t.conn.drop();
    }));
});
