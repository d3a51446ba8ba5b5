// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
// Issue 33 (points 1 and 7), contract section 18: the server never blocks on, follows or trusts a
// tenant's file. Each release's build step (a real sandbox build) leaves its package.json as a FIFO,
// a link to a device, a link out of the release, a 2 MiB file, or below a folder that is a link; the
// release start then reads it on the host. Throughout, GET /api/health answers within 1 s, and every
// deployment ends (ready, or failed with a message), its build log naming the file it ignored. (Before
// the fix, the FIFO's release start blocked the server's main thread: every request after it timed out.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { HttpClient } from '../support/http.js';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { deployUpload } from './sandbox-probe.js';

const ready = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;

/** A 2 MiB package.json that is valid JSON and names the tiny app's start script. */
const HUGE = `node -e "require('fs').writeFileSync('package.json', JSON.stringify({ name: 'tiny-app', scripts: { start: 'node server.js' }, pad: 'x'.repeat(2 * 1024 * 1024) }))"`;

/** The build steps (a shell script in the fixture, run inside the sandbox) and what the release start must say of them. */
const CASES = [
  { name: 'fifo', script: 'rm package.json\nmkfifo package.json\n', ignored: 'ignored package.json: not a regular file' },
  { name: 'device', script: 'rm package.json\nln -s /dev/zero package.json\n', ignored: 'ignored package.json: a link' },
  { name: 'outside', script: 'rm package.json\nln -s /etc/passwd package.json\nln -s /etc/passwd Procfile\n', ignored: 'ignored package.json: a link' },
  { name: 'huge', script: `${HUGE}\n`, ignored: 'ignored package.json: too large' },
  // The app folder itself becomes a link (to a copy of itself) once the build ran in it.
  { name: 'parent-link', rootDirectory: 'web', script: 'cd ..\ncp -r web web-real\nrm -rf web\nln -s web-real web\n', ignored: 'ignored package.json: a link' },
] as const;

/** One GET /api/health bounded to 1 s: null when answered 200, else what went wrong. */
async function healthMiss(url: string): Promise<string | null> {
  try {
    const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200 ? null : `status ${res.status}`;
  } catch (e) {
    return `${(e as Error).name} ${(e as Error).message}`;
  }
}

/**
 * Polls GET /api/health every 100 ms until stopped, each request bounded to 1 s; counts answers and
 * misses. A request that misses is tried once more at once, and only a second miss counts: one
 * scheduling stall of a loaded machine is not a blocked server, which misses every request after.
 */
function pollHealth(url: string): { stop(): Promise<{ answered: number; missed: string[] }> } {
  let running = true;
  let answered = 0;
  const missed: string[] = [];
  const loop = (async () => {
    while (running) {
      const at = new Date().toISOString();
      const miss = (await healthMiss(url)) && (await healthMiss(url));
      if (miss) missed.push(`${at}: ${miss}`);
      else answered++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { answered, missed };
    },
  };
}

test('a release whose package.json is a FIFO, a device link, a link out, a huge file or below a linked folder never stops the API, and its deployment ends', { skip: !ready && 'needs root and bubblewrap', timeout: 15 * 60 * 1000 }, async (t) => {
  const dir = tempDir('berth-hostile-files-');
  const pgDb = usingPostgres() ? await freshPostgresDatabase() : null;
  const env: Record<string, string> = {
    BERTH_DATA_DIR: path.join(dir, 'data'),
    BERTH_SECRET_KEY: randomBytes(32).toString('base64'),
    BERTH_EDGE_PORT: '0',
    BERTH_LOG_LEVEL: 'warn',
    BERTH_HEALTH_TIMEOUT_SECONDS: '15',
    ...(pgDb ? { DATABASE_URL: pgDb.url } : {}),
  };
  let serve: ServeProcess | null = null;
  let health: ReturnType<typeof pollHealth> | null = null;
  try {
    serve = await startServe(['--port', '0'], env);
    const made = await runCli(['admin', 'create-user', '--email', 'hostile@example.test', '--password', 'a long password'], { env });
    assert.equal(made.code, 0, made.stderr);
    const { token } = JSON.parse(made.stdout);
    const server = { api: (t?: string) => new HttpClient(serve!.url, t), url: serve.url } as unknown as TestServer;
    const api = server.api(token);
    health = pollHealth(serve.url);

    for (const c of CASES) {
      const source = path.join(dir, c.name);
      const appDir = 'rootDirectory' in c ? path.join(source, c.rootDirectory) : source;
      writeTinyApp(appDir, { version: c.name });
      writeFileSync(path.join(appDir, 'hostile.sh'), `set -e\n${c.script}`);
      if ('rootDirectory' in c) mkdirSync(path.join(source, 'docs'), { recursive: true });
      const d = await deployUpload(server, token, source, `hostile-${c.name}`, async (projectId) => {
        const patched = await api.patch(`/api/projects/${projectId}`, { buildCommand: 'sh hostile.sh', startCommand: 'npm start', ...('rootDirectory' in c ? { rootDirectory: c.rootDirectory } : {}) });
        assert.equal(patched.status, 200, patched.text);
      });
      const { deployment } = d;
      t.diagnostic(`${c.name}: ${deployment.status}${deployment.error ? ` (${String(deployment.error).split('\n')[0]})` : ''}`);
      if (deployment.status === 'failed') {
        const app = await api.get(`/api/projects/${d.projectId}/logs?limit=10`);
        t.diagnostic(`${c.name}: the app said: ${JSON.stringify((app.body.data ?? []).map((l: { line: string }) => l.line))}`);
      }
      assert.ok(['ready', 'failed'].includes(deployment.status), `${c.name}: the deployment ended (${deployment.status})`);
      if (deployment.status === 'failed') assert.match(deployment.error, /the new release did not start: /, `${c.name}: a failed release says why`);
      const logs = await api.get(`/api/deployments/${deployment.id}/logs?limit=500`);
      const lines: string[] = logs.body.data.map((l: { line: string }) => l.line);
      assert.ok(lines.includes('[berth] build finished; start command: npm start'), `${c.name}: the build step ran:\n${lines.join('\n')}`);
      assert.ok(lines.includes(`[berth] ${c.ignored}`), `${c.name}: the build log names the ignored file:\n${lines.join('\n')}`);
    }

    const { answered, missed } = await health.stop();
    health = null;
    assert.deepEqual(missed, [], 'every health poll was answered within 1 s (on its first or its immediate second try)');
    assert.ok(answered > 0, 'health was polled during the deployments');
  } finally {
    await health?.stop();
    await serve?.stop();
    await pgDb?.drop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});
