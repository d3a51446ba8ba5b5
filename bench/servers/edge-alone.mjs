// The edge's EdgeServer alone (no API, jobs or sampler on its thread) in front of one app at 127.0.0.1:$UP, for $HOSTNAME.
// ALONE_KEPT=1 also keeps the request log on disk as Berth does (kept-logs.ts), in a temporary folder.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { EdgeServer } from '../../dist/edge/proxy.js';
import { RequestLog } from '../../dist/edge/requests.js';
import { LogStore } from '../../dist/runtime/logs.js';
const up = { host: '127.0.0.1', port: Number(process.env.UP), key: `127.0.0.1:${process.env.UP}` };
const target = { projectId: 'p1', unavailable: null, rules: [] };
const backend = { lookup: (h) => (h === process.env.HOSTNAME ? target : null), upstream: () => up };
const requests = new RequestLog();
if (process.env.ALONE_KEPT) {
  const logs = new LogStore(mkdtempSync(path.join(os.tmpdir(), 'berth-edge-alone-')));
  requests.onRecord = (app, e) => logs.requests(app).append(e);
}
const edge = new EdgeServer(backend, requests, pino({ level: 'warn' }));
const { port } = await edge.listen('127.0.0.1', 0);
console.log(JSON.stringify({ port, pid: process.pid }));
process.on('SIGTERM', () => void edge.close().then(() => process.exit(0)));
