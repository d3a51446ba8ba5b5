import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { cpuMs, load, startChild, startFlags, type LoadOptions, type LoadResult, type Row } from './lib.js';
import { ensureH2load, h1Rounds } from './h2load.js';
import { api, ensureNginx, startNginx, tgzOf, uploadAndDeploy, waitReady, writeExpressApp, writeHelloApp } from './hello.js';

/**
 * The edge and the runtime, one run (issues "Build and run" point 8 and "Isolation" point 7):
 * - upload-to-ready of a hello-world app without dependencies under the default driver: < 2 s;
 * - the edge in front of the sandboxed app against the edge in front of the same app run bare (a
 *   second Berth with BERTH_RUNTIME=process), 32 connections: >= 0.9;
 * - the edge to the bare app against nginx `proxy_pass` (Debian's nginx, installed with apt-get when
 *   missing; one worker, upstream keep-alive) to the same app: >= 0.8 (issue 36), p99 of both beside it,
 *   and the CPU per request of each server (from /proc; each warmed first, see below);
 * - wake from sleep of the sandboxed app: p50 < 150 ms (issue 36), with the machine's own Node start
 *   (`node -e 0`) beside it: most of a wake is the app's Node starting.
 */

/** The processes `pid` started (Linux /proc): nginx's workers. */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function edgeGet(edgeUrl: string, host: string): Promise<number> {
  const res = await request(edgeUrl + '/', { headers: { host } });
  await res.body.dump();
  return res.statusCode;
}

/**
 * `n` starts of an empty Node program (spawn to exit, ms), with the environment an app's box gets for
 * its CA settings (no `NODE_EXTRA_CA_CERTS`: src/runtime/host-ca.ts), one after the other.
 */
async function nodeStarts(n: number): Promise<number[]> {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  delete env.NODE_OPTIONS;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', '0'], { env, stdio: 'ignore' });
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
    out.push(performance.now() - t0);
  }
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Uploads the hello app to a new project of `berth` and waits until it is ready; answers its host and timing. */
async function deployHello(url: string, token: string, archive: Buffer, name: string, runs: number): Promise<{ project: any; host: string; times: number[] }> {
  const project = await api(url, token, 'POST', '/api/projects', { name });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await waitReady(url, token, await uploadAndDeploy(url, token, project.id, archive));
    times.push(performance.now() - t0);
  }
  return { project, host: `${project.slug}.localhost`, times };
}

/**
 * The runtime's figures (issue 14): upload-to-ready of a hello-world app under the default sandbox
 * driver (< 2 s), the edge in front of the sandboxed app against the edge in front of the same app
 * run bare by a second Berth with BERTH_RUNTIME=process (>= 0.9: what isolation costs a request),
 * the edge against nginx to the bare app (>= 0.8), and wake from sleep p50 in the sandbox (< 150 ms).
 */
export async function edgeBench(): Promise<Row[]> {
  const rows: Row[] = [];
  // BENCH_EDGE_PARTS=wake,load (any of express, load, wake; default all) runs some parts only.
  const parts = new Set((process.env.BENCH_EDGE_PARTS ?? 'express,load,wake').split(','));
  const berth = await startChild('bench/servers/berth.mjs', { BERTH_SLEEP_IDLE_SECONDS: '1', BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '' });
  // BENCH_EDGE_CPU_PROF=DIR: the bare Berth (whose edge is measured against nginx) writes a CPU profile there.
  const flags = process.env.BENCH_NODE_FLAGS;
  if (process.env.BENCH_EDGE_CPU_PROF) process.env.BENCH_NODE_FLAGS = [...startFlags(), '--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_EDGE_CPU_PROF}`].join(' ');
  const bare = await startChild('bench/servers/berth.mjs', { BERTH_SLEEP_IDLE_SECONDS: '1', BERTH_RUNTIME: 'process', BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '' });
  if (flags === undefined) delete process.env.BENCH_NODE_FLAGS;
  else process.env.BENCH_NODE_FLAGS = flags;
  const { url, token } = berth.info as { url: string; token: string };
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-edge-bench-'));
  try {
    const appDir = path.join(tmp, 'app');
    writeHelloApp(appDir);
    const archive = tgzOf(appDir);

    // ---- upload-to-ready (three runs, median), sandboxed
    const { project, host, times } = await deployHello(url, token, archive, 'bench-hello', 3);
    const health = await api(url, token, 'GET', '/api/health');
    const u2r = median(times);
    rows.push({ bench: 'edge', metric: `upload-to-ready (hello world, ${health.runtime.driver})`, value: u2r, unit: 'ms', target: '< 2000 ms', ok: u2r < 2000 });

    // ---- deploy-to-ready of an Express app, first build: its install reaches the npm registry from the box (issue 32)
    if (parts.has('express')) {
      const express = await deployHello(url, token, tgzOf(writeExpressApp(path.join(tmp, 'express'))), 'bench-express', 1);
      const e2r = express.times[0]!;
      rows.push({ bench: 'edge', metric: `deploy-to-ready (Express, first build, ${health.runtime.driver}; reference: hello world)`, value: e2r, reference: u2r, ratio: e2r / u2r, unit: 'ms', target: 'reported' });
    }

    // ---- the same app, bare (process driver), for the references
    const b = bare.info as { url: string; token: string };
    const bareApp = await deployHello(b.url, b.token, archive, 'bench-hello', 1);
    const bareInfo = await api(b.url, b.token, 'GET', `/api/projects/${bareApp.project.id}/info`);
    const bareEdge = `http://127.0.0.1:${Number(new URL(bareInfo.runtime.url).port)}`;
    const bareAppPort = bareInfo.runtime.port as number;

    const info = await api(url, token, 'GET', `/api/projects/${project.id}/info`);
    const edgeUrl = `http://127.0.0.1:${Number(new URL(info.runtime.url).port)}`;
    if (parts.has('load')) {
      // Rounds alternate (sandboxed, bare, nginx) and the median of each is kept, so that drift in the
      // machine's load hits all alike.
      const nginxBin = ensureNginx();
      const ngDir = mkdtempSync(path.join(os.tmpdir(), 'berth-nginx-'));
      const nginx = nginxBin ? await startNginx(nginxBin, { dir: ngDir, upstreamPort: bareAppPort, ready: (port) => edgeGet(`http://127.0.0.1:${port}`, 'bench.localhost') }) : null;
      const nginxUrl = `http://127.0.0.1:${nginx?.port}`;
      const edgeRuns: LoadResult[] = [];
      const bareRuns: LoadResult[] = [];
      const ngRuns: LoadResult[] = [];
      // CPU per request of the bare Berth's process (its edge) and of nginx (master and worker), per round.
      const bareCpu: number[] = [];
      const ngCpu: number[] = [];
      const barePid = (bare.info as { pid: number }).pid;
      const ngPids = nginx ? [nginx.pid, ...childPids(nginx.pid)] : [];
      const measured = async (pids: number[], opts: LoadOptions, cpu: number[]) => {
        const before = pids.reduce((a, p) => a + cpuMs(p), 0);
        const r = await load(opts);
        cpu.push(((pids.reduce((a, p) => a + cpuMs(p), 0) - before) * 1000) / (r.requests + (r.rps * (opts.warmupMs ?? 0)) / 1000));
        return r;
      };
      const sandboxedLoad: LoadOptions = { url: edgeUrl, path: '/', headers: { host }, connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 };
      const bareLoad: LoadOptions = { url: bareEdge, path: '/', headers: { host: bareApp.host }, connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 };
      const ngLoad: LoadOptions = { url: nginxUrl, path: '/', headers: { host }, connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 };
      // Each server is warmed before the rounds (the same load, not measured, in 2 s steps until it has
      // served BENCH_EDGE_WARM_REQUESTS, default 20000, or for BENCH_EDGE_WARM_MS, default 20 s): the
      // edge's first thousands of requests cost it several times the CPU per request of later ones (V8
      // compiling the request path, the heap growing: docs/benchmarks.md 2026-11-29 21:00), which a proxy
      // that runs for days pays once; nginx has nothing to warm.
      const warmRequests = Number(process.env.BENCH_EDGE_WARM_REQUESTS ?? 20000);
      const warmMs = Number(process.env.BENCH_EDGE_WARM_MS ?? 20000);
      for (const opts of nginx ? [sandboxedLoad, bareLoad, ngLoad] : [sandboxedLoad, bareLoad]) {
        const end = Date.now() + warmMs;
        for (let served = 0; served < warmRequests && Date.now() < end; ) served += (await load({ ...opts, durationMs: 2000, warmupMs: 0, expect: undefined })).requests;
      }
      for (let round = 0; round < 3; round++) {
        edgeRuns.push(await load(sandboxedLoad));
        bareRuns.push(await measured([barePid], bareLoad, bareCpu));
        if (nginx) ngRuns.push(await measured(ngPids, ngLoad, ngCpu));
    }
    // The same edge and nginx from h2load --h1 (a C client, installed if missing), without a target;
    // unpinned, as the judged rounds (a proxy, its app and the client are three processes on two CPUs).
    const cSide = nginx && ensureH2load() ? await h1Rounds({ port: nginx.port, host, pids: ngPids }, { port: Number(new URL(bareEdge).port), host: bareApp.host, pids: [barePid] }, 3, 3000, []) : null;
    await nginx?.stop();
    rmSync(ngDir, { recursive: true, force: true });
    const edgeRps = median(edgeRuns.map((r) => r.rps));
    const edgeP99 = median(edgeRuns.map((r) => r.p99));
    const edgeErrors = edgeRuns.reduce((a, r) => a + r.errors, 0);
    const bareRps = median(bareRuns.map((r) => r.rps));
    const bareP99 = median(bareRuns.map((r) => r.p99));
    rows.push({ bench: 'edge', metric: 'edge -> sandboxed app req/s (median of 3)', value: edgeRps, unit: 'req/s', reference: bareRps, ratio: edgeRps / bareRps, target: '>= 0.9 x edge -> bare app', ok: edgeRps / bareRps >= 0.9 && edgeErrors === 0 });
    rows.push({ bench: 'edge', metric: 'edge -> sandboxed app p99 (median of 3)', value: edgeP99, unit: 'ms', reference: bareP99, ratio: edgeP99 / bareP99 });
    if (nginx) {
      const ngRps = median(ngRuns.map((r) => r.rps));
      const ngP99 = median(ngRuns.map((r) => r.p99));
      const spread = bareRuns.map((r, i) => (r.rps / ngRuns[i]!.rps).toFixed(2)).join(', ');
      console.error(`  edge -> bare app / nginx by round: ${spread}; CPU per request, edge: ${bareCpu.map((c) => c.toFixed(0)).join(', ')} µs, nginx: ${ngCpu.map((c) => c.toFixed(0)).join(', ')} µs; load average ${os.loadavg()[0]!.toFixed(1)}`);
      rows.push({ bench: 'edge', metric: `edge -> bare app req/s vs nginx (median of 3; p99 ${bareP99.toFixed(1)} vs ${ngP99.toFixed(1)} ms)`, value: bareRps, unit: 'req/s', reference: ngRps, ratio: bareRps / ngRps, target: '>= 0.8 x nginx', ok: bareRps / ngRps >= 0.8 });
      rows.push({ bench: 'edge', metric: 'edge -> bare app p99 vs nginx (median of 3)', value: bareP99, unit: 'ms', reference: ngP99, ratio: bareP99 / ngP99 });
      if (cSide) {
        console.error(`  edge -> bare app / nginx from h2load --h1 by round: ${cSide.byRound}`);
        rows.push({ bench: 'edge', metric: 'edge -> bare app req/s from h2load --h1 (a C client, not the bound; 32 connections; median of 3) vs nginx', value: cSide.target.rps, unit: 'req/s', reference: cSide.reference.rps, ratio: cSide.target.rps / cSide.reference.rps });
        rows.push({ bench: 'edge', metric: 'edge -> bare app from h2load --h1: requests per server CPU-second vs nginx', value: cSide.target.perCpu, unit: '/cpu-s', reference: cSide.reference.perCpu, ratio: cSide.target.perCpu / cSide.reference.perCpu });
        if (cSide.errors) rows.push({ bench: 'edge', metric: 'edge -> bare app and nginx from h2load --h1: failed requests', value: cSide.errors, unit: '', ok: false });
      }
      const eCpu = median(bareCpu);
      const nCpu = median(ngCpu);
      rows.push({ bench: 'edge', metric: 'edge -> bare app CPU per request vs nginx (median of 3; the server process only)', value: eCpu, unit: 'µs', reference: nCpu, ratio: eCpu / nCpu });
    } else {
      rows.push({ bench: 'edge', metric: 'edge proxy req/s vs nginx (nginx unavailable)', value: bareRps, unit: 'req/s', ok: false });
    }

    }

    // ---- wake from sleep, sandboxed
    if (parts.has('wake')) {
      await api(url, token, 'POST', `/api/projects/${project.id}/sleep-mode`, { sleepMode: 'auto_sleep' });
      const wakes: number[] = [];
      for (let i = 0; i < 7; i++) {
        const end = Date.now() + 15000;
        while ((await api(url, token, 'GET', `/api/projects/${project.id}/info`)).runtime.state !== 'sleeping') {
          if (Date.now() > end) throw new Error('the app did not go to sleep');
          await new Promise((r) => setTimeout(r, 100));
        }
        // Asleep, not falling asleep: a second after the stop, as a request after the idle timeout finds
        // it (the box's network namespace is put back as a spare for the next start in that time; a
        // wake in the same instant waits for it: docs/benchmarks.md).
        await new Promise((r) => setTimeout(r, 1000));
        const t0 = performance.now();
        const status = await edgeGet(edgeUrl, host);
        if (status !== 200) throw new Error(`wake answered ${status}`);
        wakes.push(performance.now() - t0);
    }
    const wakeP50 = median(wakes);
    console.error(`  wakes: ${wakes.map((w) => w.toFixed(0)).join(', ')} ms`);
    rows.push({ bench: 'edge', metric: 'wake from sleep p50 (sandboxed)', value: wakeP50, unit: 'ms', target: '< 150 ms', ok: wakeP50 < 150 });
    // Most of a wake is the app's Node starting, whose time moves with the machine's state: said beside it.
    const starts = await nodeStarts(7);
    console.error(`  node -e 0: ${starts.map((w) => w.toFixed(0)).join(', ')} ms`);
    rows.push({ bench: 'edge', metric: "the machine's Node start p50 (`node -e 0`, spawn to exit; a wake's floor)", value: median(starts), unit: 'ms' });
    }
  } finally {
    await berth.stop();
    await bare.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}
