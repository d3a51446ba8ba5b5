import http from 'node:http';
import net from 'node:net';
import type { Upstream } from './release-spec.js';

export type HealthResult = { ok: true } | { ok: false; reason: string };

/**
 * GET / on the app's address until it answers (any status) or `exited` settles, bounded by
 * `timeoutMs`.
 */
export async function waitHealthy(
  upstream: Upstream,
  exited: Promise<{ code: number | null; signal: string | null }>,
  timeoutMs: number,
): Promise<HealthResult> {
  const deadline = Date.now() + timeoutMs;
  let gone: string | null = null;
  void exited.then(({ code, signal }) => {
    gone = `it exited (${signal ?? `code ${code}`}) before answering on port ${upstream.port}`;
  });
  // Every 10 ms for the first second (a wake waits on this: with a doubling pause an app ready at
  // 150 ms was only seen at 300 ms), then backing off to 200 ms. A refused connect on the box's own
  // address costs microseconds.
  const started = Date.now();
  let delay = 10;
  while (Date.now() < deadline) {
    if (gone) return { ok: false, reason: gone };
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: upstream.host, port: upstream.port, path: '/', timeout: 2000, headers: { 'user-agent': 'berth-health' } }, (res) => {
        res.resume();
        resolve(true);
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => {
        req.destroy();
        resolve(false);
      });
    });
    if (ok) return { ok: true };
    await new Promise((r) => setTimeout(r, delay));
    if (Date.now() - started > 1000) delay = Math.min(200, delay * 2);
  }
  return { ok: false, reason: gone ?? `it did not answer on port ${upstream.port} within ${Math.round(timeoutMs / 1000)} s` };
}

/**
 * One check of a running app (health after go-live, contract section 20): `GET path` answering
 * 200-399 when the project names a health path, else a TCP connect to its port. Bounded by `timeoutMs`.
 */
export function probeApp(upstream: Pick<Upstream, 'host' | 'port'>, path: string | null, timeoutMs = 5000): Promise<HealthResult> {
  return new Promise((resolve) => {
    const fail = (reason: string) => resolve({ ok: false, reason });
    if (!path) {
      const sock = net.connect({ host: upstream.host, port: upstream.port });
      sock.setTimeout(timeoutMs, () => {
        sock.destroy();
        fail(`port ${upstream.port} did not accept a connection within ${Math.round(timeoutMs / 1000)} s`);
      });
      sock.once('connect', () => {
        sock.destroy();
        resolve({ ok: true });
      });
      sock.once('error', (e: NodeJS.ErrnoException) => fail(`port ${upstream.port} refused the connection (${e.code ?? e.message})`));
      return;
    }
    const req = http.get({ host: upstream.host, port: upstream.port, path, timeout: timeoutMs, headers: { 'user-agent': 'berth-health' } }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 400) resolve({ ok: true });
      else fail(`GET ${path} answered ${status}`);
    });
    req.on('error', (e: NodeJS.ErrnoException) => fail(`GET ${path} failed (${e.code ?? e.message})`));
    req.on('timeout', () => {
      req.destroy();
      fail(`GET ${path} did not answer within ${Math.round(timeoutMs / 1000)} s`);
    });
  });
}
