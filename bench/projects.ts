import { alternateRounds, waitIdle, load, startChild, type Row } from './lib.js';
import { apiRowsFromC, ensureH2load } from './h2load.js';

/**
 * `PATCH /api/projects/:id/env` with 1000 upserts and `GET /api/projects/:id`, against the bare-Fastify
 * hello-world (both servers child processes started the same way). The GET alternates with the
 * hello-world over three rounds (median of the per-round ratios); targets (issue 36 point 2): >= 0.6
 * of the hello-world's requests/s, p99 < 5 ms. A 1000-key PATCH answers within 250 ms at p50 on one
 * connection (its ratio is against the hello-world's median req/s, for scale only). The GET from
 * h2load `--h1` (a C client) is printed beside it without a target.
 */
export async function projectsBench(): Promise<Row[]> {
  const bare = await startChild('bench/servers/bare.mjs');
  const berth = await startChild('bench/servers/berth.mjs');
  try {
    const auth = { authorization: `Bearer ${berth.info.token}`, 'content-type': 'application/json' };
    const created = await fetch(`${berth.info.url}/api/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench', gitOwner: 'acme', gitRepo: 'web' }) });
    if (created.status !== 201) throw new Error(`project create answered ${created.status}: ${await created.text()}`);
    const project = ((await created.json()) as { data: { id: string } }).data;
    console.error(`  waited ${await waitIdle(berth.info.pid)} ms for the server's start-up work to end`);

    const [bareRes, getRes] = await alternateRounds([
      { pid: bare.info.pid, opts: { url: bare.info.url, path: '/hello', connections: 32, durationMs: 3000, expect: 200 } },
      { pid: berth.info.pid, opts: { url: berth.info.url, path: `/api/projects/${project.id}`, headers: auth, connections: 32, durationMs: 3000, expect: 200 } },
    ]);
    // The same reads from a C client (h2load, installed if missing), without a target.
    const port = (url: string) => Number(new URL(url).port);
    const fromC = ensureH2load()
      ? await apiRowsFromC('projects', 'GET /api/projects/:id', { port: port(bare.info.url), host: '127.0.0.1', path: '/hello', pids: [bare.info.pid] }, { port: port(berth.info.url), host: '127.0.0.1', path: `/api/projects/${project.id}`, headers: { authorization: auth.authorization }, pids: [berth.info.pid] })
      : [];
    await bare.stop();

    const upserts = Array.from({ length: 1000 }, (_, i) => ({ key: `KEY_${i}`, value: `value-${i}-${'x'.repeat(32)}`, isSecret: i % 4 === 0 }));
    const body = JSON.stringify({ environment: 'production', upserts, deletes: [] });
    const patchRes = await load({
      url: berth.info.url,
      path: `/api/projects/${project.id}/env`,
      method: 'PATCH',
      headers: auth,
      body,
      connections: 1,
      durationMs: 5000,
      warmupMs: 500,
      expect: 200,
    });

    console.error(`  GET /api/projects/:id / bare Fastify per round: ${getRes!.ratios.map((r) => r.toFixed(2)).join(', ')}; the load generator at ${bareRes!.clientCores.toFixed(2)} cores in bare Fastify's rounds, ${getRes!.clientCores.toFixed(2)} in Berth's`);
    const getRatio = [...getRes!.ratios].sort((a, b) => a - b)[1]!;
    const patchRatio = patchRes.rps / bareRes!.rps;
    return [
      { bench: 'projects', metric: 'GET /api/projects/:id req/s', value: getRes!.rps, unit: 'req/s', reference: bareRes!.rps, ratio: getRatio, target: '>= 0.6', ok: getRatio >= 0.6 && getRes!.errors === 0 },
      { bench: 'projects', metric: 'GET /api/projects/:id p99', value: getRes!.p99, unit: 'ms', reference: bareRes!.p99, ratio: getRes!.p99 / bareRes!.p99, target: '< 5 ms', ok: getRes!.p99 < 5 },
      { bench: 'projects', metric: 'GET /api/projects/:id server CPU per request', value: getRes!.cpuUsPerRequest, unit: 'µs', reference: bareRes!.cpuUsPerRequest, ratio: getRes!.cpuUsPerRequest / bareRes!.cpuUsPerRequest },
      ...fromC,
      { bench: 'projects', metric: 'PATCH env 1000 upserts req/s (1 conn)', value: patchRes.rps, unit: 'req/s', reference: bareRes!.rps, ratio: patchRatio, ok: patchRes.errors === 0 },
      { bench: 'projects', metric: 'PATCH env 1000 upserts p50', value: patchRes.p50, unit: 'ms', reference: bareRes!.p50, ratio: patchRes.p50 / bareRes!.p50, target: '< 250 ms', ok: patchRes.p50 < 250 },
      { bench: 'projects', metric: 'PATCH env 1000 upserts p99', value: patchRes.p99, unit: 'ms', reference: bareRes!.p99, ratio: patchRes.p99 / bareRes!.p99 },
    ];
  } finally {
    await bare.stop();
    await berth.stop();
  }
}
