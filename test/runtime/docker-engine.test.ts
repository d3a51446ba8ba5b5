import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { rmSync } from 'node:fs';
import { DockerEngine, demuxLogs, engineTarget, EngineError } from '../../src/runtime/docker/engine.js';
import { startTestServer, tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from '../support/docker.js';
import { EngineProbe } from '../../src/runtime/docker/probe.js';
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js';

const { engine, skip: noEngine, withEngine } = await dockerSuite('test/runtime/docker-engine');

test('the engine answers ping and version (an Engine API version of at least 1.41)', withEngine, async () => {
  await engine.ping();
  const v = await engine.version();
  assert.match(v.version, /^\d+\.\d+/);
  const [major, minor] = v.apiVersion.split('.').map(Number);
  assert.ok(major > 1 || (major === 1 && minor >= 41), `API ${v.apiVersion}`);
});

test('a socket path with no engine behind it gives an error that names the path and the fix', async () => {
  const missing = new DockerEngine(engineTarget('unix:///nonexistent/docker.sock'));
  await assert.rejects(missing.ping(), (e: EngineError) => {
    assert.equal(e.kind, 'missing');
    assert.equal(e.message, 'no Docker Engine at /nonexistent/docker.sock: install docker.io and start dockerd');
    return true;
  });
  assert.deepEqual(engineTarget(undefined), { kind: 'socket', socketPath: '/var/run/docker.sock' });
  assert.deepEqual(engineTarget('tcp://10.0.0.5:2375'), { kind: 'tcp', host: '10.0.0.5', port: 2375 });
  assert.throws(() => engineTarget('ssh://user@host'), /DOCKER_HOST "ssh:\/\/user@host" is not supported/);
});

test('an engine that accepts but never answers is given up on after the probe timeout', async () => {
  const dir = tempDir('berth-dockerhang-');
  const sock = path.join(dir, 'docker.sock');
  const held: net.Socket[] = [];
  const server = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => server.listen(sock, r));
  try {
    const hung = new DockerEngine(engineTarget(sock));
    const t0 = Date.now();
    await assert.rejects(hung.version(300), (e: EngineError) => {
      assert.equal(e.kind, 'timeout');
      assert.equal(e.message, `the Docker Engine at ${sock} did not answer within 300 ms`);
      return true;
    });
    assert.ok(Date.now() - t0 < 3000);
  } finally {
    for (const s of held) s.destroy();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the base image script builds berth-base/node:20, which runs node as uid 1000 (through the engine API)', withEngine, async () => {
  const script = path.resolve('scripts/docker-base-images.sh');
  for (let i = 0; i < 2; i++) {
    const r = spawnSync('bash', [script], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    if (i === 1) assert.match(r.stdout, /berth-base\/node:20 is there/, 'a second run keeps the image');
  }
  const info = await engine.api.getImage(BASE_IMAGE).inspect();
  assert.equal(info.Config.User, 'app');

  const container = await engine.api.createContainer({ Image: BASE_IMAGE, Cmd: ['node', '-e', 'console.log(process.version, process.getuid(), process.getgid())'], Tty: false });
  try {
    await container.start();
    const exit = (await container.wait()) as { StatusCode: number };
    const logs = demuxLogs((await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer);
    assert.equal(exit.StatusCode, 0, logs.stderr);
    assert.match(logs.stdout.trim(), /^v20\.\d+\.\d+ 1000 1000$/);
  } finally {
    await container.remove({ force: true });
  }
  await assert.rejects(container.inspect(), /no such container/i);
});

test('GET /api/health with BERTH_RUNTIME=docker shows the engine answering, and the driver ready', withEngine, async () => {
  const server = await startTestServer({ env: { BERTH_RUNTIME: 'docker' } });
  try {
    const health = await waitFor(async () => {
      const r = await server.api().get('/api/health');
      assert.equal(r.status, 200);
      return r.body.data.runtime.engine?.reachable ? r.body.data : null;
    }, 'the engine probe');
    const v = await engine.version();
    assert.deepEqual(health.runtime.engine, { reachable: true, version: v.version, apiVersion: v.apiVersion });
    assert.equal(health.runtime.driver, 'docker');
    assert.equal(health.runtime.ready, true);
    assert.equal('reason' in health.runtime, false);
  } finally {
    await server.close();
  }
});

test('GET /api/health with BERTH_RUNTIME=docker and no engine at DOCKER_HOST says so and how to fix it', async () => {
  process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
  const server = await startTestServer({ env: { BERTH_RUNTIME: 'docker' } });
  try {
    const engineView = await waitFor(async () => {
      const r = await server.api().get('/api/health');
      return r.body.data.runtime.engine?.error?.startsWith('no Docker') ? r.body.data.runtime.engine : null;
    }, 'the failed engine probe');
    assert.deepEqual(engineView, { reachable: false, error: 'no Docker Engine at /nonexistent/docker.sock: install docker.io and start dockerd' });
  } finally {
    delete process.env.DOCKER_HOST;
    await server.close();
  }
});

test('GET /api/health of another driver has no engine field', async () => {
  const server = await startTestServer({ env: { BERTH_RUNTIME: 'process' } });
  try {
    const r = await server.api().get('/api/health');
    assert.equal(r.body.data.runtime.driver, 'process');
    assert.equal('engine' in r.body.data.runtime, false);
  } finally {
    await server.close();
  }
});

test('just after start, an engine that has not answered yet is "starting", not unreachable; after the grace period it is unreachable', async () => {
  const dir = tempDir('berth-dockerslow-');
  const sock = path.join(dir, 'docker.sock');
  const held: net.Socket[] = [];
  const server = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => server.listen(sock, r));
  try {
    // A busy engine: it accepts and does not answer (yet). The driver, as the health endpoint reads it.
    const driver = new DockerDriver({ key: 'slowengine01', probe: new EngineProbe({ DOCKER_HOST: `unix://${sock}` }), env: { DOCKER_HOST: `unix://${sock}` } });
    const st = driver.status();
    assert.equal(st.ready, false);
    assert.equal(st.engine?.reachable, false);
    assert.equal(st.engine?.starting, true);
    assert.match(st.reason!, /^starting: waiting for the Docker Engine's first answer/);

    // The grace period over (a probe with none), the same slowness is unreachable, with the timeout named.
    const late = new EngineProbe({ DOCKER_HOST: `unix://${sock}` }, 0);
    await late.refresh(200);
    assert.deepEqual(late.status(), { reachable: false, error: `the Docker Engine at ${sock} did not answer within 200 ms` });
  } finally {
    for (const s of held) s.destroy();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing engine is unreachable at once, even just after start (only slowness gets the grace period)', async () => {
  const probe = new EngineProbe({ DOCKER_HOST: 'unix:///nonexistent/docker.sock' });
  await probe.refresh();
  assert.deepEqual(probe.status(), { reachable: false, error: 'no Docker Engine at /nonexistent/docker.sock: install docker.io and start dockerd' });
});
