// The edge's EdgeServer alone (no API, jobs or sampler on its thread) in front of one app at 127.0.0.1:$UP, for $HOSTNAME.
import pino from 'pino';
import { EdgeServer } from '../../dist/edge/proxy.js';
import { RequestLog } from '../../dist/edge/requests.js';
const up = { host: '127.0.0.1', port: Number(process.env.UP), key: `127.0.0.1:${process.env.UP}` };
const target = { projectId: 'p1', unavailable: null, rules: [] };
const backend = { lookup: (h) => (h === process.env.HOSTNAME ? target : null), upstream: () => up };
const edge = new EdgeServer(backend, new RequestLog(), pino({ level: 'warn' }));
const { port } = await edge.listen('127.0.0.1', 0);
console.log(JSON.stringify({ port, pid: process.pid }));
process.on('SIGTERM', () => void edge.close().then(() => process.exit(0)));
