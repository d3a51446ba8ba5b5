/**
 * The edge on a worker thread of its own (docs/edge.md, "Where the edge runs"): a real server with a
 * real app, seen from the main thread (request log, metrics, server log, sleep) as before.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import tls from 'node:tls';
import { createLogger } from '../../src/lib/logger.js';
import { getRuntime } from '../../src/modules/hosting/host.js';
import { sampleOnce } from '../../src/modules/metrics/sampler.js';
import { rawRequest, startEdgeApp, type EdgeApp } from '../security/edge-support.js';
import { waitFor } from '../support/wait.js';

let app: EdgeApp;
let logged = '';

before(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logged += chunk.toString();
      cb();
    },
  });
  app = await startEdgeApp({ BERTH_HTTPS_PORT: '0' }, { logger: createLogger('debug', sink) });
});
after(() => app?.close());

test("the edge serves from a worker thread and the server's log, request log and metrics still see its requests", async () => {
  const rt = getRuntime(app.server.ctx);
  assert.equal(rt.edge!.thread, true, 'the edge runs on a worker thread');
  for (let i = 0; i < 3; i++) assert.equal((await rawRequest(app.edgePort(), 'GET', `/threaded-${i}?q=1`, app.host)).status, 200);

  // The request log answers with every request answered before the read.
  const log = await app.requestLog();
  for (let i = 0; i < 3; i++) assert.ok(log.some((e) => e.path === `/threaded-${i}` && e.status === 200 && e.ip === '127.0.0.1'), JSON.stringify(log));

  // Metrics: the requests are in the app's series once sampled.
  await waitFor(async () => {
    await sampleOnce(app.server.ctx);
    const res = await app.api.get(`/api/projects/${app.projectId}/metrics`);
    const sum = (res.body.data?.series?.[0]?.requests2xx ?? []).reduce((a: number, b: number | null) => a + (b ?? 0), 0);
    return sum >= 3;
  }, 'the requests in the metrics', 10_000, 100);

  // The server's log: what the worker logs reaches it (a TLS handshake for a name without a certificate).
  const port = rt.httpsPort()!;
  await new Promise<void>((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', servername: 'no-certificate.test', rejectUnauthorized: false });
    s.on('error', () => resolve());
    s.on('secureConnect', () => s.destroy());
    s.on('close', () => resolve());
  });
  await waitFor(async () => logged.includes('edge TLS handshake failed') && logged.includes('no-certificate.test'), 'the worker\'s log line in the server log', 5000, 50);
});

test('the edge thread restarts on the same port when it dies, and the app is served again', async () => {
  const rt = getRuntime(app.server.ctx);
  const port = app.edgePort();
  const edge = rt.edge as unknown as { worker: { terminate(): Promise<number> } | null };
  await edge.worker!.terminate();
  await waitFor(async () => logged.includes('the edge\'s worker thread exited'), 'the exit logged as an error', 5000, 50);
  await waitFor(async () => (await rawRequest(port, 'GET', '/after-restart', app.host).catch(() => ({ status: 0 }))).status === 200, 'the edge to serve again', 10_000, 100);
  assert.equal(app.edgePort(), port);
});

test('with BERTH_EDGE_THREAD=0 the edge runs on the main thread and serves and logs the same', async () => {
  const other = await startEdgeApp({ BERTH_EDGE_THREAD: '0' });
  try {
    assert.equal(getRuntime(other.server.ctx).edge!.thread, false);
    assert.equal((await rawRequest(other.edgePort(), 'GET', '/on-main', other.host)).status, 200);
    assert.ok((await other.requestLog()).some((e) => e.path === '/on-main' && e.status === 200));
  } finally {
    await other.close();
  }
});
