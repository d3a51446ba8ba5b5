import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuMs, percentile, type Row } from './lib.js';
import { pinnedRounds } from './pin.js';

/**
 * Load from h2load (nghttp2's load generator, written in C; Debian's `nghttp2-client`), for a view of
 * the edge that the bench's own client (undici, one Node thread, on the same two cores) does not bound:
 * over HTTP/2 that client needs more CPU per request than either server, so nginx's rounds measure the
 * client (docs/benchmarks.md, "2026-12-01 21:35"); over HTTP/1.1 the two clients agree ("2026-12-02
 * 00:50-01:50").
 */
export function h2loadFound(): boolean {
  return spawnSync('h2load', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** h2load, installed with apt-get when it is missing (as the benches do for nginx); false if it still is not there. */
export function ensureH2load(): boolean {
  if (h2loadFound()) return true;
  console.error('installing nghttp2-client (h2load) with apt-get ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nghttp2-client'], { stdio: 'ignore', env });
  return h2loadFound();
}

export interface H2loadResult {
  rps: number;
  /** Requests that failed, errored or answered other than 2xx. */
  errors: number;
  /** The server's CPU over the round (cores). */
  serverCpu: number;
  /** The 99th percentile of the round's request times (ms), from h2load's per-request log. */
  p99: number;
}

/** HTTP/2 over TLS, plain HTTP/1.1, or HTTP/1.1 over TLS. */
export type H2loadMode = 'h2' | 'h1' | 'h1-tls';

/**
 * h2load's arguments for one round of `ms`: `connections` HTTP/2 connections with `streams` requests in
 * flight each, GET `https://host/` sent to 127.0.0.1:`port` (SNI and `:authority` from `host`; h2load
 * does not verify the certificate). In the HTTP/1.1 modes (`--h1`: `http://host/`, or `https://host/`
 * with `h1-tls`) one request is in flight per connection whatever `streams` says (no pipelining, as the
 * benches' own client).
 */
export function h2loadArgs(port: number, host: string, ms: number, connections: number, streams: number, mode: H2loadMode = 'h2', request: Request = {}): string[] {
  const headers = Object.entries(request.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const shape = ['-D', String(ms / 1000), '-c', String(connections), '-m', String(mode === 'h2' ? streams : 1), '-t', '1', ...headers, `--connect-to=127.0.0.1:${port}`];
  const url = `${mode === 'h1' ? 'http' : 'https'}://${host}${request.path ?? '/'}`;
  return mode === 'h2' ? [...shape, url] : ['--h1', ...shape, url];
}

/** What each request asks for, when not `GET /` without headers of its own. */
export interface Request {
  path?: string;
  headers?: Record<string, string>;
}

/** One round (`h2loadArgs`); `serverCpuSeconds` reads the server's CPU time. */
export async function h2loadRound(port: number, host: string, ms: number, serverCpuSeconds: () => number, connections = 4, streams = 8, mode: H2loadMode = 'h2', request: Request = {}): Promise<H2loadResult> {
  // h2load's per-request log (start, status, microseconds), for the round's p99.
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'berth-h2load-'));
  const logFile = path.join(logDir, 'requests.log');
  const args = ['--log-file', logFile, ...h2loadArgs(port, host, ms, connections, streams, mode, request)];
  try {
    const cpu0 = serverCpuSeconds();
    const t0 = Date.now();
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn('h2load', args, { stdio: ['ignore', 'pipe', 'ignore'] });
      let text = '';
      p.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
      p.once('error', reject);
      p.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`h2load exited with ${code}: ${text.slice(-300)}`))));
    });
    const serverCpu = (serverCpuSeconds() - cpu0) / ((Date.now() - t0) / 1000);
    return { ...parseH2load(out), serverCpu, p99: percentile(requestTimes(readFileSync(logFile, 'utf8')), 99) };
  } finally {
    rmSync(logDir, { recursive: true, force: true });
  }
}

/** The request times (ms, sorted) in h2load's `--log-file`: a line per request, start (µs since the epoch), status, duration (µs), tab-separated. */
export function requestTimes(log: string): number[] {
  const out: number[] = [];
  for (const line of log.split('\n')) {
    const us = Number(line.split('\t')[2]);
    if (line && Number.isFinite(us)) out.push(us / 1000);
  }
  return out.sort((a, b) => a - b);
}

/** The request rate and the failures in h2load's summary. */
export function parseH2load(out: string): { rps: number; errors: number } {
  const rate = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
  const reqs = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (!rate || !reqs || !codes) throw new Error(`h2load printed no summary: ${out.slice(-300)}`);
  const done = Number(reqs[1]);
  return { rps: Number(rate[1]), errors: Number(reqs[3]) + Number(reqs[4]) + (done - Number(codes[1])) };
}

/** A server a plain HTTP/1.1 load goes to: its port, the host and request it is asked for, its processes (for CPU). */
export interface H1Side extends Request {
  port: number;
  host: string;
  pids: number[];
}

/** Medians of a side's rounds: req/s, requests per server CPU-second, p99 (ms). */
export interface H1Figures {
  rps: number;
  perCpu: number;
  p99: number;
}

/**
 * `rounds` alternating rounds of `ms` of plain HTTP/1.1 from h2load `--h1` (32 connections with one
 * request each, as the benches' own client), the reference first in each: both sides' medians, the
 * per-round ratios of the target to the reference, and the requests that failed or answered other
 * than 2xx. The processes of `pin` (by default both sides') run on one CPU and h2load on the others
 * while the rounds run (bench/pin.ts), so that both sides of a round get the same vCPU.
 */
export async function h1Rounds(reference: H1Side, target: H1Side, rounds = 3, ms = 3000, pin = [...reference.pids, ...target.pids]): Promise<{ reference: H1Figures; target: H1Figures; byRound: string; errors: number }> {
  const cpuSeconds = (pids: number[]) => () => pids.reduce((a, pid) => a + cpuMs(pid), 0) / 1000;
  const round = (side: H1Side) => h2loadRound(side.port, side.host, ms, cpuSeconds(side.pids), 32, 1, 'h1', side);
  const ref: H2loadResult[] = [];
  const tgt: H2loadResult[] = [];
  await pinnedRounds(pin, async () => {
    for (let r = 0; r < rounds; r++) {
      ref.push(await round(reference));
      tgt.push(await round(target));
    }
  });
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const of = (rs: H2loadResult[]) => ({ rps: median(rs.map((r) => r.rps)), perCpu: median(rs.map((r) => r.rps / r.serverCpu)), p99: median(rs.map((r) => r.p99)) });
  return { reference: of(ref), target: of(tgt), byRound: tgt.map((r, i) => (r.rps / ref[i]!.rps).toFixed(2)).join(', '), errors: [...ref, ...tgt].reduce((a, r) => a + r.errors, 0) };
}

/**
 * An API read from h2load `--h1` against bare Fastify's hello-world, for the `foundation` and `projects`
 * benches: three rows without a target (req/s, requests per server CPU-second, and p99: the server's own
 * latency with 32 requests in flight, from a client that is not the bound and does not share its CPU),
 * and a failing row when any request failed. `what` names the read (`GET /api/auth/me`).
 */
export async function apiRowsFromC(bench: string, what: string, bare: H1Side, berth: H1Side): Promise<Row[]> {
  const c = await h1Rounds(bare, berth);
  console.error(`  ${what} / bare Fastify from h2load --h1 by round: ${c.byRound}`);
  const rows: Row[] = [
    { bench, metric: `${what} req/s from h2load --h1 (a C client on its own CPU, both servers on another; 32 connections; median of 3) vs bare Fastify`, value: c.target.rps, unit: 'req/s', reference: c.reference.rps, ratio: c.target.rps / c.reference.rps },
    { bench, metric: `${what} from h2load --h1: requests per server CPU-second vs bare Fastify`, value: c.target.perCpu, unit: '/cpu-s', reference: c.reference.perCpu, ratio: c.target.perCpu / c.reference.perCpu },
    { bench, metric: `${what} p99 from h2load --h1 (median of 3) vs bare Fastify's`, value: c.target.p99, unit: 'ms', reference: c.reference.p99, ratio: c.target.p99 / c.reference.p99 },
  ];
  if (c.errors) rows.push({ bench, metric: `${what} and bare Fastify from h2load --h1: failed requests`, value: c.errors, unit: '', ok: false });
  return rows;
}
