import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

let serve: ServeProcess;
let pg: { url: string; drop(): Promise<void> } | undefined;
const dataDir = tempDir();

before(async () => {
  const env: Record<string, string> = { BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOG_LEVEL: 'warn', DATABASE_URL: '' };
  if (usingPostgres()) {
    pg = await freshPostgresDatabase();
    env.DATABASE_URL = pg.url;
  }
  serve = await startServe(['--port', '0', '--host', '127.0.0.1', '--edge-port', '0'], env);
});

after(async () => {
  await serve?.stop();
  await pg?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('`berth serve --edge-port 0` prints "edge listening on http://HOST:PORT" and the edge answers', async () => {
  const line = await waitFor(async () => /edge listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(serve.output()), 'the edge line', 10000);
  assert.ok(Number(line[2]) > 0);
  const res = await fetch(line[1]!, { headers: { host: 'nobody.localhost' } });
  assert.equal(res.status, 404);
  assert.match(await res.text(), /No project/);
  assert.equal(await serve.stop(), 0, 'SIGTERM stops the edge and the server cleanly');
});

test('a busy edge port stops `berth serve` with a message naming it', async () => {
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  const port = (blocker.address() as net.AddressInfo).port;
  const dir = tempDir();
  try {
    const env: Record<string, string> = { BERTH_DATA_DIR: dir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOG_LEVEL: 'warn', DATABASE_URL: pg?.url ?? '' };
    const res = await runCli(['serve', '--port', '0', '--host', '127.0.0.1', '--edge-port', String(port)], { env, timeoutMs: 30000 });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, new RegExp(`edge proxy cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
  } finally {
    blocker.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
