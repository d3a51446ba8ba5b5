import { load, startChild, type Row } from './lib.js';

/**
 * Issue "Foundation" point 11 (target raised by issue 16 point 8): authenticated GET /api/auth/me
 * against a bare Fastify hello-world, both in a child process started the same way, 32 connections.
 * Target: ratio >= 0.7, p99 < 10 ms.
 */
export async function foundationBench(): Promise<Row[]> {
  const bare = await startChild('bench/servers/bare.mjs');
  const bareRes = await load({ url: bare.info.url, path: '/hello', connections: 32, expect: 200 });
  await bare.stop();
  const berth = await startChild('bench/servers/berth.mjs');
  const meRes = await load({ url: berth.info.url, path: '/api/auth/me', headers: { authorization: `Bearer ${berth.info.token}` }, connections: 32, expect: 200 });
  await berth.stop();
  const ratio = meRes.rps / bareRes.rps;
  return [
    { bench: 'foundation', metric: 'GET /api/auth/me req/s', value: meRes.rps, unit: 'req/s', reference: bareRes.rps, ratio, target: '>= 0.7', ok: ratio >= 0.7 && meRes.errors === 0 },
    { bench: 'foundation', metric: 'GET /api/auth/me p99', value: meRes.p99, unit: 'ms', reference: bareRes.p99, ratio: meRes.p99 / bareRes.p99, target: '< 10 ms', ok: meRes.p99 < 10 },
    { bench: 'foundation', metric: 'GET /api/auth/me p50', value: meRes.p50, unit: 'ms', reference: bareRes.p50 },
  ];
}
