import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { attachUploadToProject, uploadSourceDir } from '../../src/modules/uploads/index.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitForDeployment } from '../support/wait.js';
import { edgeRequest, type EdgeAnswer } from '../support/http.js';

let root: string;
let server: TestServer;
let owner: TestUser;

before(async () => {
  root = tempDir('berth-upl-');
  server = await startTestServer({ background: true });
  owner = await createUser(server);
});

after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

function edge(host: string, p = '/'): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(server.ctx).edgePort(), host, p);
}

async function upload(version: string): Promise<string> {
  const dir = writeTinyApp(path.join(root, version), { version });
  const file = path.join(root, `${version}.tgz`);
  tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['server.js', 'package.json']);
  const api = server.api(owner.token);
  const s = await api.post('/api/projects/folder/session', { name: 'uploaded' });
  assert.equal(s.status, 201, s.text);
  const { url, method, headers, sessionId } = s.body.data;
  const res = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
  assert.ok(res.status < 300, await res.text());
  return sessionId;
}

test('an uploaded folder deploys (POST /api/deployments with sessionId) and the edge serves it; the next upload replaces it', async () => {
  const api = server.api(owner.token);
  const p = await api.post('/api/projects', { name: 'Uploaded App' });
  assert.equal(p.status, 201, p.text);
  const projectId = p.body.data.id;
  const slug = p.body.data.slug;
  const none = await api.post('/api/deployments', { projectId });
  assert.equal(none.status, 400, 'a project without a source cannot deploy');
  assert.equal(none.body.error.field, 'projectId');
  for (const version of ['up-v1', 'up-v2']) {
    const t0 = Date.now();
    const sessionId = await upload(version);
    const d = await api.post('/api/deployments', { projectId, sessionId });
    assert.equal(d.status, 202, d.text);
    assert.equal(d.body.data.trigger, 'upload');
    const done = await waitForDeployment(api, d.body.data.id, 20000);
    assert.equal(done.status, 'ready', done.error);
    assert.ok(Date.now() - t0 < 10000);
    assert.match((await edge(`${slug}.localhost`)).text, new RegExp(`^hello ${version}`));
    // The session is consumed: passing it again to this project is a no-op for the upload (the
    // deployment builds the same source); another project cannot take it.
    const other = await api.post('/api/projects', { name: `other ${version}` });
    const taken = await api.post('/api/deployments', { projectId: other.body.data.id, sessionId });
    assert.equal(taken.status, 409, taken.text);
    assert.equal(taken.body.error.field, 'sessionId');
    const again = await api.post('/api/deployments', { projectId, sessionId });
    assert.equal(again.status, 202, again.text);
    const rebuilt = await waitForDeployment(api, again.body.data.id, 20000);
    assert.equal(rebuilt.status, 'ready', rebuilt.error);
    assert.match((await edge(`${slug}.localhost`)).text, new RegExp(`^hello ${version}`));
  }
  // An older upload, replaced by a newer one, is no longer the source: 409.
  const first = await upload('up-v3');
  const second = await upload('up-v4');
  assert.equal((await api.post('/api/deployments', { projectId, sessionId: first })).status, 202);
  const secondDeploy = await api.post('/api/deployments', { projectId, sessionId: second });
  assert.equal(secondDeploy.status, 202, secondDeploy.text);
  const stale = await api.post('/api/deployments', { projectId, sessionId: first });
  assert.equal(stale.status, 409, stale.text);
  // a plain redeploy builds the last uploaded folder again
  const re = await api.post('/api/deployments', { projectId });
  assert.equal(re.status, 202);
  const done = await waitForDeployment(api, re.body.data.id, 20000);
  assert.equal(done.status, 'ready', done.error);
  assert.match((await edge(`${slug}.localhost`)).text, /^hello up-v4/);
  const info = await api.get(`/api/projects/${projectId}/info`);
  assert.equal(info.body.data.runtime.state, 'running');
  assert.equal(info.body.data.runtime.isolation, 'sandbox');
});

test("a new upload attached while the project's source is being looked up (a build of the previous one starting) is what the folder holds after both", async () => {
  const api = server.api(owner.token);
  const p = await api.post('/api/projects', { name: 'attach-race' });
  assert.equal(p.status, 201, p.text);
  const projectId = p.body.data.id;
  await attachUploadToProject(server.ctx, owner.userId, owner.orgId, projectId, await upload('race-v1'));
  for (let round = 2; round <= 6; round++) {
    const sessionId = await upload(`race-v${round}`);
    // The attach moves the new upload into `current` while lookups (what a build does first) run.
    const [, ...dirs] = await Promise.all([attachUploadToProject(server.ctx, owner.userId, owner.orgId, projectId, sessionId), uploadSourceDir(server.ctx, owner.orgId, projectId), uploadSourceDir(server.ctx, owner.orgId, projectId)]);
    for (const d of dirs) assert.ok(d, `round ${round}: a lookup found no source`);
    const dir = await uploadSourceDir(server.ctx, owner.orgId, projectId);
    assert.ok(dir, `round ${round}: no source after the attach`);
    assert.match(readFileSync(path.join(dir, 'server.js'), 'utf8'), new RegExp(`race-v${round}`));
  }
});
