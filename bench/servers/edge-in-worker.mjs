// The EdgeServer class alone on a worker thread of a Berth process (bench/servers/berth.mjs starts it when
// BENCH_EDGE_IN_WORKER names a folder): every host goes to the app whose port the bench writes to
// `<folder>/up` once it runs; the edge's port goes to the parent, which writes it to `<folder>/port`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { EdgeServer } from '../../dist/edge/proxy.js';
import { RequestLog } from '../../dist/edge/requests.js';

let up = null;
const upstream = () => (up ??= (() => {
  const port = Number(readFileSync(path.join(workerData.dir, 'up'), 'utf8'));
  return { host: '127.0.0.1', port, key: `127.0.0.1:${port}` };
})());
const target = { projectId: 'p1', unavailable: null, rules: [] };
const edge = new EdgeServer({ lookup: () => target, upstream }, new RequestLog(), pino({ level: 'warn' }));
const { port } = await edge.listen('127.0.0.1', 0);
parentPort.postMessage(port);
