// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * A deployment as users make them (contract section 18, issue 32): an app with a real dependency from
 * the npm registry (the one host outside this machine a test may reach), whose package-lock.json does
 * not list what package.json asks for. Deployed through the API: `npm ci` refuses the lockfile and
 * `npm install` runs instead, saying so; a silent build step and a silent app start get their
 * still-running lines in the build log the API answers; the app serves what its dependency computes.
 *
 * Once on the driver without isolation (the logic), once in the sandbox (its build must reach the
 * registry: on a host running Docker that needs the egress rules of docs/runtime.md).
 */
process.env.BERTH_SILENT_STEP_SECONDS = '1';
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

/** An app using is-number@7 from the registry; its lockfile's root entry declares it, but the lock has no entry for the package itself. */
function writeApp(dir: string): void {
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'lock-mismatch', version: '1.0.0', private: true, scripts: { build: 'node build.js', start: 'node server.js' }, dependencies: { 'is-number': '7.0.0' } }, null, 2),
    'package-lock.json': JSON.stringify(
      { name: 'lock-mismatch', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'lock-mismatch', version: '1.0.0', dependencies: { 'is-number': '7.0.0' } } } },
      null,
      2,
    ),
    // Silent for 2.5 s, then done.
    'build.js': "setTimeout(() => require('node:fs').writeFileSync('built.txt', 'built'), 2500);\n",
    // Silent for 2.5 s before it listens.
    'server.js': [
      "const isNumber = require('is-number');",
      "const built = require('node:fs').readFileSync('built.txt', 'utf8');",
      "const server = require('node:http').createServer((req, res) => res.end(`is-number says ${isNumber('42')} and ${isNumber('forty-two')}; ${built}`));",
      'setTimeout(() => server.listen(Number(process.env.PORT)), 2500);',
      '',
    ].join('\n'),
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
}

for (const runtime of ['process', 'sandbox'] as const) {
  describe(`a real dependency, a lockfile that does not match, silent steps (${runtime} runtime)`, () => {
    let root: string;
    let server: TestServer;
    let api: HttpClient;
    let pg: { url: string; drop(): Promise<void> } | undefined;

    before(async () => {
      root = tempDir('berth-realdeps-');
      mkdirSync(path.join(root, 'local'), { recursive: true });
      if (usingPostgres()) pg = await freshPostgresDatabase();
      server = await startTestServer({ background: true, dataDir: path.join(root, 'data'), databaseUrl: pg?.url, flags: { runtime }, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
      await getRuntime(server.ctx).restored;
      api = server.api((await createUser(server)).token);
    });
    after(async () => {
      await server?.close();
      await pg?.drop();
      if (root) rmSync(root, { recursive: true, force: true });
    });

    test('npm ci refuses the lockfile, npm install runs instead (said in the log), silent steps get their still-running lines, and the app serves its dependency', async () => {
      const dir = path.join(root, 'local', 'lock-mismatch');
      writeApp(dir);
      const imported = await api.post('/api/projects/import', { path: dir, name: 'lock-mismatch' });
      assert.equal(imported.status, 201, imported.text);
      const project = imported.body.data;
      // The scan's plan, copied into the new project's config: the lockfile's root entry matches package.json.
      assert.equal(project.config.installCommand, 'npm ci');
      const started = await api.post('/api/deployments', { projectId: project.id });
      assert.equal(started.status, 202, started.text);
      const d = await waitForDeployment(api, started.body.data.id, 300_000);
      const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
      const log = lines.join('\n');
      assert.equal(d.status, 'ready', `${d.error}\n${log}`);
      assert.ok(lines.includes('[berth] install: npm ci'), log);
      assert.ok(lines.includes('[berth] npm ci refused the lockfile (it does not match package.json); running npm install instead'), log);
      assert.match(log, /^\[berth\] still running: build: npm run build \(\d+ s without output\)$/m);
      assert.match(log, /^\[berth\] still running: start: npm run start \(\d+ s without output\)$/m);
      const res = await edgeRequest(getRuntime(server.ctx).edgePort(), `${project.slug}.localhost`, '/');
      assert.equal(res.text, 'is-number says true and false; built');
    });
  });
}
