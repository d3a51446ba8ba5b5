import http from 'node:http';
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
