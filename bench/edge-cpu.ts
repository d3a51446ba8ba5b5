import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { cpuMs, load, startChild, type Child } from './lib.js';
import { api, ensureNginx, startNginx, tgzOf, uploadAndDeploy, waitReady, writeHelloApp } from './hello.js';

/**
 * Where the edge's time goes against nginx (issue 36 point 3), a diagnostic rather than a target:
 * `npx tsx bench/edge-cpu.ts` (after `npx tsc -p tsconfig.build.json`). One Berth (process runtime)
 * runs the hello app; nginx (one worker), Berth's edge, a 30-line node:http + undici proxy (MINIMAL)
 * and, with ALONE=1, the EdgeServer class alone in a process of its own (bench/servers/edge-alone.mjs)
 * all proxy to that app, in alternating rounds of 32 connections. Printed per target: req/s over
 * nginx's in the same round, p99, and the CPU per request of the proxy, of the app and of this process
 * (the load generator), from /proc. First each target's idle CPU over 5 s, then WARM_MS of unmeasured
 * load each. ROUNDS, ROUND_MS; NO_MIN=1 leaves the minimal proxy out; STRACE=1 counts the syscalls of
 * the last round into /tmp/edgeh/strace-<target>.txt; PERF=1 records the last round's on-CPU samples
 * (`perf record -g`; node's `--perf-basic-prof-only-functions` in BENCH_NODE_FLAGS names JS frames) into
 * /tmp/edgeh/perf-<target>.data, with its request count in perf-<target>.n; B=1 adds a second Berth whose node flags are
 * B_FLAGS, whose tree (dist/) is B_ROOT and whose extra environment is B_ENV (JSON), for A/B runs in
 * the same rounds (`B=1 B_ENV='{"BERTH_EDGE_FAST_PATH":"0"}'`: the edge without its fast path); WORKER=1 adds the EdgeServer
 * class alone on a worker thread of the first Berth's process (bench/servers/edge-in-worker.mjs).
 */

const children = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};
const tree = (pid: number): number[] => [pid, ...children(pid).flatMap(tree)];
const cpuOf = (pids: number[]) => pids.reduce((a, p) => { try { return a + cpuMs(p); } catch { return a; } }, 0);
const STRACE_DIR = path.join(os.tmpdir(), 'edgeh');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const MINIMAL = `import http from 'node:http';
import { Pool } from 'undici';
const pool = new Pool('http://127.0.0.1:' + process.env.UP, { connections: 256, pipelining: 1, keepAliveTimeout: 4000 });
const s = http.createServer((req, res) => {
  const headers = {};
  for (const k in req.headers) if (k !== 'connection') headers[k] = req.headers[k];
  headers['x-forwarded-for'] = req.socket.remoteAddress;
  pool.request({ path: req.url, method: req.method, headers }).then((r) => {
    const out = {}; for (const k in r.headers) if (k !== 'connection' && k !== 'keep-alive') out[k] = r.headers[k];
    res.writeHead(r.statusCode, out); r.body.pipe(res);
  }, () => { res.statusCode = 502; res.end(); });
});
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port, pid: process.pid })));
`;

export async function main() {
  const rounds = Number(process.env.ROUNDS ?? 5);
  const ms = Number(process.env.ROUND_MS ?? 2000);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-edgecpu-'));
  const inWorker = process.env.WORKER ? path.join(tmp, 'in-worker') : null;
  if (inWorker) mkdirSync(inWorker);
  const berth = await startChild('bench/servers/berth.mjs', { BERTH_SLEEP_IDLE_SECONDS: '3600', BERTH_RUNTIME: 'process', BERTH_CGROUPS: '', ...(inWorker ? { BENCH_EDGE_IN_WORKER: inWorker } : {}) });
  const extra: Child[] = [];
  try {
    const { url, token, pid } = berth.info as { url: string; token: string; pid: number };
    const appDir = path.join(tmp, 'app');
    writeHelloApp(appDir);
    const project = await api(url, token, 'POST', '/api/projects', { name: 'bench-hello' });
    await waitReady(url, token, await uploadAndDeploy(url, token, project.id, tgzOf(appDir)));
    const info = await api(url, token, 'GET', `/api/projects/${project.id}/info`);
    const edgeUrl = `http://127.0.0.1:${Number(new URL(info.runtime.url).port)}`;
    const appPort = info.runtime.port as number;
    const host = `${project.slug}.localhost`;
    const appPids = children(pid).filter((p) => { try { return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('server.js'); } catch { return false; } });
    const appTree = appPids.flatMap(tree);
    const targets: { name: string; url: string; pids: number[] }[] = [];
    const ngDir = mkdtempSync(path.join(os.tmpdir(), 'berth-nginx-'));
    const nginx = await startNginx(ensureNginx()!, { dir: ngDir, upstreamPort: appPort, ready: async (port) => { const r = await fetch(`http://127.0.0.1:${port}/`, { headers: { host } }); await r.text(); } });
    const ngPid = Number(readFileSync(path.join(ngDir, 'nginx.pid'), 'utf8'));
    targets.push({ name: 'nginx', url: `http://127.0.0.1:${nginx.port}`, pids: tree(ngPid) });
    targets.push({ name: 'edge', url: edgeUrl, pids: [pid] });
    if (!process.env.NO_MIN) {
      const f = path.join(process.cwd(), 'bench', '.minimal-proxy.mjs');
      writeFileSync(f, MINIMAL);
      const m = await startChild(f, { UP: String(appPort) });
      rmSync(f);
      extra.push(m);
      targets.push({ name: 'minimal', url: `http://127.0.0.1:${m.info.port}`, pids: [m.info.pid] });
    }
    if (process.env.B) {
      // A second Berth: B_FLAGS its node flags, B_ROOT a tree with its own dist/ (bench/servers/berth.mjs there).
      const saved = process.env.BENCH_NODE_FLAGS;
      if (process.env.B_FLAGS !== undefined) process.env.BENCH_NODE_FLAGS = process.env.B_FLAGS;
      const bEnv = JSON.parse(process.env.B_ENV ?? '{}') as Record<string, string>;
      const b2 = await startChild(path.join(process.env.B_ROOT ?? process.cwd(), 'bench/servers/berth.mjs'), { BERTH_SLEEP_IDLE_SECONDS: '3600', BERTH_RUNTIME: 'process', BERTH_CGROUPS: '', ...bEnv });
      if (saved === undefined) delete process.env.BENCH_NODE_FLAGS; else process.env.BENCH_NODE_FLAGS = saved;
      extra.push(b2);
      const i2 = b2.info as { url: string; token: string; pid: number };
      const pr = await api(i2.url, i2.token, 'POST', '/api/projects', { name: 'bench-hello' });
      await waitReady(i2.url, i2.token, await uploadAndDeploy(i2.url, i2.token, pr.id, tgzOf(appDir)));
      const inf = await api(i2.url, i2.token, 'GET', `/api/projects/${pr.id}/info`);
      if (pr.slug !== project.slug) throw new Error('slugs differ');
      targets.push({ name: 'edge-B', url: `http://127.0.0.1:${Number(new URL(inf.runtime.url).port)}`, pids: [i2.pid] });
    }
    if (inWorker) {
      // The same class on a worker thread of Berth's process: its own heap and compiled code, the process's CPU.
      writeFileSync(path.join(inWorker, 'up'), String(appPort));
      targets.push({ name: 'edge-in-worker', url: `http://127.0.0.1:${readFileSync(path.join(inWorker, 'port'), 'utf8')}`, pids: [pid] });
    }
    if (process.env.ALONE) {
      const m = await startChild('bench/servers/edge-alone.mjs', { UP: String(appPort), HOSTNAME: host });
      extra.push(m);
      targets.push({ name: 'edge-alone', url: `http://127.0.0.1:${m.info.port}`, pids: [m.info.pid] });
    }
    const per = targets.map(() => ({ rps: [] as number[], p99: [] as number[], cpu: [] as number[], app: [] as number[], gen: [] as number[], errors: 0, n: 0 }));
    for (const t of targets) { const c0 = cpuOf(t.pids); await new Promise((r) => setTimeout(r, 5000)); console.error(`${t.name} idle: ${((cpuOf(t.pids) - c0) / 5).toFixed(1)} ms CPU per s`); }
    for (const t of targets) await load({ url: t.url, path: '/', headers: { host }, connections: 32, durationMs: Number(process.env.WARM_MS ?? 0), warmupMs: 0 });
    for (let r = 0; r < rounds; r++) {
      for (const [i, t] of targets.entries()) {
        if (process.env.STRACE) mkdirSync(STRACE_DIR, { recursive: true });
        const st = process.env.STRACE && r === rounds - 1 ? spawn('strace', ['-c', '-f', '-o', `${STRACE_DIR}/strace-${t.name}.txt`, ...t.pids.flatMap((p) => ['-p', String(p)])], { stdio: 'ignore' }) : null;
        // PERF=1: the target's on-CPU samples of the last round (`perf record -g`, 1999 Hz) into /tmp/edgeh/perf-<target>.data.
        const pf = process.env.PERF && r === rounds - 1 ? spawn('perf', ['record', '-F', '1999', '-g', '-o', `${STRACE_DIR}/perf-${t.name}.data`, '-p', t.pids.join(',')], { stdio: 'ignore' }) : null;
        if (pf) mkdirSync(STRACE_DIR, { recursive: true });
        if (st || pf) await new Promise((res) => setTimeout(res, 500));
        const b = cpuOf(t.pids), a = cpuOf(appTree), g = process.cpuUsage();
        const res = await load({ url: t.url, path: '/', headers: { host }, connections: 32, durationMs: ms, warmupMs: 300, expect: 200 });
        const n = res.requests + res.rps * 0.3;
        const gu = process.cpuUsage(g);
        if (st) { st.kill('SIGINT'); await new Promise((res) => st.once('exit', res)); console.error(`${t.name}: ${n.toFixed(0)} requests straced`); writeFileSync(`${STRACE_DIR}/strace-${t.name}.n`, String(res.requests + 300 * res.rps / 1000)); }
        if (pf) { pf.kill('SIGINT'); await new Promise((res) => pf.once('exit', res)); writeFileSync(`${STRACE_DIR}/perf-${t.name}.n`, String(Math.round(n))); }
        per[i]!.rps.push(res.rps); per[i]!.p99.push(res.p99); per[i]!.errors += res.errors; per[i]!.n += n;
        per[i]!.cpu.push(((cpuOf(t.pids) - b) * 1000) / n);
        per[i]!.app.push(((cpuOf(appTree) - a) * 1000) / n);
        per[i]!.gen.push((gu.user + gu.system) / n);
      }
      console.error(`round ${r}: ` + targets.map((t, i) => `${t.name} ${(per[i]!.rps[r]! / per[0]!.rps[r]!).toFixed(2)} cpu ${per[i]!.cpu[r]!.toFixed(0)}`).join(' | ') + `  load ${os.loadavg()[0].toFixed(1)}`);
    }
    for (const [i, t] of targets.entries()) {
      const p = per[i]!;
      console.log(`${t.name.padEnd(11)} ratio ${median(p.rps.map((v, r) => v / per[0]!.rps[r]!)).toFixed(2)} rps ${median(p.rps).toFixed(0)} p99 ${median(p.p99).toFixed(1)} ms  cpu/req ${median(p.cpu).toFixed(0)} µs  app ${median(p.app).toFixed(0)} µs  loadgen ${median(p.gen).toFixed(0)} µs  errors ${p.errors}  requests ${p.n}`);
    }
    await nginx.stop();
    rmSync(ngDir, { recursive: true, force: true });
  } finally {
    for (const c of extra) await c.stop();
    await berth.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
await main();
