import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';
import { startServe } from '../support/cli.js';

test('BERTH_RUNTIME=process is explicit, loud at start, and reported as no isolation', async () => {
  const dir = tempDir('berth-proc-');
  const pgDb = usingPostgres() ? await freshPostgresDatabase() : null;
  const env: Record<string, string> = { BERTH_DATA_DIR: path.join(dir, 'data'), BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_EDGE_PORT: '0', ...(pgDb ? { DATABASE_URL: pgDb.url } : {}) };
  const serve = await startServe(['--port', '0', '--runtime', 'process'], env);
  try {
    const h = (await (await fetch(`${serve.url}/api/health`)).json()) as any;
    // runtime.egress comes from the server's own check under the process runtime (once it answered).
    assert.deepEqual({ ...h.data.runtime, egress: undefined }, { driver: 'process', ready: true, egress: undefined });
    await new Promise((r) => setTimeout(r, 300));
    assert.match(serve.output(), /WITHOUT isolation/);
  } finally {
    await serve.stop();
    await pgDb?.drop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});
