/**
 * End to end, builds over a running release (start shared through test/support/tiny-deployment.ts):
 * a failed, cancelled, superseded or timed-out build leaves the running release serving; a new
 * release replaces it, and a server restart brings it back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { processesWith, writeTinyApp } from '../runtime/app-fixture.js';
import { useTinyDeployment } from '../support/tiny-deployment.js';
import { waitFor } from '../support/wait.js';

const tiny = useTinyDeployment();

test('a build that fails keeps the previous release serving', async () => {
  const { api, projectId, slug, edge, deploy, settle, secret: SECRET } = tiny;
  const patch = await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "console.error(process.env.API_KEY); process.exit(7)"' });
  assert.equal(patch.status, 200, patch.text);
  const d = await deploy();
  const done = await settle(d.id);
  assert.equal(done.status, 'failed');
  assert.match(done.error, /exit code 7/);
  const logs = await api.get(`/api/deployments/${d.id}/logs`);
  assert.ok(!JSON.stringify(logs.body).includes(SECRET));
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
});

test('cancel kills a running build; a newer deployment supersedes an older one in flight', async () => {
  const { api, projectId, slug, edge, deploy } = tiny;
  // The build prints a marker of its own; pids inside the sandbox are its PID namespace's, so the
  // host's process table is searched for the marker instead.
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "console.log(\'slow build pid \' + process.pid); setTimeout(() => {}, 60000)" slow-build-marker' });
  const a = await deploy();
  const printed = (id: string) => async () => (await api.get(`/api/deployments/${id}/logs`)).body.data.some((l: any) => /^slow build pid \d+/.test(l.line));
  await waitFor(printed(a.id), 'the build to start', 10000);
  const b = await deploy();
  assert.equal((await api.get(`/api/deployments/${a.id}`)).body.data.status, 'superseded');
  await waitFor(printed(b.id), 'the second build', 10000);
  assert.ok(processesWith('slow-build-marker').length > 0, 'the marker finds the running build');
  const c = await api.post(`/api/deployments/${b.id}/cancel`);
  assert.equal(c.status, 200);
  assert.equal(c.body.data.status, 'cancelled');
  assert.equal((await api.post(`/api/deployments/${b.id}/cancel`)).status, 409);
  // no process of either build survives (the superseded one was killed too)
  for (const id of [a.id, b.id]) {
    const lines = (await api.get(`/api/deployments/${id}/logs`)).body.data.map((l: any) => l.line);
    assert.match(lines.join('\n'), /slow build pid \d+/, `build ${id} printed its pid`);
  }
  await waitFor(async () => processesWith('slow-build-marker').length === 0, 'both builds to be killed', 5000);
  await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
});

test('a build that runs past the build timeout is killed and fails', async () => {
  const { api, projectId, slug, edge, deploy, settle } = tiny;
  process.env.BERTH_BUILD_TIMEOUT_SECONDS = '2';
  try {
    await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node -e "setTimeout(() => {}, 60000)"' });
    const d = await deploy();
    const done = await settle(d.id, 15000);
    assert.equal(done.status, 'failed');
    assert.match(done.error, /timed out after 2 s/);
  } finally {
    delete process.env.BERTH_BUILD_TIMEOUT_SECONDS;
    await api.patch(`/api/projects/${projectId}`, { buildCommand: 'node build.js' });
  }
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v1/);
});

test('a new release replaces the old one; a server restart brings the app back', async () => {
  const { api, projectId, slug, edge, deploy, settle, appDir } = tiny;
  writeTinyApp(appDir, { version: 'v2', printEnv: 'API_KEY' });
  const d = await deploy();
  assert.equal((await settle(d.id)).status, 'ready');
  assert.match((await edge(`${slug}.localhost`)).text, /^hello v2/);
  const pidBefore = (await api.get(`/api/projects/${projectId}/info`)).body.data.runtime.pid;
  await tiny.stop();
  // the app went down with the server (graceful stop)
  await waitFor(async () => {
    try {
      process.kill(pidBefore, 0);
      return false;
    } catch {
      return true;
    }
  }, 'the app to stop with the server', 5000);
  await tiny.boot();
  const res = await edge(`${slug}.localhost`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^hello v2/);
  const info = await tiny.api.get(`/api/projects/${projectId}/info`);
  assert.equal(info.body.data.runtime.state, 'running');
  assert.equal(info.body.data.build.lastDeploymentId, d.id);
});
