// Isolation (issue 14): after `kill -9` of the server, no app process is left behind, and the next
// start runs exactly one copy of each app (it kills or adopts what its runtime state records).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { freshPostgresDatabase, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { HttpClient } from '../support/http.js';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor } from '../support/wait.js';
import { deployUpload } from './sandbox-probe.js';

const ready = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;

/** Host pids of the project's app processes (node, with the project's id in its environment). */
function appCopies(projectId: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/comm`, 'utf8').trim() === 'node' && readFileSync(`/proc/${n}/environ`, 'utf8').split('\0').includes(`BERTH_PROJECT_ID=${projectId}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function edgeGet(serve: ServeProcess, host: string): Promise<{ status: number; text: string } | null> {
  const m = /edge listening on (http:\/\/\S+)/.exec(serve.output());
  if (!m) return null;
  const u = new URL(m[1]!);
  return new Promise((resolve) => {
    http
      .get({ host: u.hostname, port: Number(u.port), path: '/', headers: { host }, timeout: 10000 }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      })
      .on('error', () => resolve(null));
  });
}

test('kill -9 of the server leaves no app behind, and a restart runs exactly one copy of each app', { skip: !ready && 'needs root and bubblewrap' }, async () => {
  const dir = tempDir('berth-crash-');
  const pgDb = usingPostgres() ? await freshPostgresDatabase() : null;
  const env: Record<string, string> = {
    BERTH_DATA_DIR: path.join(dir, 'data'),
    BERTH_SECRET_KEY: randomBytes(32).toString('base64'),
    BERTH_EDGE_PORT: '0',
    BERTH_LOG_LEVEL: 'warn',
    ...(pgDb ? { DATABASE_URL: pgDb.url } : {}),
  };
  let serve: ServeProcess | null = await startServe(['--port', '0'], env);
  try {
    const made = await runCli(['admin', 'create-user', '--email', 'crash@example.test', '--password', 'a long password'], { env });
    assert.equal(made.code, 0, made.stderr);
    const { token } = JSON.parse(made.stdout);
    const url = serve.url;
    const server = { api: (t?: string) => new HttpClient(url, t), url } as unknown as TestServer;
    const apps: Array<{ projectId: string; slug: string }> = [];
    for (const name of ['crash-one', 'crash-two']) {
      const d = await deployUpload(server, token, writeTinyApp(path.join(dir, name), { version: name }), name);
      assert.equal(d.deployment.status, 'ready', d.deployment.error);
      apps.push(d);
    }
    for (const a of apps) assert.equal(appCopies(a.projectId).length, 1, 'one copy runs');

    serve.child.kill('SIGKILL');
    await serve.stop();
    // Nothing outlives the server: each sandbox dies with the process that started it.
    await waitFor(async () => apps.every((a) => appCopies(a.projectId).length === 0), 'the apps to die with the server', 10000, 100);

    serve = await startServe(['--port', '0'], env);
    for (const a of apps) {
      await waitFor(async () => {
        const r = await edgeGet(serve!, `${a.slug}.localhost`);
        return r?.status === 200 && r.text.startsWith('hello crash-') ? r : null;
      }, `${a.slug} to come back`, 30000, 200);
    }
    await new Promise((r) => setTimeout(r, 1500));
    for (const a of apps) assert.equal(appCopies(a.projectId).length, 1, `exactly one copy of ${a.slug} after the restart`);
  } finally {
    await serve?.stop();
    await pgDb?.drop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});
