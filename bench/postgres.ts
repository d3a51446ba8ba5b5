import { spawnSync } from 'node:child_process';
import path from 'node:path';
import pgDriver from 'pg';
import { Pool } from 'undici';
import { fmt, ROOT, startChild, type Child, type Row } from './lib.js';

/**
 * Issue 23 point 2 and issue 32 point 6: Berth on PostgreSQL against Berth on SQLite in the same run.
 * A throwaway cluster with PostgreSQL's default durability (`scripts/pg-cluster.sh start --durable`:
 * fsync, synchronous_commit and full_page_writes on, checked before the run; stopped at the end, also
 * on failure), one Berth on SQLite and one on that cluster (children started as `npm start` runs them,
 * so with Berth's own session settings: BERTH_PG_SYNCHRONOUS_COMMIT), the same data seeded into both,
 * then the three routes of the issue with 10 connections, SQLite and PostgreSQL rounds alternating
 * (the order flips each round) so both see the same machine. Targets: PostgreSQL reaches >= 0.8 of
 * SQLite's req/s on each route, with p99 under 50 ms.
 *
 * BENCH_PG_ROUNDS (default 3) and BENCH_PG_ROUND_MS (default 3000) size the run, BENCH_PG_ROUTES
 * (a word of the route, e.g. PATCH) picks routes and BENCH_PG_CONNECTIONS changes the 10, for
 * experiments; the PostgreSQL child gets the caller's BERTH_PG_* settings to compare them, and
 * BENCH_PG_CLUSTER=fast runs on the tests' cluster (durability off) to tell the disk's share apart.
 */
const CONNECTIONS = Number(process.env.BENCH_PG_CONNECTIONS ?? 10);
const ROUNDS = Number(process.env.BENCH_PG_ROUNDS ?? 3);
const ROUND_MS = Number(process.env.BENCH_PG_ROUND_MS ?? 3000);
const WARMUP_MS = 1000;
/** A child's start-up (migrations on a durable cluster) on a 2-core machine others load: 30 s was not always enough. */
const START_MS = 120_000;
const PROJECTS = 20;
const VARS = 40;

interface Route {
  name: string;
  method: 'GET' | 'PATCH';
  path: (projectId: string) => string;
  body?: string;
}

/** A merge of several keys, secrets among them, and a delete (of a key that is not there after the first). */
const PATCH_BODY = JSON.stringify({
  environment: 'production',
  upserts: [
    { key: 'DATABASE_HOST', value: 'db.internal' },
    { key: 'DATABASE_PASSWORD', value: 'pw-0123456789abcdef', isSecret: true },
    { key: 'API_KEY', value: 'sk_live_0123456789abcdef', isSecret: true },
    { key: 'FEATURE_FLAGS', value: 'a,b,c' },
    { key: 'LOG_LEVEL', value: 'info' },
    { key: 'SESSION_SECRET', value: 'keep-me-secret-0123', isSecret: true },
  ],
  deletes: ['OLD_KEY'],
});

const ALL_ROUTES: Route[] = [
  { name: 'GET /api/projects', method: 'GET', path: () => '/api/projects' },
  { name: 'GET /api/projects/:id/env', method: 'GET', path: (id) => `/api/projects/${id}/env` },
  { name: 'PATCH /api/projects/:id/env', method: 'PATCH', path: (id) => `/api/projects/${id}/env`, body: PATCH_BODY },
];
const ROUTES = ALL_ROUTES.filter((r) => !process.env.BENCH_PG_ROUTES || r.name.includes(process.env.BENCH_PG_ROUTES));

interface Target {
  label: 'sqlite' | 'postgres';
  child: Child;
  headers: Record<string, string>;
  projectId: string;
}

interface Tally {
  latencies: number[];
  seconds: number;
  errors: number;
}

function cluster(): { url: string; dir: string } {
  const args = process.env.BENCH_PG_CLUSTER === 'fast' ? ['start'] : ['start', '--durable'];
  const out = spawnSync(path.join(ROOT, 'scripts/pg-cluster.sh'), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (out.status !== 0) throw new Error(`scripts/pg-cluster.sh start exited with ${out.status}`);
  const url = /export DATABASE_URL=(\S+)/.exec(out.stdout)?.[1];
  const dir = /export BERTH_PG_DIR=(\S+)/.exec(out.stdout)?.[1];
  if (!url || !dir) throw new Error(`scripts/pg-cluster.sh start printed no DATABASE_URL/BERTH_PG_DIR: ${out.stdout}`);
  return { url, dir };
}

/** The cluster's own durability settings (a plain session, not Berth's): all three must be on. */
async function checkDurable(url: string): Promise<void> {
  const client = new pgDriver.Client({ connectionString: url });
  await client.connect();
  try {
    const got: string[] = [];
    for (const n of ['fsync', 'synchronous_commit', 'full_page_writes']) got.push(`${n}=${(await client.query(`show ${n}`)).rows[0][n]}`);
    if (got.some((g) => !g.endsWith('=on'))) throw new Error(`the bench cluster is not durable: ${got.join(', ')}`);
    console.error(`postgres bench: cluster ${got.join(', ')}; Berth's sessions: synchronous_commit=${process.env.BERTH_PG_SYNCHRONOUS_COMMIT || 'off (default)'}`);
  } finally {
    await client.end();
  }
}

function stopCluster(dir: string): void {
  spawnSync(path.join(ROOT, 'scripts/pg-cluster.sh'), ['stop', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
}

async function call(t: { child: Child; headers: Record<string, string> }, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`${t.child.info.url}${p}`, { method, headers: t.headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

/** The same data on both: PROJECTS projects, one with a domain, the measured one with VARS variables (a quarter secret). */
async function seed(child: Child, label: Target['label']): Promise<Target> {
  const headers = { authorization: `Bearer ${child.info.token}`, 'content-type': 'application/json' };
  const t = { child, headers };
  let projectId = '';
  for (let i = 0; i < PROJECTS; i++) {
    const p = (await call(t, 'POST', '/api/projects', { name: `bench-${i}`, gitOwner: 'acme', gitRepo: `web-${i}` })).data as { id: string };
    if (i === 0) projectId = p.id;
  }
  await call(t, 'POST', `/api/projects/${projectId}/connect`, { domain: 'bench-shop.example' });
  const upserts = Array.from({ length: VARS }, (_, i) => ({ key: `VAR_${i}`, value: `value-${i}-${'x'.repeat(24)}`, isSecret: i % 4 === 0 }));
  await call(t, 'PATCH', `/api/projects/${projectId}/env`, { environment: 'production', upserts, deletes: [] });
  return { label, child, headers, projectId };
}

/** Closed-loop load on one route for `ms`: CONNECTIONS workers, each sending the next request when the last answered. */
async function drive(t: Target, route: Route, ms: number, into?: Tally): Promise<void> {
  const pool = new Pool(t.child.info.url, { connections: CONNECTIONS, pipelining: 1 });
  const started = Date.now();
  const end = started + ms;
  try {
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (Date.now() < end) {
          const t0 = process.hrtime.bigint();
          try {
            const res = await pool.request({ path: route.path(t.projectId), method: route.method, headers: t.headers, body: route.body });
            await res.body.dump();
            if (res.statusCode !== 200 && into) into.errors++;
          } catch {
            if (into) into.errors++;
          }
          into?.latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
  } finally {
    if (into) into.seconds += (Date.now() - started) / 1000;
    await pool.close();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

export async function postgresBench(): Promise<Row[]> {
  const pg = cluster();
  // A failure or an interrupt between here and the end still stops the cluster.
  const onExit = () => stopCluster(pg.dir);
  process.once('exit', onExit);
  const children: Child[] = [];
  try {
    if (process.env.BENCH_PG_CLUSTER !== 'fast') await checkDurable(pg.url);
    const sqlite = await startChild('bench/servers/berth.mjs', { DATABASE_URL: '' }, START_MS);
    children.push(sqlite);
    const postgres = await startChild('bench/servers/berth.mjs', { DATABASE_URL: pg.url }, START_MS);
    children.push(postgres);
    const targets = [await seed(sqlite, 'sqlite'), await seed(postgres, 'postgres')];

    const tallies = new Map<string, Tally>();
    const tally = (store: string, route: string) => {
      const k = `${store} ${route}`;
      let v = tallies.get(k);
      if (!v) tallies.set(k, (v = { latencies: [], seconds: 0, errors: 0 }));
      return v;
    };
    for (const t of targets) for (const r of ROUTES) await drive(t, r, WARMUP_MS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of ROUTES) {
        const order = round % 2 === 0 ? targets : [...targets].reverse();
        for (const t of order) {
          await drive(t, r, WARMUP_MS / 4);
          await drive(t, r, ROUND_MS, tally(t.label, r.name));
        }
      }
      console.error(`postgres bench: round ${round + 1}/${ROUNDS} done`);
    }

    const rows: Row[] = [];
    for (const r of ROUTES) {
      const figures = (label: string) => {
        const v = tally(label, r.name);
        const sorted = [...v.latencies].sort((a, b) => a - b);
        return { rps: v.latencies.length / v.seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), errors: v.errors };
      };
      const s = figures('sqlite');
      const p = figures('postgres');
      const ratio = p.rps / s.rps;
      const clean = s.errors === 0 && p.errors === 0;
      rows.push(
        { bench: 'postgres', metric: `${r.name} req/s (PostgreSQL / SQLite)`, value: p.rps, unit: 'req/s', reference: s.rps, ratio, target: '>= 0.8', ok: ratio >= 0.8 && clean },
        { bench: 'postgres', metric: `${r.name} p50`, value: p.p50, unit: 'ms', reference: s.p50, ratio: p.p50 / s.p50 },
        { bench: 'postgres', metric: `${r.name} p99`, value: p.p99, unit: 'ms', reference: s.p99, ratio: p.p99 / s.p99, target: '< 50 ms', ok: p.p99 < 50 },
      );
      if (!clean) console.error(`postgres bench: ${r.name}: ${s.errors} errors on SQLite, ${p.errors} on PostgreSQL`);
    }
    console.error(`postgres bench: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${fmt(ROUND_MS / 1000)} s per route and store`);
    return rows;
  } finally {
    for (const c of children) await c.stop();
    process.removeListener('exit', onExit);
    stopCluster(pg.dir);
  }
}
