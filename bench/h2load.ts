import { spawn, spawnSync } from 'node:child_process';

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
export function h2loadArgs(port: number, host: string, ms: number, connections: number, streams: number, mode: H2loadMode = 'h2'): string[] {
  const shape = ['-D', String(ms / 1000), '-c', String(connections), '-m', String(mode === 'h2' ? streams : 1), '-t', '1', `--connect-to=127.0.0.1:${port}`];
  if (mode === 'h2') return [...shape, `https://${host}/`];
  return ['--h1', ...shape, `${mode === 'h1' ? 'http' : 'https'}://${host}/`];
}

/** One round (`h2loadArgs`); `serverCpuSeconds` reads the server's CPU time. */
export async function h2loadRound(port: number, host: string, ms: number, serverCpuSeconds: () => number, connections = 4, streams = 8, mode: H2loadMode = 'h2'): Promise<H2loadResult> {
  const args = h2loadArgs(port, host, ms, connections, streams, mode);
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
  return { ...parseH2load(out), serverCpu };
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
