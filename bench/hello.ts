/**
 * What the benches that deploy share: the hello app they deploy, its upload archive, the API calls,
 * a free port, and Debian's nginx as a reference (installed with apt-get when missing).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { request } from 'undici';

export const HELLO = `const http = require('node:http');
http.createServer((req, res) => { res.setHeader('content-type', 'text/plain'); res.end('hello world'); })
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`;

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
