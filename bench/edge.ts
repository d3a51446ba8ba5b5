import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { load, startChild, type LoadResult, type Row } from './lib.js';

/**
 * Issue "Build and run" point 8, one run:
 * - the edge proxy's requests/s and p99 against nginx `proxy_pass` (Debian's nginx, installed with
 *   apt-get when missing; one worker, upstream keep-alive) to the same upstream app, 32 connections.
 *   Target: edge req/s >= 0.5 x nginx.
 * - wake from sleep of a hello-world app: p50 < 1 s.
 * - upload-to-ready of a hello-world app without dependencies (session, upload, deploy, ready): < 5 s.
 */

const HELLO = `const http = require('node:http');
http.createServer((req, res) => { res.setHeader('content-type', 'text/plain'); res.end('hello world'); })
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`;

function tgzOf(dir: string): Buffer {
  const file = path.join(dir, '..', 'app.tgz');
  execFileSync('tar', ['-czf', file, '-C', dir, '.']);
  return readFileSync(file);
}

async function api(base: string, token: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await request(base + url, {
    method: method as 'GET',
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${text}`);
  return JSON.parse(text).data;
}

async function edgeGet(edgeUrl: string, host: string): Promise<number> {
  const res = await request(edgeUrl + '/', { headers: { host } });
  await res.body.dump();
  return res.statusCode;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

function findNginx(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) if (existsSync(p)) return p;
  return null;
}

/** Debian's nginx, installed with apt-get when it is missing (argument arrays, no shell). */
function ensureNginx(): string | null {
  let bin = findNginx();
  if (bin) return bin;
  console.error('installing nginx with apt-get ...');
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx-light'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  bin = findNginx();
  if (!bin) spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return findNginx();
}

async function startNginx(bin: string, upstreamPort: number): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-nginx-'));
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  const conf = `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream app { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`;
  writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const proc = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 10000;
  for (;;) {
    try {
      await edgeGet(url, 'bench.localhost');
      break;
    } catch {
      if (Date.now() > end) throw new Error('nginx did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        proc.kill('SIGQUIT');
        setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
      }),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

export async function edgeBench(): Promise<Row[]> {
  const rows: Row[] = [];
  const berth = await startChild('bench/servers/berth.mjs', { BERTH_SLEEP_IDLE_SECONDS: '1', BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '' });
  const { url, token } = berth.info as { url: string; token: string };
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-edge-bench-'));
  try {
    const appDir = path.join(tmp, 'app');
    mkdirSync(appDir);
    writeFileSync(path.join(appDir, 'server.js'), HELLO);
    writeFileSync(path.join(appDir, 'package.json'), JSON.stringify({ name: 'hello', private: true, scripts: { start: 'node server.js' } }));
    const archive = tgzOf(appDir);

    // ---- upload-to-ready (three runs, median)
    const project = await api(url, token, 'POST', '/api/projects', { name: 'bench-hello' });
    const host = `${project.slug}.localhost`;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const s = await api(url, token, 'POST', '/api/projects/folder/session', { projectId: project.id, sizeBytes: archive.length });
      const up = await request(s.url, { method: 'POST', headers: { ...s.headers, 'content-type': 'application/gzip' }, body: archive });
      await up.body.dump();
      if (up.statusCode >= 300) throw new Error(`upload failed: ${up.statusCode}`);
      const d = await api(url, token, 'POST', '/api/deployments', { projectId: project.id, sessionId: s.sessionId });
      for (;;) {
        const cur = await api(url, token, 'GET', `/api/deployments/${d.id}`);
        if (cur.status === 'ready') break;
        if (['failed', 'cancelled', 'superseded'].includes(cur.status)) throw new Error(`deployment ${cur.status}: ${cur.error}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      times.push(performance.now() - t0);
    }
    const u2r = median(times);
    rows.push({ bench: 'edge', metric: 'upload-to-ready (hello world)', value: u2r, unit: 'ms', target: '< 5000 ms', ok: u2r < 5000 });

    // ---- edge vs nginx to the same upstream
    const info = await api(url, token, 'GET', `/api/projects/${project.id}/info`);
    const edgePort = Number(new URL(info.runtime.url).port);
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    const appPort = info.runtime.port as number;
    // Edge and nginx are measured in alternating rounds and the median of each is kept, so that
    // drift in the machine's load hits both alike.
    const nginxBin = ensureNginx();
    const nginx = nginxBin ? await startNginx(nginxBin, appPort) : null;
    const edgeRuns: LoadResult[] = [];
    const ngRuns: LoadResult[] = [];
    for (let round = 0; round < 3; round++) {
      edgeRuns.push(await load({ url: edgeUrl, path: '/', headers: { host }, connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 }));
      if (nginx) ngRuns.push(await load({ url: nginx.url, path: '/', headers: { host }, connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 }));
    }
    await nginx?.stop();
    const edgeRps = median(edgeRuns.map((r) => r.rps));
    const edgeP99 = median(edgeRuns.map((r) => r.p99));
    const edgeErrors = edgeRuns.reduce((a, r) => a + r.errors, 0);
    if (nginx) {
      const ngRps = median(ngRuns.map((r) => r.rps));
      const ratio = edgeRps / ngRps;
      rows.push({ bench: 'edge', metric: 'edge proxy req/s (median of 3)', value: edgeRps, unit: 'req/s', reference: ngRps, ratio, target: '>= 0.5 x nginx', ok: ratio >= 0.5 && edgeErrors === 0 });
      rows.push({ bench: 'edge', metric: 'edge proxy p99 (median of 3)', value: edgeP99, unit: 'ms', reference: median(ngRuns.map((r) => r.p99)), ratio: edgeP99 / median(ngRuns.map((r) => r.p99)) });
    } else {
      rows.push({ bench: 'edge', metric: 'edge proxy req/s (nginx unavailable)', value: edgeRps, unit: 'req/s', ok: false });
      rows.push({ bench: 'edge', metric: 'edge proxy p99', value: edgeP99, unit: 'ms' });
    }

    // ---- wake from sleep
    await api(url, token, 'POST', `/api/projects/${project.id}/sleep-mode`, { sleepMode: 'auto_sleep' });
    const wakes: number[] = [];
    for (let i = 0; i < 7; i++) {
      const end = Date.now() + 15000;
      while ((await api(url, token, 'GET', `/api/projects/${project.id}/info`)).runtime.state !== 'sleeping') {
        if (Date.now() > end) throw new Error('the app did not go to sleep');
        await new Promise((r) => setTimeout(r, 100));
      }
      const t0 = performance.now();
      const status = await edgeGet(edgeUrl, host);
      if (status !== 200) throw new Error(`wake answered ${status}`);
      wakes.push(performance.now() - t0);
    }
    const wakeP50 = median(wakes);
    rows.push({ bench: 'edge', metric: 'wake from sleep p50', value: wakeP50, unit: 'ms', target: '< 1000 ms', ok: wakeP50 < 1000 });
  } finally {
    await berth.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}
