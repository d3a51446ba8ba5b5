// @store-independent: the sampler's reading of real boxes and a real Prometheus; the store side is metrics-api.test.ts's, on both stores
/**
 * Metrics of a real app (issue 38 point 1): deployed in the sandbox, the sampler reads non-zero CPU and
 * memory from its cgroup, the edge's requests are counted by status class, and a real Prometheus
 * (Debian's /usr/bin/prometheus) scrapes GET /api/metrics on loopback with a bearer token file and
 * answers a Berth series through its query API.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createToken, createUser, type TestUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const root = process.getuid?.() === 0;
const PROMETHEUS = '/usr/bin/prometheus';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });
}

describe('metrics of a real sandboxed app, scraped by a real Prometheus', { skip: !root ? 'the sandbox needs root' : !existsSync(PROMETHEUS) ? 'no /usr/bin/prometheus (apt-get install prometheus)' : false }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  let api: HttpClient;
  let project: { id: string; slug: string };
  let prom: ChildProcess | null = null;

  before(async () => {
    dir = tempDir('berth-metrics-');
    mkdirSync(path.join(dir, 'local', 'busy'), { recursive: true });
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(dir, 'local'), BERTH_METRICS_INTERVAL_SECONDS: '1' } });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
    api = server.api(owner.token);
    const app = path.join(dir, 'local', 'busy');
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'busy', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }));
    // Each request burns a little CPU and holds some memory; /status/<n> answers n.
    writeFileSync(
      path.join(app, 'server.js'),
      "const keep = Buffer.alloc(8 * 1024 * 1024, 1);\nrequire('node:http').createServer((req, res) => { let x = 0; for (let i = 0; i < 2e6; i++) x += i % 7; const m = /^\\/status\\/(\\d+)$/.exec(req.url); res.statusCode = m ? Number(m[1]) : 200; res.end(String(x + keep[0])); }).listen(Number(process.env.PORT));\n",
    );
    const imported = await api.post('/api/projects/import', { path: app, name: 'busy' });
    assert.equal(imported.status, 201, imported.text);
    project = imported.body.data;
    const started = await api.post('/api/deployments', { projectId: project.id });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 300_000);
    assert.equal(d.status, 'ready', d.error);
  });
  after(async () => {
    if (prom && prom.exitCode === null) {
      prom.kill('SIGTERM');
      await new Promise((r) => prom!.once('exit', r));
    }
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const edge = (p: string) => edgeRequest(getRuntime(server.ctx).edgePort(), `${project.slug}.localhost`, p, { timeoutMs: 30_000 });

  it("the sampler reads the app's CPU and memory from its cgroup, and the edge's requests by status class", async () => {
    const want = { '2xx': 0, '4xx': 0, '5xx': 0 };
    const series = await waitFor(
      async () => {
        for (const p of ['/', '/status/404', '/status/503', '/']) {
          const r = await edge(p);
          want[`${String(r.status)[0]}xx` as keyof typeof want]++;
        }
        const res = await api.get(`/api/projects/${project.id}/metrics?step=10&from=${Math.floor(Date.now() / 1000) - 600}`);
        assert.equal(res.status, 200, res.text);
        const s = res.body.data.series.find((x: { kind: string }) => x.kind === 'app');
        if (!s) return null;
        const sum = (k: string) => (s[k] as (number | null)[]).reduce<number>((a, v) => a + (v ?? 0), 0);
        const cpu = Math.max(0, ...(s.cpuCores as (number | null)[]).map((v) => v ?? 0));
        const mem = Math.max(0, ...(s.memoryBytes as (number | null)[]).map((v) => v ?? 0));
        return cpu > 0 && mem > 0 && sum('requests4xx') > 0 && sum('requests5xx') > 0 ? { s, sum, cpu, mem } : null;
      },
      'non-zero CPU and memory and counted requests in the series',
      60_000,
      500,
    );
    assert.ok(series.mem > 8 * 1024 * 1024, `memory ${series.mem} holds the app's 8 MiB buffer`);
    assert.ok(series.sum('requests2xx') >= 1);
    // Every request the edge answered is counted once (those of the last second may still be on their way).
    assert.ok(series.sum('requests2xx') + series.sum('requests4xx') + series.sum('requests5xx') <= want['2xx'] + want['4xx'] + want['5xx']);
    assert.ok(series.s.latencyP99Ms.some((v: number | null) => v !== null && v > 0));
  });

  it('a real Prometheus scrapes /api/metrics with a bearer token file and answers a Berth series', async () => {
    const token = await createToken(server, owner, { name: 'prometheus', scopes: ['audit:read'] });
    const promDir = path.join(dir, 'prometheus');
    mkdirSync(promDir, { recursive: true });
    writeFileSync(path.join(promDir, 'token'), token.token, { mode: 0o600 });
    const target = new URL(server.url).host;
    writeFileSync(
      path.join(promDir, 'prometheus.yml'),
      ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: berth', '    metrics_path: /api/metrics', '    authorization:', `      credentials_file: ${path.join(promDir, 'token')}`, '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'),
    );
    const port = await freePort();
    prom = spawn(PROMETHEUS, [`--config.file=${path.join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    prom.stderr!.on('data', (c: Buffer) => {
      if (log.length < 20_000) log += c.toString();
    });
    const result = await waitFor(
      async () => {
        await edge('/');
        const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(`berth_memory_bytes{project_id="${project.id}"}`)}`).catch(() => null);
        if (!r?.ok) return null;
        const body = (await r.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        return body.data.result.length ? body.data.result : null;
      },
      'Prometheus answering berth_memory_bytes of the project',
      90_000,
      500,
    ).catch((e) => {
      throw new Error(`${(e as Error).message}\n${log.slice(-3000)}`);
    });
    assert.equal(result[0]!.metric.project, project.slug);
    assert.equal(result[0]!.metric.kind, 'app');
    assert.ok(Number(result[0]!.value[1]) > 0);
    assert.ok(!JSON.stringify(result).includes(token.token));
  });
});
