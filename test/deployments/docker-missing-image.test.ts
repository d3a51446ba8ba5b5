/**
 * The docker runtime offline (issue 32 point 5): every plan whose base image is missing and cannot be
 * pulled fails at once with the same message naming BERTH_IMAGE_<RUNTIME> and the script that builds
 * one, whether the plan has build steps (a Node app with an install) or none (a plain Python app,
 * whose image BuildKit would otherwise have failed to resolve in its own words).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import type { HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { dockerSuite } from '../support/docker.js';
import { waitForDeployment } from '../support/wait.js';

const { skip, withEngine: opts } = await dockerSuite('test/deployments/docker-missing-image');
/** Names no engine has, and no registry answers for (none is reachable from here). */
const MISSING = { node: `berth-missing/node:${randomBytes(4).toString('hex')}`, python: `berth-missing/python:${randomBytes(4).toString('hex')}` };

let root: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let server: TestServer;
let api: HttpClient;

async function deployFolder(name: string, files: Record<string, string>): Promise<any> {
  const dir = path.join(root, 'local', name);
  mkdirSync(dir, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, f), text);
  const created = await api.post('/api/projects', { name });
  assert.equal(created.status, 201, created.text);
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: dir }).where('id', '=', created.body.data.id).execute();
  const res = await api.post('/api/deployments', { projectId: created.body.data.id });
  assert.equal(res.status, 202, res.text);
  return waitForDeployment(api, res.body.data.id, 120000);
}

before(async () => {
  if (skip) return;
  root = tempDir('berth-docker-missing-');
  if (usingPostgres()) pg = await freshPostgresDatabase();
  server = await startTestServer({
    background: true,
    dataDir: path.join(root, 'data'),
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: MISSING.node, BERTH_IMAGE_PYTHON: MISSING.python },
  });
  await getRuntime(server.ctx).restored;
  api = server.api((await createUser(server)).token);
});

after(async () => {
  if (skip) return;
  await server?.close();
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

function assertMissing(d: any, runtime: 'node' | 'python'): void {
  assert.equal(d.status, 'failed');
  const variable = `BERTH_IMAGE_${runtime.toUpperCase()}`;
  assert.match(d.error, new RegExp(`^the base image ${MISSING[runtime].replace(/[./]/g, '\\$&')} of the ${runtime} runtime is not on this machine and could not be pulled \\(.+\\): set ${variable} to an image the Docker Engine has \\(offline, scripts/docker-base-images\\.sh ${runtime} builds one`));
  assert.doesNotMatch(d.error, /failed to solve|ERROR \[|------/, 'no raw BuildKit text');
}

test('a Node plan with an install step whose base image is missing fails naming BERTH_IMAGE_NODE', opts, async () => {
  const d = await deployFolder('node-app', {
    'package.json': JSON.stringify({ name: 'a', version: '1.0.0', scripts: { start: 'node server.js' } }),
    'server.js': "require('http').createServer((q, r) => r.end('x')).listen(process.env.PORT);\n",
  });
  assertMissing(d, 'node');
});

test('a plain Python plan (no build steps) whose base image is missing fails with the same message, naming BERTH_IMAGE_PYTHON', opts, async () => {
  const d = await deployFolder('python-app', { 'main.py': "print('hi')\n" });
  assertMissing(d, 'python');
});
