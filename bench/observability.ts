/**
 * What observability costs an idle server (issue 38 points 1 and 6; docs/observability.md), on the
 * sandbox runtime with real apps (a tiny Node HTTP server each, always_on):
 *  - idle RSS of `berth serve` with BENCH_OBS_APPS (default 20) apps, metrics on (every 10 s) against
 *    the same server on the same data with metrics off (BERTH_METRICS_INTERVAL_SECONDS=0); target
 *    <= 1.2, shown beside Dokploy's published idle 464 MiB;
 *  - the sampler's CPU with BENCH_OBS_MANY (default 50) apps: the server's CPU time over an idle window
 *    with metrics on minus the same window with them off (health checks run in both), as a share of one
 *    core; target < 1%;
 *  - the database that 7 days of metrics of those apps leave at steady state (24 h of 10 s points,
 *    7 days of 1 min points, 7 days of 1 h points per app, written into the server's own SQLite file
 *    for its real targets): its growth against 50 MB; target < 1. BENCH_OBS_ONLY=db measures this alone
 *    (a server with one project and no app; the targets are added to the file).
 * Each server start restores the apps (always_on), so on and off run the same apps.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { cpuMs, rssMb, startChild, type Child, type Row } from './lib.js';

const APPS = Number(process.env.BENCH_OBS_APPS ?? 20);
const MANY = Math.max(APPS, Number(process.env.BENCH_OBS_MANY ?? 50));
const IDLE_SETTLE_MS = Number(process.env.BENCH_OBS_SETTLE_MS ?? 30_000);
const WINDOW_MS = Number(process.env.BENCH_OBS_WINDOW_MS ?? 60_000);
const DOKPLOY_IDLE_MIB = 464;

const APP = `const http = require('node:http');
http.createServer((req, res) => res.end('ok ' + process.env.BERTH_PROJECT_ID)).listen(Number(process.env.PORT), process.env.HOST);
`;

interface Api {
  (method: string, p: string, body?: unknown): Promise<any>;
}

function apiOf(berth: Child): Api {
  return async (method, p, body) => {
    const res = await fetch(`${berth.info.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${berth.info.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return JSON.parse(text).data;
  };
}

/** Imports and deploys `n` tiny apps (always_on) and waits for all to be ready. */
async function deployApps(api: Api, local: string, from: number, n: number): Promise<void> {
  const ids: string[] = [];
  for (let i = from; i < from + n; i++) {
    const dir = path.join(local, `app-${i}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'server.js'), APP);
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `obs-${i}`, scripts: { start: 'node server.js' } }));
    const p = await api('POST', '/api/projects/import', { path: dir, name: `obs-${i}` });
    await api('POST', `/api/projects/${p.id}/sleep-mode`, { sleepMode: 'always_on' });
    ids.push((await api('POST', '/api/deployments', { projectId: p.id })).id);
  }
  const until = Date.now() + 30 * 60_000;
  for (const id of ids) {
    for (;;) {
      const d = await api('GET', `/api/deployments/${id}`);
      if (d.status === 'ready') break;
      if (['failed', 'cancelled', 'superseded'].includes(d.status)) throw new Error(`deployment ${id} ${d.status}: ${d.error}`);
      if (Date.now() > until) throw new Error('the apps did not get ready in 30 minutes');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

interface Idle {
  rssMb: number;
  cpuShare: number;
}

/** The server idle: RSS (median of one reading a second over the window) and CPU over the window. */
async function idle(berth: Child): Promise<Idle> {
  const pid = berth.info.pid as number;
  await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
  const readings: number[] = [];
  const cpu0 = cpuMs(pid);
  const t0 = Date.now();
  while (Date.now() - t0 < WINDOW_MS) {
    readings.push(rssMb(pid));
    await new Promise((r) => setTimeout(r, 1000));
  }
  const cpu = cpuMs(pid) - cpu0;
  readings.sort((a, b) => a - b);
  return { rssMb: readings[Math.floor(readings.length / 2)]!, cpuShare: cpu / (Date.now() - t0) };
}

async function start(dataDir: string, secretKey: string, local: string, metricsSeconds: number): Promise<Child> {
  const berth = await startChild(
    'bench/servers/berth.mjs',
    { BERTH_RUNTIME: 'sandbox', BERTH_DISK_LIMITS: 'off', BENCH_DATA_DIR: dataDir, BENCH_SECRET_KEY: secretKey, BERTH_LOCAL_ROOTS: local, BERTH_METRICS_INTERVAL_SECONDS: String(metricsSeconds) },
    240_000,
  );
  // The apps that ran before come back (always_on): wait until every one answers `running`.
  const api = apiOf(berth);
  const until = Date.now() + 10 * 60_000;
  for (;;) {
    const list = (await api('GET', '/api/projects?limit=200')) as { id: string }[];
    const infos = await Promise.all(list.map((p) => api('GET', `/api/projects/${p.id}/info`)));
    if (infos.every((i) => i.runtime?.state === 'running')) break;
    if (Date.now() > until) throw new Error('the apps did not come back in 10 minutes');
    await new Promise((r) => setTimeout(r, 1000));
  }
  return berth;
}

/** The table of each step's points (migration 036) and how long the steady state keeps them. */
const TIERS = [
  { table: 'metric_points_hour', step: 3600, span: 7 * 86_400 },
  { table: 'metric_points_minute', step: 60, span: 7 * 86_400 },
  { table: 'metric_points_raw', step: 10, span: 86_400 },
];

/**
 * Writes 7 days of steady-state metrics of `apps` targets into the server's SQLite file (its real targets,
 * and more of the same project up to `apps`), in the order the sampler and the rollup write them (each
 * moment's points of every target together); answers the file's growth in MB.
 */
function sevenDaysOfMetrics(dataDir: string, apps: number): { growthMb: number; targets: number; rows: number } {
  const file = path.join(dataDir, 'berth.db');
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  // The points the sampler wrote during the bench go first: the figure is 7 days' worth alone.
  for (const { table } of TIERS) db.exec(`delete from ${table}`);
  let real = db.prepare('select id, org_id, project_id from metric_targets').all() as { id: number; org_id: string; project_id: string }[];
  // BENCH_OBS_ONLY=db sampled nothing: the targets are of the server's one project.
  if (!real.length) real = db.prepare('select 0 as id, org_id, id as project_id from projects limit 1').all() as typeof real;
  if (!real.length) throw new Error('no metric target was sampled');
  const add = db.prepare("insert into metric_targets (org_id, project_id, kind, name, label) values (?, ?, 'app', ?, 'production')");
  for (let i = db.prepare('select count(*) as n from metric_targets').pluck().get() as number; i < apps; i++) add.run(real[0]!.org_id, real[0]!.project_id, `bench-app-${i}`);
  const targets = (db.prepare('select id from metric_targets').all() as { id: number }[]).map((t) => t.id).slice(0, apps);
  db.exec('vacuum');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const before = statSync(file).size;
  const now = Math.floor(Date.now() / 1000);
  let rows = 0;
  // One transaction per simulated hour: what the sampler and the rollup add in it, every target at each moment.
  for (const { table, step, span } of TIERS) {
    const insert = db.prepare(
      `insert into ${table} (target_id, ts, cpu_milli, mem_kib, net_rx, net_tx, disk_read, disk_write, req1xx, req2xx, req3xx, req4xx, req5xx, p50_us, p95_us, p99_us, resp_bytes) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const first = now - span - (now % step);
    for (let hour = first; hour < now; hour += 3600) {
      db.transaction(() => {
        for (let ts = hour; ts < Math.min(hour + 3600, now); ts += step) {
          for (const target of targets) {
            // Values of the size an app with some traffic has (the columns are integers; memory ~38 MB, kept in KiB).
            const r = (ts * 2654435761 + target) % 1000;
            insert.run(target, ts, 3 + (r % 40), Math.round((38_000_000 + r * 1000) / 1024), 200 + r, 180 + r, r % 3 ? 0 : 4096, 8192 + r, 0, 20 + (r % 30), r % 3, r % 5, r % 97 === 0 ? 1 : 0, 900 + r, 4000 + r * 3, 9000 + r * 7, 30_000 + r * 11);
            rows++;
          }
        }
      })();
    }
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  const after = statSync(file).size;
  db.close();
  return { growthMb: (after - before) / 1024 ** 2, targets: targets.length, rows };
}

/** The database part alone (BENCH_OBS_ONLY=db): a server with one imported project and no app, then 7 days of metrics. */
async function databaseOnly(dataDir: string, secretKey: string, local: string): Promise<Row[]> {
  const berth = await start(dataDir, secretKey, local, 0);
  const dir = path.join(local, 'app-0');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'server.js'), APP);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'obs-0', scripts: { start: 'node server.js' } }));
  await apiOf(berth)('POST', '/api/projects/import', { path: dir, name: 'obs-0' });
  await berth.stop();
  return [databaseRow(sevenDaysOfMetrics(dataDir, Number(process.env.BENCH_OBS_DB_APPS ?? 50)))];
}

function databaseRow(db: { growthMb: number; targets: number; rows: number }): Row {
  return { bench: 'observability', metric: `database growth: 7 days of metrics of ${db.targets} apps (${db.rows} points at steady state), vs 50 MB`, value: db.growthMb, unit: 'MB', reference: 50, ratio: db.growthMb / 50, target: '< 1', ok: db.growthMb < 50 };
}

export async function observabilityBench(): Promise<Row[]> {
  if (process.getuid?.() !== 0) return [{ bench: 'observability', metric: 'skipped: the sandbox runtime runs apps under their own uids only as root', value: NaN, unit: '' }];
  const work = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-obs-'));
  const dataDir = path.join(work, 'data');
  const local = path.join(work, 'local');
  mkdirSync(local, { recursive: true });
  const secretKey = randomBytes(32).toString('base64');
  const rows: Row[] = [];
  try {
    if (process.env.BENCH_OBS_ONLY === 'db') return await databaseOnly(dataDir, secretKey, local);
    let berth = await start(dataDir, secretKey, local, 0);
    await deployApps(apiOf(berth), local, 0, APPS);
    const off = await idle(berth);
    await berth.stop();
    berth = await start(dataDir, secretKey, local, 10);
    const on = await idle(berth);
    rows.push(
      { bench: 'observability', metric: `idle server RSS, ${APPS} apps, metrics on vs off`, value: on.rssMb, unit: 'MB', reference: off.rssMb, ratio: on.rssMb / off.rssMb, target: '<= 1.2', ok: on.rssMb / off.rssMb <= 1.2 },
      { bench: 'observability', metric: `idle server RSS, ${APPS} apps, metrics on, vs Dokploy's published idle (464 MiB)`, value: on.rssMb, unit: 'MB', reference: DOKPLOY_IDLE_MIB * 1.048576, ratio: on.rssMb / (DOKPLOY_IDLE_MIB * 1.048576) },
    );
    await deployApps(apiOf(berth), local, APPS, MANY - APPS);
    const manyOn = await idle(berth);
    await berth.stop();
    berth = await start(dataDir, secretKey, local, 0);
    const manyOff = await idle(berth);
    await berth.stop();
    const sampler = Math.max(0, manyOn.cpuShare - manyOff.cpuShare);
    rows.push({ bench: 'observability', metric: `the sampler's CPU with ${MANY} apps (idle server, on minus off), share of one core`, value: sampler * 100, unit: '%', reference: 1, ratio: sampler * 100, target: '< 1', ok: sampler * 100 < 1 });
    rows.push(databaseRow(sevenDaysOfMetrics(dataDir, Number(process.env.BENCH_OBS_DB_APPS ?? 50))));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}
