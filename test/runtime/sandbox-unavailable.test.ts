import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import { writeTinyApp } from './app-fixture.js';
import { deployUpload } from '../security/sandbox-probe.js';

test('without bubblewrap the server starts and a deployment fails at once with an error that names the fix', async () => {
  // The driver is made on first use and looks for bwrap then.
  process.env.BERTH_BWRAP_BIN = '/nonexistent/bwrap';
  const root = tempDir('berth-nobwrap-');
  const server = await startTestServer({ background: true });
  try {
    const owner = await createUser(server);
    const t0 = Date.now();
    const d = await deployUpload(server, owner.token, writeTinyApp(path.join(root, 'app')), 'no-sandbox');
    assert.equal(d.deployment.status, 'failed');
    assert.match(d.deployment.error, /the sandbox runtime cannot run builds: bubblewrap is not installed: install it \(Debian\/Ubuntu: apt-get install bubblewrap\)/);
    assert.ok(Date.now() - t0 < 10000, 'it fails at once, not after a timeout');
  } finally {
    delete process.env.BERTH_BWRAP_BIN;
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
});
