/**
 * What the benches that deploy share: the hello app they deploy, its upload archive, the API calls,
 * a free port, and Debian's nginx as a reference (installed with apt-get when missing).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { request } from 'undici';
import { stopOnExit } from './lib.js';

export const HELLO = `const http = require('node:http');
http.createServer((req, res) => { res.setHeader('content-type', 'text/plain'); res.end('hello world'); })
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`;

/** Writes the hello app (server.js and a package.json whose start script runs it) into a new folder `dir`. */
export function writeHelloApp(dir: string): string {
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'server.js'), HELLO);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'hello', private: true, scripts: { start: 'node server.js' } }));
  return dir;
}

/**
 * An Express app (a real dependency from the npm registry, no lockfile: the plan installs it), the
 * shape of most users' first deploy, written into a new folder `dir`.
 */
export function writeExpressApp(dir: string): string {
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'server.js'), "const express = require('express');\nconst app = express();\napp.get('/', (req, res) => res.type('text').send('hello from express'));\napp.listen(Number(process.env.PORT));\n");
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'hello-express', private: true, scripts: { start: 'node server.js' }, dependencies: { express: '^4.21.2' } }));
  return dir;
}

/** A gzipped tarball of `dir` (written beside it as `<dir>.tgz`). */
export function tgzOf(dir: string): Buffer {
  const file = `${dir}.tgz`;
  execFileSync('tar', ['-czf', file, '-C', dir, '.']);
  return readFileSync(file);
}

/** One API call with a bearer token; the envelope's `data`, or an Error naming the route and status. */
export async function api(base: string, token: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await request(base + url, {
    method: method as 'GET',
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${text}`);
  return JSON.parse(text).data;
}

/** Uploads `archive` through the folder session API as the project's source and deploys it; answers the deployment's id. */
export async function uploadAndDeploy(base: string, token: string, projectId: string, archive: Buffer): Promise<string> {
  const s = await api(base, token, 'POST', '/api/projects/folder/session', { projectId, sizeBytes: archive.length });
  const up = await request(s.url, { method: 'POST', headers: { ...s.headers, 'content-type': 'application/gzip' }, body: archive });
  await up.body.dump();
  if (up.statusCode >= 300) throw new Error(`upload failed: ${up.statusCode}`);
  return (await api(base, token, 'POST', '/api/deployments', { projectId, sessionId: s.sessionId })).id;
}

/** Waits (polling every 20 ms, at most `timeoutMs`) until the deployment is ready; a failed one throws with the tails of its build and app logs. */
export async function waitReady(base: string, token: string, id: string, timeoutMs = 300000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const cur = await api(base, token, 'GET', `/api/deployments/${id}`);
    if (cur.status === 'ready') return;
    if (['failed', 'cancelled', 'superseded'].includes(cur.status)) {
      const lines = async (url: string) => ((await api(base, token, 'GET', url).catch(() => [])) as { line: string }[]).map((l) => l.line).slice(-20).join('\n');
      throw new Error(`deployment ${cur.status}: ${cur.error}\nbuild log:\n${await lines(`/api/deployments/${id}/logs`)}\napp log:\n${await lines(`/api/projects/${cur.projectId}/logs`)}`);
    }
    if (Date.now() > end) throw new Error(`deployment ${id} is still ${cur.status} after ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export function findNginx(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) if (existsSync(p)) return p;
  return null;
}

/** Debian's nginx, installed with apt-get when it is missing (argument arrays, no shell). */
export function ensureNginx(): string | null {
  let bin = findNginx();
  if (bin) return bin;
  console.error('installing nginx with apt-get ...');
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx-light'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  bin = findNginx();
  if (!bin) spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return findNginx();
}

export interface Nginx {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/**
 * nginx (one worker, its files in `dir`) on a free loopback port, proxying with upstream keep-alive to
 * 127.0.0.1:`upstreamPort`; terminating TLS with the given pair when `tls` is set (ALPN `h2` and
 * `http/1.1`, as the edge offers; nginx 1.22's `listen ... http2`). Resolves once
 * `ready(port)` succeeds (bounded by 10 s).
 */
export async function startNginx(bin: string, opts: { dir: string; upstreamPort: number; tls?: { certFile: string; keyFile: string }; ready(port: number): Promise<unknown> }): Promise<Nginx> {
  const { dir } = opts;
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  const listen = opts.tls
    ? `listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${opts.tls.certFile};
    ssl_certificate_key ${opts.tls.keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;`
    : `listen 127.0.0.1:${port};`;
  const conf = `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  # No cap on requests per connection (nginx's default closes each after 1000), as the edge has none:
  # over HTTP/2 the cap's GOAWAY failed requests in flight, over TLS it added handshakes.
  keepalive_requests 1000000;
  upstream app { server 127.0.0.1:${opts.upstreamPort}; keepalive 128; keepalive_requests 1000000; }
  server {
    ${listen}
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
  stopOnExit(proc, 'SIGQUIT');
  const end = Date.now() + 10000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode}`);
    try {
      await opts.ready(port);
      break;
    } catch {
      if (Date.now() > end) throw new Error('nginx did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    port,
    pid: proc.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGQUIT');
        setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
      }),
  };
}
