// Berth as `npm start` runs it: the compiled server (dist/) under plain node with the start script's
// node flags (bench/lib.ts startChild), a fresh data dir (SQLite unless DATABASE_URL is set), one owner
// user. BENCH_MEM_TRACE=1 prints the process's memory figures to stderr every 100 ms (BENCH_MEM_TRACE_MS);
// BENCH_GC_STATS=1 prints cumulative GC time; BENCH_SECRET_KEY keeps one secret key across restarts;
// BENCH_EDGE_IN_WORKER=DIR starts the EdgeServer class alone on a worker thread (bench/servers/edge-in-worker.mjs).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../dist/config.js';
import { startServer } from '../../dist/server.js';
import { adminCreateUser } from '../../dist/modules/auth/index.js';

const dataDir = process.env.BENCH_DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'berth-bench-'));
const config = loadConfig(
  { host: '127.0.0.1', port: 0, edgePort: 0 },
  { ...process.env, BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: process.env.BENCH_SECRET_KEY ?? randomBytes(32).toString('base64'), BERTH_LOG_LEVEL: 'warn' },
);
const server = await startServer(config, () => {});
// A diagnostic (bench/edge-cpu.ts WORKER=1): the EdgeServer class alone on a worker thread of this process.
if (process.env.BENCH_EDGE_IN_WORKER) {
  const { Worker } = await import('node:worker_threads');
  const { writeFileSync } = await import('node:fs');
  const dir = process.env.BENCH_EDGE_IN_WORKER;
  const w = new Worker(new URL('./edge-in-worker.mjs', import.meta.url), { workerData: { dir } });
  w.unref();
  await new Promise((resolve) => w.once('message', (port) => resolve(writeFileSync(path.join(dir, 'port'), String(port)))));
}
const user = await adminCreateUser(server.app.berth.ctx, { email: `bench-${Date.now()}@example.test`, password: 'bench-password' });
console.log(JSON.stringify({ url: server.url, token: user.token, orgId: user.orgId, userId: user.userId, dataDir, pid: process.pid }));
process.on('SIGTERM', () => void server.stop().then(() => {
  if (!process.env.BENCH_DATA_DIR) removeDataDir(dataDir);
  process.exit(0);
}));

/**
 * The data dir this script made goes with the server: its volume images first (they outlive a
 * server's stop by design, docs/runtime.md "Disk limits"), innermost mount first.
 */
function removeDataDir(dir) {
  let mounts = [];
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p.startsWith(`${dir}/`));
  } catch {
    /* no procfs */
  }
  for (const m of mounts.sort((a, b) => b.length - a.length)) {
    try {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {
      /* not ours to unmount */
    }
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
if (process.env.BENCH_MEM_TRACE) {
  const mb = (x) => (x / 1048576).toFixed(0);
  setInterval(() => {
    const m = process.memoryUsage();
    process.stderr.write(`${Date.now() % 100000} mem rss ${mb(m.rss)} heapTotal ${mb(m.heapTotal)} heapUsed ${mb(m.heapUsed)} external ${mb(m.external)} arrayBuffers ${mb(m.arrayBuffers)}\n`);
  }, Number(process.env.BENCH_MEM_TRACE_MS ?? 100)).unref();
}
if (process.env.BENCH_GC_STATS) {
  // Cumulative garbage-collection time by kind, printed to stderr every second while it changes.
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const kinds = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
  const total = {};
  let changed = false;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const k = kinds[e.detail?.kind] ?? 'other';
      total[k] = (total[k] ?? 0) + e.duration;
      total[`${k}#`] = (total[`${k}#`] ?? 0) + 1;
      changed = true;
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => {
    if (!changed) return;
    changed = false;
    process.stderr.write(`${Date.now() % 100000} gc ${Object.entries(total).map(([k, v]) => `${k} ${k.endsWith('#') ? v : v.toFixed(0)}`).join(' ')}\n`);
  }, 1000).unref();
}
