/**
 * berth.json (contract section 18) end to end: a folder's berth.json overrides the detected plan
 * when the build plans it, a field it cannot use is named in the build log, the project's own
 * commands still win over it, and its rootDirectory picks the app folder of the source. The apps
 * have no dependencies, so nothing here needs a registry.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '30';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import type { HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { waitForDeployment } from '../support/wait.js';

let root: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let server: TestServer;
let api: HttpClient;

/** A server answering `text` on $PORT. */
const serving = (text: string) => `require('http').createServer((_q, s) => s.end(${JSON.stringify(text)})).listen(Number(process.env.PORT), '0.0.0.0');\n`;

function write(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

function edge(host: string): Promise<string> {
  const port = getRuntime(server.ctx).edgePort();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/', headers: { host }, timeout: 20000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('edge request timed out')));
    req.end();
  });
}

async function deploy(projectId: string): Promise<{ deployment: any; log: string }> {
  const res = await api.post('/api/deployments', { projectId });
  assert.equal(res.status, 202, res.text);
  const deployment = await waitForDeployment(api, res.body.data.id, 120_000);
  const logs = await api.get(`/api/deployments/${deployment.id}/logs`);
  return { deployment, log: (logs.body.data ?? []).map((l: any) => l.line).join('\n') };
}

/** Imports a folder, then clears the commands the import copied from the scan, so the build plans it. */
async function importUnconfigured(name: string): Promise<{ project: any; scan: any }> {
  const dir = path.join(root, 'local', name);
  const scan = await api.post('/api/projects/scan', { path: dir });
  assert.equal(scan.status, 200, scan.text);
  const imported = await api.post('/api/projects/import', { path: dir, name });
  assert.equal(imported.status, 201, imported.text);
  const cleared = await api.patch(`/api/projects/${imported.body.data.id}`, { installCommand: null, buildCommand: null, startCommand: null, rootDirectory: null });
  assert.equal(cleared.status, 200, cleared.text);
  return { project: cleared.body.data, scan: scan.body.data };
}

before(async () => {
  root = tempDir('berth-berth-json-');
  mkdirSync(path.join(root, 'local'), { recursive: true });
  if (usingPostgres()) pg = await freshPostgresDatabase();
  server = await startTestServer({
    background: true,
    dataDir: path.join(root, 'data'),
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_EDGE_PORT: '0' },
  });
  await getRuntime(server.ctx).restored;
  api = server.api((await createUser(server)).token);
});

after(async () => {
  await server?.close();
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

test("a berth.json start command overrides the detected one, a field it cannot use is named in the build log, and the project's own start command wins over it", async () => {
  write(path.join(root, 'local', 'overridden'), {
    'package.json': JSON.stringify({ name: 'overridden', private: true, scripts: { start: 'node detected.js' } }),
    'detected.js': serving('the detected start'),
    'from-berth.js': serving('started by berth.json'),
    'own.js': serving("the project's own start"),
    'berth.json': JSON.stringify({ startCommand: 'node from-berth.js', buildCommand: 7 }),
  });
  const { project, scan } = await importUnconfigured('overridden');
  assert.equal(scan.startCommand, 'node from-berth.js', 'the scan applies berth.json too');
  assert.deepEqual(scan.plan.notes, ['berth.json: buildCommand must be a string; the field is ignored']);

  const first = await deploy(project.id);
  assert.equal(first.deployment.status, 'ready', `${first.deployment.error}\n${first.log}`);
  assert.match(first.log, /\[berth\] berth\.json: buildCommand must be a string; the field is ignored/);
  assert.equal(await edge(`${project.slug}.localhost`), 'started by berth.json');

  const own = await api.patch(`/api/projects/${project.id}`, { startCommand: 'node own.js' });
  assert.equal(own.status, 200, own.text);
  const second = await deploy(project.id);
  assert.equal(second.deployment.status, 'ready', `${second.deployment.error}\n${second.log}`);
  assert.equal(await edge(`${project.slug}.localhost`), "the project's own start");
});

test("a berth.json rootDirectory at the source root picks the app folder the build runs in, unless the project sets one", async () => {
  write(path.join(root, 'local', 'rooted'), {
    'berth.json': JSON.stringify({ rootDirectory: 'services/api' }),
    'index.html': '<h1>not the app</h1>',
    'services/api/package.json': JSON.stringify({ name: 'api', private: true, scripts: { start: 'node server.js' } }),
    'services/api/server.js': serving('the api folder'),
  });
  const { project, scan } = await importUnconfigured('rooted');
  assert.equal(scan.rootDirectory, 'services/api');
  const done = await deploy(project.id);
  assert.equal(done.deployment.status, 'ready', `${done.deployment.error}\n${done.log}`);
  assert.equal(await edge(`${project.slug}.localhost`), 'the api folder');

  write(path.join(root, 'local', 'rooted'), { 'berth.json': JSON.stringify({ rootDirectory: 'services/gone' }) });
  const missing = await deploy(project.id);
  assert.equal(missing.deployment.status, 'failed');
  assert.match(missing.deployment.error, /the root directory services\/gone \(berth\.json\) does not exist in the source/);
});
