/**
 * Metrics over the API (contract section 20, issue 38 point 1): a project's series at 10 s, 1 min and
 * 1 h steps, made by the rollup from the sampler's points and pruned after 24 h, 7 days and 90 days
 * (moved with the test clock); bad ranges are 400 naming the field; another org's project is 404; the
 * Prometheus text carries the org's projects only, with no secret in it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rollupAndPrune } from '../../src/modules/metrics/rollup.js';
import { ensureTarget, insertPoints, pointsAnyOrg } from '../../src/modules/metrics/metrics.store.js';
import { testClock } from '../support/clock.js';
import { createProject, createToken, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

const HOUR = 3600_000;

describe('project metrics: series, downsampling, retention', () => {
  const clock = testClock();
  let server: TestServer;
  let owner: TestUser;
  let other: TestUser;
  /** A project of the owner's that the cases only read (ranges, access). */
  let project: { id: string; slug: string; orgId: string };

  before(async () => {
    server = await startTestServer({ clock });
    owner = await createUser(server);
    other = await createUser(server);
    project = (await createProject(server, owner, { name: 'metered' })) as never;
  });
  after(() => server?.close());

  const metrics = (user: TestUser, projectId: string, query: string) => server.api(user.token).get(`/api/projects/${projectId}/metrics?${query}`);

  /** A project of the owner's of its own, with its app's metrics target (no points yet). */
  async function appTarget(): Promise<{ project: { id: string; slug: string }; target: number }> {
    const own = await createProject(server, owner);
    return { project: own, target: await ensureTarget(server.ctx.db, { orgId: owner.orgId, projectId: own.id, kind: 'app', name: own.id, label: 'production' }) };
  }

  /**
   * A project of the owner's of its own with its app's target and two minutes of 10 s points from
   * `t0` (the top of the next hour, so the minute and hour buckets are whole), as the sampler writes
   * them: CPU 100 then 300 millicores, 2xx and 5xx requests.
   */
  async function meteredProject(): Promise<{ project: { id: string; slug: string }; target: number; t0: number }> {
    const { project: own, target } = await appTarget();
    clock.advance(HOUR - (clock.now() % HOUR));
    const t0 = Math.floor(clock.now() / 1000);
    const rows = Array.from({ length: 12 }, (_, i) => ({
      targetId: target,
      step: 10,
      ts: t0 + i * 10,
      cpuMilli: i < 6 ? 100 : 300,
      memBytes: 50 * 1024 * 1024,
      netRx: 1000,
      netTx: 2000,
      diskRead: 0,
      diskWrite: 4096,
      req2xx: 3,
      req5xx: i === 0 ? 1 : 0,
      p50Us: 2000,
      p95Us: i === 5 ? 90_000 : 5000,
      p99Us: 9000,
      respBytes: 300,
    }));
    await insertPoints(server.ctx.db, rows);
    return { project: own, target, t0 };
  }

  /** The steps at which `target` has points. */
  async function stepsOf(target: number): Promise<number[]> {
    const steps: number[] = [];
    for (const step of [10, 60, 3600]) if ((await pointsAnyOrg(server.ctx.db, step, 0, 2 ** 40)).some((p) => p.targetId === target)) steps.push(step);
    return steps;
  }

  it('answers the 10 s points of the range as columns per target', async () => {
    const { project, t0 } = await meteredProject();
    clock.advance(3 * 60_000);
    const res = await metrics(owner, project.id, `from=${t0}&to=${t0 + 120}&step=10`);
    assert.equal(res.status, 200, res.text);
    const d = res.body.data;
    assert.equal(d.step, 10);
    assert.equal(d.series.length, 1);
    const s = d.series[0];
    assert.deepEqual([s.kind, s.target, s.name], ['app', project.id, 'production']);
    assert.equal(s.ts.length, 12);
    assert.equal(s.cpuCores[0], 0.1);
    assert.equal(s.memoryBytes[0], 50 * 1024 * 1024);
    assert.equal(s.requests2xx[0], 3);
    assert.equal(s.requests5xx[0], 1);
    assert.equal(s.latencyP50Ms[0], 2);
  });

  it('the rollup makes 1 min points (averages, sums, the slowest p95) and 1 h points once the hour is over', async () => {
    const { project, t0 } = await meteredProject();
    clock.advance(3 * 60_000);
    const first = await rollupAndPrune(server.ctx);
    assert.ok(first.made >= 2, JSON.stringify(first));
    const res = await metrics(owner, project.id, `from=${t0}&to=${t0 + 180}&step=60`);
    assert.equal(res.status, 200, res.text);
    const s = res.body.data.series[0];
    assert.deepEqual(s.ts, [t0, t0 + 60]);
    assert.deepEqual(s.cpuCores, [0.1, 0.3]);
    assert.deepEqual(s.requests2xx, [18, 18]);
    assert.deepEqual(s.requests5xx, [1, 0]);
    assert.deepEqual(s.latencyP95Ms, [90, 5]);
    assert.deepEqual(s.responseBytes, [1800, 1800]);
    // Running it again changes nothing.
    await rollupAndPrune(server.ctx);
    assert.deepEqual((await metrics(owner, project.id, `from=${t0}&to=${t0 + 180}&step=60`)).body.data.series[0].requests2xx, [18, 18]);
    clock.advance(HOUR);
    await rollupAndPrune(server.ctx);
    const hour = (await metrics(owner, project.id, `from=${t0}&to=${t0 + 3600}&step=3600`)).body.data.series[0];
    assert.deepEqual(hour.ts, [t0]);
    assert.deepEqual(hour.cpuCores, [0.2]);
    assert.deepEqual(hour.requests2xx, [36]);
  });

  it('prunes 10 s points after 24 h and 1 min points after 7 days; 1 h points stay', async () => {
    const { project, target, t0 } = await meteredProject();
    // Rolled up into 1 min points, and into a 1 h point once the hour is over.
    clock.advance(3 * 60_000);
    await rollupAndPrune(server.ctx);
    clock.advance(HOUR);
    await rollupAndPrune(server.ctx);
    clock.advance(24 * HOUR);
    await rollupAndPrune(server.ctx);
    assert.deepEqual(await stepsOf(target), [60, 3600]);
    clock.advance(7 * 24 * HOUR);
    await rollupAndPrune(server.ctx);
    assert.deepEqual(await stepsOf(target), [3600]);
    const res = await metrics(owner, project.id, `from=${t0}&to=${t0 + 3600}`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.step, 3600, 'the only step still kept for a range that old');
    assert.deepEqual(res.body.data.series[0].requests2xx, [36]);
  });

  it('bad ranges are 400 naming the field', async () => {
    const now = Math.floor(clock.now() / 1000);
    // Two days back: older than the 24 h that 10 s points are kept.
    const old = now - 2 * 86400;
    const cases: [string, string][] = [
      ['from=yesterday', 'from'],
      ['to=soon', 'to'],
      [`from=${old + 100}&to=${old}`, 'from'],
      ['step=7', 'step'],
      [`from=${old}&step=10`, 'step'],
      [`from=${now - 200 * 86400}`, 'from'],
      [`from=${now - 6 * 86400}&step=60`, 'step'],
      ['step=ten', 'step'],
    ];
    for (const [q, field] of cases) {
      const res = await metrics(owner, project.id, q);
      assert.equal(res.status, 400, `${q}: ${res.text}`);
      assert.equal(res.body.error.field ?? res.body.error.details?.[0]?.field, field, `${q}: ${res.text}`);
    }
  });

  it("another org's project is 404", async () => {
    const res = await metrics(other, project.id, '');
    assert.equal(res.status, 404, res.text);
  });

  it('GET /api/metrics: Prometheus text for a token with audit:read, the org\'s projects only; other scopes are 403', async () => {
    const { project, target } = await appTarget();
    const now = Math.floor(clock.now() / 1000);
    await insertPoints(server.ctx.db, [{ targetId: target, step: 10, ts: now - 5, cpuMilli: 250, memBytes: 123456, req2xx: 4, req4xx: 1, p50Us: 1500, p95Us: 3000, p99Us: 4000 }]);
    const otherProject = await createProject(server, other, { name: 'elsewhere' });
    const otherTarget = await ensureTarget(server.ctx.db, { orgId: other.orgId, projectId: otherProject.id, kind: 'app', name: otherProject.id, label: 'production' });
    await insertPoints(server.ctx.db, [{ targetId: otherTarget, step: 10, ts: now - 5, memBytes: 999 }]);
    const scraper = await createToken(server, owner, { name: 'prometheus', scopes: ['audit:read'] });
    const res = await server.api(scraper.token).get('/api/metrics');
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers.get('content-type')), /^text\/plain; version=0\.0\.4/);
    const labels = `project_id="${project.id}",project="${project.slug}",kind="app",name="production",target="${project.id}"`;
    assert.ok(res.text.includes(`berth_cpu_cores{${labels}} 0.25\n`), res.text);
    // Memory is kept to the KiB: 123456 bytes are 120.6 KiB.
    assert.ok(res.text.includes(`berth_memory_bytes{${labels}} ${121 * 1024}\n`), res.text);
    assert.ok(res.text.includes(`berth_http_requests{${labels},class="4xx"} 1\n`), res.text);
    assert.ok(res.text.includes(`berth_http_request_duration_seconds{${labels},quantile="0.99"} 0.004\n`), res.text);
    assert.ok(res.text.includes('# TYPE berth_memory_bytes gauge'), res.text);
    assert.ok(!res.text.includes(otherProject.id), 'no other org in it');
    assert.ok(!res.text.includes(scraper.token));
    const narrow = await createToken(server, owner, { name: 'narrow', scopes: ['project:read'] });
    assert.equal((await server.api(narrow.token).get('/api/metrics')).status, 403);
    assert.equal((await server.api().get('/api/metrics')).status, 401);
  });
});
