import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http2 from 'node:http2';
import tls from 'node:tls';
import { Pool } from 'undici';
import { startChild, waitIdle, type Row } from './lib.js';
import { ensureH2load, h2loadRound, type H2loadResult } from './h2load.js';
import { api, findNginx, freePort, startNginx, tgzOf, uploadAndDeploy, waitReady, writeHelloApp, type Nginx } from './hello.js';

/**
 * HTTPS at the edge against nginx terminating TLS (issue 20 point 6), one run, rounds alternating
 * edge, nginx so that drift in the machine's load hits both alike; the median of each is kept:
 * - TLS handshake rate: new connections per second, each a full TLS 1.3 handshake (no session
 *   resumption: every connection starts without a session), `HANDSHAKE_CONNECTORS` concurrent
 *   connectors for a fixed time, the same ECDSA P-256 `*.bench.test` leaf (from a throwaway CA made
 *   here with openssl) on both sides. Node's TLS client costs more per handshake than either server
 *   (it verifies two ECDSA signatures), so with 2 cores the raw rate is the client's: the target
 *   (>= 0.5 of nginx) is on handshakes per CPU-second of the server (its /proc utime+stime over the
 *   window; nginx: master and worker; Berth: its own process, not the app it runs), after the server's
 *   start-up work ended (`waitIdle`) and both handshake paths were warmed (BENCH_HTTPS_WARM_MS, at most
 *   one round's length, unmeasured);
 * - HTTPS req/s over 32 keep-alive HTTP/1.1 connections (undici Pool, `connect: { ca, servername }`)
 *   to the same upstream: the hello app a Berth with BERTH_RUNTIME=process runs; nginx `proxy_pass`es
 *   to that app's port directly (one worker, upstream keep-alive): >= 0.8 of nginx (issue 36), p99 beside it;
 *   both servers' request paths are warmed first (BENCH_HTTPS_WARM_MS, unmeasured);
 * - HTTP/2 req/s (issue 36 point 3): the same 32 requests in flight as streams over 4 connections
 *   (undici Pool with `allowH2`), both servers speaking HTTP/1.1 keep-alive to the app: >= 0.8 of
 *   nginx, p99 of both beside it;
 * - the same HTTP/2 and HTTPS/1.1 loads from h2load (a C client, bench/h2load.ts), without a target:
 *   the bench's own client is the bound in nginx's HTTP/2 rounds (docs/benchmarks.md).
 * BENCH_HTTPS_PERF=FILE records the edge's on-CPU samples of the last HTTP/2 round with `perf record -g`;
 * BENCH_VERBOSE=1 prints every round (the client's CPU beside the server's).
 * The edge's certificate comes from the free domains' wildcard files (BERTH_WILDCARD_CERT_FILE/_KEY_FILE
 * with BERTH_APPS_DOMAIN=bench.test), so no ACME is involved.
 */

const ROUNDS = Number(process.env.BENCH_HTTPS_ROUNDS ?? 3);
const HANDSHAKE_CONNECTORS = Number(process.env.BENCH_HANDSHAKE_CONNECTORS ?? 16);
const HANDSHAKE_MS = 3000;
const RPS_CONNECTIONS = 32;
/** HTTP/2: the same 32 requests in flight, over this many connections (8 streams each). */
const H2_CONNECTIONS = 4;
const RPS_MS = 3000;
const WARMUP_MS = 500;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A throwaway CA and a `*.bench.test` ECDSA P-256 leaf it signed (openssl, argument arrays). */
export function makeCertificates(dir: string): { ca: string; certFile: string; keyFile: string } {
  const f = (n: string) => path.join(dir, n);
  const ossl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-subj', '/CN=Berth bench CA', '-days', '2']);
  ossl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=*.bench.test']);
  writeFileSync(f('leaf.ext'), 'subjectAltName=DNS:*.bench.test\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  ossl(['x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('leaf.crt'), '-days', '2', '-extfile', f('leaf.ext')]);
  return { ca: readFileSync(f('ca.crt'), 'utf8'), certFile: f('leaf.crt'), keyFile: f('leaf.key') };
}

/** Uploads the hello app to a new project and waits until it is ready. */
export async function deployHello(url: string, token: string, archive: Buffer): Promise<any> {
  const project = await api(url, token, 'POST', '/api/projects', { name: 'bench-https' });
  await waitReady(url, token, await uploadAndDeploy(url, token, project.id, archive));
  return project;
}

/**
 * CPU seconds (user + system) of a process, with its direct children when `children` (nginx: master
 * and worker; not for Berth, whose child is the app itself).
 */
export function cpuSeconds(pid: number, children: boolean): number {
  const ticks = (p: number) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      return 0;
    }
  };
  let kids: number[] = [];
  if (children)
    try {
      kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      /* no children file */
    }
  return (ticks(pid) + kids.reduce((a, c) => a + ticks(c), 0)) / 100;
}

/** One full TLS 1.3 handshake (a new connection, no session offered); answers the negotiated parameters. */
function handshakeOnce(port: number, ca: string | tls.SecureContext, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const secureContext = typeof ca === 'string' ? tls.createSecureContext({ ca, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' }) : ca;
    const s = tls.connect({ host: '127.0.0.1', port, servername, secureContext, ALPNProtocols: ['http/1.1'] }, () => {
      const c = s.getCipher();
      const k = s.getEphemeralKeyInfo() as { name?: string };
      const d = `${s.getProtocol()} ${c.name} ${k.name ?? '?'} resumed=${s.isSessionReused()}`;
      s.end();
      resolve(d);
    });
    s.once('error', reject);
  });
}

/** One HTTP/2 request over a new connection (ALPN must pick `h2`, or this fails); answers the status. */
function h2Once(port: number, ca: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca, servername: host, ALPNProtocols: ['h2'] });
    session.once('error', reject);
    const req = session.request({ ':path': '/', ':authority': host });
    req.once('response', (h) => {
      req.resume();
      req.once('end', () => {
        session.close();
        resolve(Number(h[':status']));
      });
    });
    req.once('error', reject);
    req.end();
  });
}

interface HandshakeResult {
  rate: number;
  errors: number;
  p99: number;
  serverCpu: number;
  clientCpu: number;
}

/**
 * `connectors` loops, each opening a TLS connection, waiting for the handshake, closing it and opening
 * the next, for `ms` (after a warm-up). Every connection is new and offers no session: full handshakes.
 */
async function handshakes(port: number, ctx: tls.SecureContext, servername: string, connectors: number, ms: number, serverCpuSeconds: () => number): Promise<HandshakeResult> {
  const run = async (duration: number, record: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const end = Date.now() + duration;
    await Promise.all(
      Array.from({ length: connectors }, async () => {
        while (Date.now() < end) {
          const t0 = process.hrtime.bigint();
          const ok = await new Promise<boolean>((resolve) => {
            // The chain is verified against the CA by OpenSSL; the name was checked once (handshakeOnce), so
            // the JS identity check (which builds the peer certificate object) is skipped to spare the client.
            const s = tls.connect({ host: '127.0.0.1', port, servername, secureContext: ctx, checkServerIdentity: () => undefined });
            let done = false;
            s.once('secureConnect', () => {
              done = true;
              s.end();
            });
            s.once('error', () => {
              s.destroy();
            });
            s.once('close', () => resolve(done));
          });
          if (!ok) errors++;
          else if (record) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    return { latencies, errors };
  };
  await run(WARMUP_MS, false);
  const cpu0 = serverCpuSeconds();
  const client0 = process.cpuUsage();
  const t0 = Date.now();
  const { latencies, errors } = await run(ms, true);
  const elapsed = (Date.now() - t0) / 1000;
  const serverCpu = serverCpuSeconds() - cpu0;
  const c = process.cpuUsage(client0);
  latencies.sort((a, b) => a - b);
  return { rate: latencies.length / elapsed, errors, p99: percentile(latencies, 99), serverCpu: serverCpu / elapsed, clientCpu: (c.user + c.system) / 1e6 / elapsed };
}

export interface RpsResult {
  rps: number;
  errors: number;
  p50: number;
  p99: number;
  serverCpu: number;
  /** The bench process's own CPU (the client: cores over the window). */
  clientCpu: number;
}

/**
 * Closed-loop HTTPS load: `workers` requests in flight over `connections` keep-alive connections
 * (undici Pool). HTTP/1.1: one request per connection at a time. HTTP/2 (`h2`, ALPN): each connection
 * carries up to workers / connections streams at once.
 */
export async function httpsLoad(port: number, ca: string, servername: string, workers: number, ms: number, serverCpuSeconds: () => number, h2?: { connections: number }): Promise<RpsResult> {
  const pool = h2
    ? new Pool(`https://127.0.0.1:${port}`, { connections: h2.connections, pipelining: Math.ceil(workers / h2.connections), allowH2: true, connect: { ca, servername } })
    : new Pool(`https://127.0.0.1:${port}`, { connections: workers, pipelining: 1, connect: { ca, servername } });
  // undici sends the `host` given here as HTTP/2's `:authority`.
  const headers = { host: servername };
  const path = '/';
  const run = async (duration: number, record: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const end = Date.now() + duration;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (Date.now() < end) {
          const t0 = process.hrtime.bigint();
          try {
            const res = await pool.request({ path, method: 'GET', headers });
            await res.body.dump();
            if (res.statusCode !== 200) errors++;
          } catch {
            errors++;
          }
          if (record) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    return { latencies, errors };
  };
  await run(WARMUP_MS, false);
  const cpu0 = serverCpuSeconds();
  const client0 = process.cpuUsage();
  const t0 = Date.now();
  const { latencies, errors } = await run(ms, true);
  const elapsed = (Date.now() - t0) / 1000;
  const serverCpu = (serverCpuSeconds() - cpu0) / elapsed;
  const c = process.cpuUsage(client0);
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, errors, p50: percentile(latencies, 50), p99: percentile(latencies, 99), serverCpu, clientCpu: (c.user + c.system) / 1e6 / elapsed };
}

export async function httpsBench(): Promise<Row[]> {
  const rows: Row[] = [];
  const nginxBin = findNginx();
  if (!nginxBin) {
    // bench/edge.ts installs it with apt-get; run `npm run bench -- edge` once, or install nginx-light.
    return [{ bench: 'https', metric: 'nginx unavailable (install nginx-light)', value: NaN, unit: '', ok: false }];
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-https-bench-'));
  const { ca, certFile, keyFile } = makeCertificates(tmp);
  const httpsPort = await freePort();
  const berth = await startChild('bench/servers/berth.mjs', {
    BERTH_RUNTIME: 'process',
    BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '',
    BERTH_HTTPS_PORT: String(httpsPort),
    BERTH_APPS_DOMAIN: 'bench.test',
    BERTH_WILDCARD_CERT_FILE: certFile,
    BERTH_WILDCARD_KEY_FILE: keyFile,
  });
  const { url, token, pid } = berth.info as { url: string; token: string; pid: number };
  let nginx: Nginx | null = null;
  try {
    const appDir = path.join(tmp, 'app');
    writeHelloApp(appDir);
    const project = await deployHello(url, token, tgzOf(appDir));
    const host = `${project.slug}.bench.test`;
    const info = await api(url, token, 'GET', `/api/projects/${project.id}/info`);
    const appPort = info.runtime.port as number;
    const ngDir = path.join(tmp, 'nginx');
    mkdirSync(ngDir);
    nginx = await startNginx(nginxBin, { dir: ngDir, upstreamPort: appPort, tls: { certFile, keyFile }, ready: (port) => handshakeOnce(port, ca, host) });

    const ctx = tls.createSecureContext({ ca, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' });
    console.error(`  edge:  ${await handshakeOnce(httpsPort, ctx, host)}`);
    console.error(`  nginx: ${await handshakeOnce(nginx.port, ctx, host)}`);
    for (const [who, port] of [['edge', httpsPort], ['nginx', nginx.port]] as const) {
      const status = await h2Once(port, ca, host);
      if (status !== 200) throw new Error(`${who} answered ${status} over HTTP/2`);
    }

    const edgeCpu = () => cpuSeconds(pid, false);
    const ngPid = nginx.pid;
    const ngCpu = () => cpuSeconds(ngPid, true);
    const edgeHs: HandshakeResult[] = [];
    const ngHs: HandshakeResult[] = [];
    const edgeRps: RpsResult[] = [];
    const ngRps: RpsResult[] = [];
    // The server's start-up work done, and both servers' handshake paths warmed (not measured), as the
    // request rounds below are: the edge's first handshakes run its TLS callbacks unoptimised.
    console.error(`  waited ${await waitIdle(pid)} ms for the server's start-up work to end`);
    const warmMs = Number(process.env.BENCH_HTTPS_WARM_MS ?? 4000);
    if (warmMs > 0) {
      for (const [port, cpu] of [[httpsPort, edgeCpu], [nginx.port, ngCpu]] as const) await handshakes(port, ctx, host, HANDSHAKE_CONNECTORS, Math.min(warmMs, HANDSHAKE_MS), cpu);
    }
    console.error(`  handshakes: ${ROUNDS} rounds (edge pid ${pid}, nginx pid ${ngPid})`);
    for (let round = 0; round < ROUNDS; round++) {
      edgeHs.push(await handshakes(httpsPort, ctx, host, HANDSHAKE_CONNECTORS, HANDSHAKE_MS, edgeCpu));
      ngHs.push(await handshakes(nginx.port, ctx, host, HANDSHAKE_CONNECTORS, HANDSHAKE_MS, ngCpu));
    }
    // Both servers' request paths warmed before the rounds (BENCH_HTTPS_WARM_MS each, not measured): the
    // edge's first seconds of load cost it several times the CPU per request of later ones (bench/edge.ts).
    if (warmMs > 0) {
      for (const [port, cpu] of [[httpsPort, edgeCpu], [nginx.port, ngCpu]] as const) {
        await httpsLoad(port, ca, host, RPS_CONNECTIONS, warmMs, cpu);
        await httpsLoad(port, ca, host, RPS_CONNECTIONS, warmMs, cpu, { connections: H2_CONNECTIONS });
      }
    }
    console.error(`  requests: ${ROUNDS} rounds`);
    for (let round = 0; round < ROUNDS; round++) {
      edgeRps.push(await httpsLoad(httpsPort, ca, host, RPS_CONNECTIONS, RPS_MS, edgeCpu));
      ngRps.push(await httpsLoad(nginx.port, ca, host, RPS_CONNECTIONS, RPS_MS, ngCpu));
    }
    console.error(`  HTTP/2 requests: ${ROUNDS} rounds`);
    const edgeH2: RpsResult[] = [];
    const ngH2: RpsResult[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // BENCH_HTTPS_PERF=FILE: the edge's on-CPU samples of the last HTTP/2 round (`perf record -g`, 1999 Hz) into FILE.
      const perfFile = process.env.BENCH_HTTPS_PERF;
      const pf = perfFile && round === ROUNDS - 1 ? spawn('perf', ['record', '-F', '1999', '-g', '-o', perfFile, '-p', String(pid)], { stdio: 'ignore' }) : null;
      edgeH2.push(await httpsLoad(httpsPort, ca, host, RPS_CONNECTIONS, RPS_MS, edgeCpu, { connections: H2_CONNECTIONS }));
      if (pf) {
        pf.kill('SIGINT');
        await new Promise((res) => pf.once('exit', res));
        console.error(`  perf: ${perfFile}, ${Math.round(edgeH2.at(-1)!.rps * RPS_MS / 1000)} requests (about)`);
      }
      ngH2.push(await httpsLoad(nginx.port, ca, host, RPS_CONNECTIONS, RPS_MS, ngCpu, { connections: H2_CONNECTIONS }));
    }
    // The same HTTP/2 load from a C client (h2load, installed if missing): a comparison the client does not bound.
    const edgeC: H2loadResult[] = [];
    const ngC: H2loadResult[] = [];
    // And the HTTPS/1.1 load (32 connections, one request each) from the same client.
    const edgeC1: H2loadResult[] = [];
    const ngC1: H2loadResult[] = [];
    if (ensureH2load()) {
      console.error(`  HTTP/2 and HTTPS/1.1 requests from h2load: ${ROUNDS} rounds`);
      for (let round = 0; round < ROUNDS; round++) {
        edgeC.push(await h2loadRound(httpsPort, host, RPS_MS, edgeCpu, H2_CONNECTIONS, RPS_CONNECTIONS / H2_CONNECTIONS));
        ngC.push(await h2loadRound(nginx.port, host, RPS_MS, ngCpu, H2_CONNECTIONS, RPS_CONNECTIONS / H2_CONNECTIONS));
        edgeC1.push(await h2loadRound(httpsPort, host, RPS_MS, edgeCpu, RPS_CONNECTIONS, 1, 'h1-tls'));
        ngC1.push(await h2loadRound(nginx.port, host, RPS_MS, ngCpu, RPS_CONNECTIONS, 1, 'h1-tls'));
      }
    } else console.error('  no h2load (Debian: nghttp2-client), and apt-get could not install it: its rows are left out');
    const byRound = (e: { rps: number }[], n: { rps: number }[]) => e.map((r, i) => (r.rps / n[i]!.rps).toFixed(2)).join(', ');
    console.error(`  HTTPS / nginx by round: ${byRound(edgeRps, ngRps)}; HTTP/2: ${byRound(edgeH2, ngH2)}`);
    if (process.env.BENCH_VERBOSE) console.error(JSON.stringify({ edgeHs, ngHs, edgeRps, ngRps, edgeH2, ngH2, edgeC, ngC, edgeC1, ngC1 }));

    const m = <T>(xs: T[], f: (x: T) => number) => median(xs.map(f));
    const errs = (xs: { errors: number }[]) => xs.reduce((a, x) => a + x.errors, 0);
    const eRate = m(edgeHs, (r) => r.rate);
    const nRate = m(ngHs, (r) => r.rate);
    // On a small machine the bench's own TLS client (one Node thread) runs out of CPU before either
    // server does, so the raw rate is the client's; the rate per CPU-second of the server carries the target.
    rows.push({ bench: 'https', metric: `TLS 1.3 handshakes/s, ECDSA P-256, ${HANDSHAKE_CONNECTORS} connectors (median of ${ROUNDS}; client-bound) vs nginx`, value: eRate, unit: '/s', reference: nRate, ratio: eRate / nRate });
    const ePer = m(edgeHs, (r) => r.rate / r.serverCpu);
    const nPer = m(ngHs, (r) => r.rate / r.serverCpu);
    rows.push({ bench: 'https', metric: 'TLS 1.3 handshakes per server CPU-second vs nginx', value: ePer, unit: '/cpu-s', reference: nPer, ratio: ePer / nPer, target: '>= 0.5 x nginx', ok: ePer / nPer >= 0.5 && errs(edgeHs) === 0 });
    rows.push({ bench: 'https', metric: 'server CPU during handshakes (cores)', value: m(edgeHs, (r) => r.serverCpu), unit: '', reference: m(ngHs, (r) => r.serverCpu) });
    rows.push({ bench: 'https', metric: 'bench client CPU during handshakes (cores)', value: m(edgeHs, (r) => r.clientCpu), unit: '', reference: m(ngHs, (r) => r.clientCpu) });
    const eHsP99 = m(edgeHs, (r) => r.p99);
    const nHsP99 = m(ngHs, (r) => r.p99);
    rows.push({ bench: 'https', metric: 'handshake p99 (connect to secureConnect)', value: eHsP99, unit: 'ms', reference: nHsP99, ratio: eHsP99 / nHsP99 });
    const eRps = m(edgeRps, (r) => r.rps);
    const eP99 = m(edgeRps, (r) => r.p99);
    const nP99 = m(ngRps, (r) => r.p99);
    const nRps = m(ngRps, (r) => r.rps);
    rows.push({ bench: 'https', metric: `HTTPS req/s, ${RPS_CONNECTIONS} keep-alive connections (median of ${ROUNDS}; p99 ${eP99.toFixed(1)} vs ${nP99.toFixed(1)} ms) vs nginx`, value: eRps, unit: 'req/s', reference: nRps, ratio: eRps / nRps, target: '>= 0.8 x nginx', ok: eRps / nRps >= 0.8 && errs(edgeRps) === 0 });
    rows.push({ bench: 'https', metric: 'HTTPS p99 vs nginx', value: eP99, unit: 'ms', reference: nP99, ratio: eP99 / nP99 });
    const eRpsPer = m(edgeRps, (r) => r.rps / r.serverCpu);
    const nRpsPer = m(ngRps, (r) => r.rps / r.serverCpu);
    rows.push({ bench: 'https', metric: 'HTTPS requests per server CPU-second vs nginx', value: eRpsPer, unit: '/cpu-s', reference: nRpsPer, ratio: eRpsPer / nRpsPer });
    rows.push({ bench: 'https', metric: 'server CPU during HTTPS load (cores)', value: m(edgeRps, (r) => r.serverCpu), unit: '', reference: m(ngRps, (r) => r.serverCpu) });
    // HTTP/2 over TLS (issue 36 point 3): the edge's node:http2 server against nginx's, both to the app over HTTP/1.1 keep-alive.
    const eH2 = m(edgeH2, (r) => r.rps);
    const nH2 = m(ngH2, (r) => r.rps);
    const eH2P99 = m(edgeH2, (r) => r.p99);
    const nH2P99 = m(ngH2, (r) => r.p99);
    rows.push({ bench: 'https', metric: `HTTP/2 req/s, ${RPS_CONNECTIONS} streams over ${H2_CONNECTIONS} connections (median of ${ROUNDS}; p99 ${eH2P99.toFixed(1)} vs ${nH2P99.toFixed(1)} ms) vs nginx`, value: eH2, unit: 'req/s', reference: nH2, ratio: eH2 / nH2, target: '>= 0.8 x nginx', ok: eH2 / nH2 >= 0.8 && errs(edgeH2) === 0 });
    rows.push({ bench: 'https', metric: 'HTTP/2 p99 vs nginx', value: eH2P99, unit: 'ms', reference: nH2P99, ratio: eH2P99 / nH2P99 });
    const eH2Per = m(edgeH2, (r) => r.rps / r.serverCpu);
    const nH2Per = m(ngH2, (r) => r.rps / r.serverCpu);
    rows.push({ bench: 'https', metric: 'HTTP/2 requests per server CPU-second vs nginx', value: eH2Per, unit: '/cpu-s', reference: nH2Per, ratio: eH2Per / nH2Per });
    // The bench's own client (one thread) near a whole core says the nginx rounds were client-bound.
    rows.push({ bench: 'https', metric: 'bench client CPU during HTTP/2 load (cores)', value: m(edgeH2, (r) => r.clientCpu), unit: '', reference: m(ngH2, (r) => r.clientCpu) });
    if (edgeC.length) {
      console.error(`  HTTP/2 from h2load / nginx by round: ${byRound(edgeC, ngC)}`);
      const eC = m(edgeC, (r) => r.rps);
      const nC = m(ngC, (r) => r.rps);
      rows.push({ bench: 'https', metric: `HTTP/2 req/s from h2load (a C client, not the bound; same streams; median of ${ROUNDS}) vs nginx`, value: eC, unit: 'req/s', reference: nC, ratio: eC / nC });
      const eCPer = m(edgeC, (r) => r.rps / r.serverCpu);
      const nCPer = m(ngC, (r) => r.rps / r.serverCpu);
      rows.push({ bench: 'https', metric: 'HTTP/2 from h2load: requests per server CPU-second vs nginx', value: eCPer, unit: '/cpu-s', reference: nCPer, ratio: eCPer / nCPer });
    }
    if (edgeC1.length) {
      console.error(`  HTTPS/1.1 from h2load --h1 / nginx by round: ${byRound(edgeC1, ngC1)}`);
      const e1 = m(edgeC1, (r) => r.rps);
      const n1 = m(ngC1, (r) => r.rps);
      rows.push({ bench: 'https', metric: `HTTPS/1.1 req/s from h2load --h1 (a C client; ${RPS_CONNECTIONS} connections; median of ${ROUNDS}) vs nginx`, value: e1, unit: 'req/s', reference: n1, ratio: e1 / n1 });
      const e1Per = m(edgeC1, (r) => r.rps / r.serverCpu);
      const n1Per = m(ngC1, (r) => r.rps / r.serverCpu);
      rows.push({ bench: 'https', metric: 'HTTPS/1.1 from h2load --h1: requests per server CPU-second vs nginx', value: e1Per, unit: '/cpu-s', reference: n1Per, ratio: e1Per / n1Per });
    }
    const errors = errs(edgeHs) + errs(ngHs) + errs(edgeRps) + errs(ngRps) + errs(edgeH2) + errs(ngH2) + errs(edgeC) + errs(ngC) + errs(edgeC1) + errs(ngC1);
    if (errors) rows.push({ bench: 'https', metric: `errors (edge hs ${errs(edgeHs)}, nginx hs ${errs(ngHs)}, edge req ${errs(edgeRps)}, nginx req ${errs(ngRps)}, edge h2 ${errs(edgeH2)}, nginx h2 ${errs(ngH2)}, h2load ${errs(edgeC)} and ${errs(ngC)}, h2load --h1 ${errs(edgeC1)} and ${errs(ngC1)})`, value: errors, unit: '', ok: false });
  } finally {
    await nginx?.stop();
    await berth.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}
