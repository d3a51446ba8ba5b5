import { alternateRounds, waitIdle, startChild, type Row } from './lib.js';
import { apiRowsFromC, ensureH2load } from './h2load.js';

/**
 * Authenticated `GET /api/auth/me` against a bare Fastify hello-world, both in a child process
 * started the same way, 32 connections, three rounds alternating the two (median of the per-round
 * ratios). Targets (issue 36 point 2): ratio >= 0.8, p99 < 5 ms. The server's CPU per request
 * (utime + stime over the requests answered) is printed beside it: the client shares the machine's
 * cores, so req/s moves with everything else running, the server's own cost much less. The same
 * reads from h2load `--h1` (a C client) are printed beside them without a target.
 */
export async function foundationBench(): Promise<Row[]> {
  const bare = await startChild('bench/servers/bare.mjs');
  const berth = await startChild('bench/servers/berth.mjs');
  try {
    console.error(`  waited ${await waitIdle(berth.info.pid)} ms for the server's start-up work to end`);
    const [bareRes, meRes] = await alternateRounds([
      { pid: bare.info.pid, opts: { url: bare.info.url, path: '/hello', connections: 32, durationMs: 3000, expect: 200 } },
      { pid: berth.info.pid, opts: { url: berth.info.url, path: '/api/auth/me', headers: { authorization: `Bearer ${berth.info.token}` }, connections: 32, durationMs: 3000, expect: 200 } },
    ]);
    console.error(`  GET /api/auth/me / bare Fastify per round: ${meRes!.ratios.map((r) => r.toFixed(2)).join(', ')}; the load generator at ${bareRes!.clientCores.toFixed(2)} cores in bare Fastify's rounds, ${meRes!.clientCores.toFixed(2)} in Berth's`);
    const ratio = [...meRes!.ratios].sort((a, b) => a - b)[1]!;
    // The same reads from a C client (h2load, installed if missing), without a target.
    const port = (url: string) => Number(new URL(url).port);
    const fromC = ensureH2load()
      ? await apiRowsFromC('foundation', 'GET /api/auth/me', { port: port(bare.info.url), host: '127.0.0.1', path: '/hello', pids: [bare.info.pid] }, { port: port(berth.info.url), host: '127.0.0.1', path: '/api/auth/me', headers: { authorization: `Bearer ${berth.info.token}` }, pids: [berth.info.pid] })
      : [];
    return [
      { bench: 'foundation', metric: 'GET /api/auth/me req/s', value: meRes!.rps, unit: 'req/s', reference: bareRes!.rps, ratio, target: '>= 0.8', ok: ratio >= 0.8 && meRes!.errors === 0 },
      { bench: 'foundation', metric: 'GET /api/auth/me p99', value: meRes!.p99, unit: 'ms', reference: bareRes!.p99, ratio: meRes!.p99 / bareRes!.p99, target: '< 5 ms', ok: meRes!.p99 < 5 },
      { bench: 'foundation', metric: 'GET /api/auth/me p50', value: meRes!.p50, unit: 'ms', reference: bareRes!.p50 },
      { bench: 'foundation', metric: 'GET /api/auth/me server CPU per request', value: meRes!.cpuUsPerRequest, unit: 'µs', reference: bareRes!.cpuUsPerRequest, ratio: meRes!.cpuUsPerRequest / bareRes!.cpuUsPerRequest },
      ...fromC,
    ];
  } finally {
    await bare.stop();
    await berth.stop();
  }
}
