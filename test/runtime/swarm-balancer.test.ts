import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { mayResend, TcpBalancer, type Backend } from '../../src/runtime/docker/swarm-balancer.js';
import { waitFor } from '../support/wait.js';

// The Swarm balancer on loopback with real sockets standing in for tasks: one that answers, and one
// that accepts and holds a request without a byte of answer (what a task the engine is stopping can do
// behind its port proxy). No engine is needed: the task list is the test's.

interface Task {
  backend: Backend;
  requests: string[];
  close(): Promise<void>;
}

/** A task that answers `<name> <method>` to every request. */
async function answering(name: string): Promise<Task> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end(`${name} ${req.method}`));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    backend: { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port },
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A task that accepts and reads, then says nothing until `closeAfterMs` (never when null). */
async function silent(closeAfterMs: number | null): Promise<Task> {
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.once('data', (c: Buffer) => requests.push(c.toString('latin1').split('\r\n')[0]!));
    s.on('error', () => {});
    if (closeAfterMs !== null) setTimeout(() => s.destroy(), closeAfterMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    backend: { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port },
    requests,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

function send(port: number, method: string, timeoutMs = 8000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: '/x', agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(method === 'POST' ? 'payload' : undefined);
  });
}

describe('the Swarm balancer in front of tasks a rolling update stops', () => {
  const open: { close(): unknown }[] = [];
  after(async () => {
    for (const o of open) await o.close();
  });

  async function balancerOver(list: Backend[]): Promise<{ port: number; list: Backend[]; balancer: TcpBalancer }> {
    const balancer = new TcpBalancer(() => list, async () => {});
    open.push({ close: () => balancer.close() });
    return { port: await balancer.listen('127.0.0.1'), list, balancer };
  }

  it('a GET held unanswered by a task that then leaves the running list is sent to the next task, which answers it', async () => {
    const stopping = await silent(null);
    const next = await answering('next');
    open.push(stopping, next);
    const b = await balancerOver([stopping.backend, next.backend]);
    // The first connection goes to the first task in turn: the silent one.
    const answer = send(b.port, 'GET');
    await waitFor(() => stopping.requests.length === 1, 'the request to reach the first task', 5000, 20);
    b.list.splice(0, 1); // the engine's list no longer has it (its desired state is shutdown)
    assert.equal(await answer, 'next GET');
    assert.deepEqual(stopping.requests, ['GET /x HTTP/1.1']);
    assert.deepEqual(next.requests, ['GET /x']);
  });

  it('a POST is never sent twice: the task that held it closes without an answer after the retry window, and the client sees the connection end', async () => {
    const stopping = await silent(1500);
    const next = await answering('next');
    open.push(stopping, next);
    const b = await balancerOver([stopping.backend, next.backend]);
    const answer = send(b.port, 'POST');
    await waitFor(() => stopping.requests.length === 1, 'the request to reach the first task', 5000, 20);
    b.list.splice(0, 1);
    await assert.rejects(answer, /socket hang up|ECONNRESET/);
    assert.deepEqual(next.requests, [], 'the POST did not reach a second task');
  });

  it('a GET that a task closes without an answer after the retry window is still sent to the next task', async () => {
    const dropping = await silent(1500);
    const next = await answering('next');
    open.push(dropping, next);
    const b = await balancerOver([dropping.backend, next.backend]);
    assert.equal(await send(b.port, 'GET'), 'next GET');
    assert.deepEqual(next.requests, ['GET /x']);
  });

  it("a task's lane joins the rotation once the task holds a connection open: not while it refuses, nor while its port closes each connection at once", async () => {
    const up = await answering('up');
    // A task the engine reports running before its server listens: its port refuses, then answers.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const latePort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    // A port proxy with nothing behind it: it accepts and closes each connection at once.
    const proxy = net.createServer((sock) => sock.destroy());
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    open.push(up, { close: () => new Promise<void>((r) => proxy.close(() => r())) });
    const late: Backend = { host: '127.0.0.1', port: latePort };
    const b = await balancerOver([up.backend, late, { host: '127.0.0.1', port: (proxy.address() as net.AddressInfo).port }]);
    await waitFor(() => b.balancer.readyLanes().length === 1, "the answering task's lane", 5000, 20);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(b.balancer.readyLanes().length, 1, 'only the task that accepts is in the rotation');
    const server = http.createServer((_req, res) => res.end('late GET'));
    await new Promise<void>((r) => server.listen(latePort, '127.0.0.1', r));
    open.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
    await waitFor(() => b.balancer.readyLanes().length === 2, "the late task's lane, once it listens", 5000, 20);
    const answers = new Set<string>();
    for (let i = 0; i < 4; i++) answers.add(await send(b.balancer.pick()!.port, 'GET'));
    assert.deepEqual([...answers].sort(), ['late GET', 'up GET'], 'requests on the lanes reach both tasks');
  });

  it('which requests may be sent twice: by method, as nginx decides; nothing that is not an HTTP request line', () => {
    const of = (s: string) => mayResend([Buffer.from(s, 'latin1')]);
    for (const m of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']) assert.equal(of(`${m} / HTTP/1.1\r\n`), true, m);
    for (const m of ['POST', 'PATCH', 'LOCK']) assert.equal(of(`${m} / HTTP/1.1\r\n`), false, m);
    assert.equal(of('\x16\x03\x01'), false, 'a TLS hello');
    assert.equal(mayResend([]), false, 'nothing sent yet');
    assert.equal(mayResend([Buffer.from('GE'), Buffer.from('T / HTTP/1.1\r\n')]), true, 'a method split over two reads');
  });
});
