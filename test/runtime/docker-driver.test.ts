import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { BoxProcess, BoxSpec } from '../../src/runtime/driver.js';
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js';
import { labelFilter } from '../../src/runtime/docker/containers.js';
import { tempDir } from '../support/harness.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from '../support/docker.js';

// The docker driver's build boxes on the real Docker Engine: each exec is one container of the
// runtime's base image (berth-base/node:20, scripts/docker-base-images.sh) over the source at /app.
const { engine, skip: noEngine, withEngine } = await dockerSuite('test/runtime/docker-driver');

const run = randomBytes(3).toString('hex');
const key = `dkdrv${run}`;
const project = `prj_build${run}`;
const root = tempDir('berth-dkdrv-');
let driver: DockerDriver;

before(async () => {
  if (noEngine) return;
  const script = spawnSync('bash', [path.resolve('scripts/docker-base-images.sh')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(script.status, 0, script.stderr);
  driver = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_NODE: BASE_IMAGE } });
  await driver.reclaim();
});

after(async () => {
  if (!noEngine) {
    const list = await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key }) });
    for (const c of list) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    await engine.api.getNetwork(`berth-${key}-${project}`).remove().catch(() => {});
  }
  rmSync(root, { recursive: true, force: true });
});

function boxSpec(name: string, extra: Partial<BoxSpec> = {}): BoxSpec {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'src', 'web'), { recursive: true });
  return {
    kind: 'build',
    projectId: project,
    name: `build-${name}`,
    identity: null,
    limits: { cpuCores: 1, memoryMb: 256, pidsMax: 128 },
    appDir: path.join(dir, 'src'),
    homeDir: path.join(dir, 'home'),
    runtime: 'node',
    ...extra,
  };
}

async function output(p: BoxProcess): Promise<{ code: number | null; signal: string | null; error?: Error; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  p.stdout!.on('data', (c: Buffer) => (stdout += c));
  p.stderr!.on('data', (c: Buffer) => (stderr += c));
  const r = await p.exited;
  return { ...r, stdout, stderr };
}

async function buildContainers(): Promise<Docker.ContainerInfo[]> {
  return engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key, 'berth.kind': 'build' }) });
}

test('the docker driver is ready when the engine answers, enforces limits, and sees no host folder', withEngine, () => {
  const st = driver.status();
  assert.equal(st.driver, 'docker');
  assert.equal(st.ready, true);
  assert.equal(st.engine?.reachable, true);
  assert.equal(driver.isolation, 'docker');
  assert.deepEqual(driver.limits, { enforced: true });
  assert.equal(driver.boxPath, '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  assert.equal(driver.sees('/usr/bin'), false);
  assert.equal(driver.apps.survivesShutdown, true);
});

test('an unreachable engine makes the driver not ready, saying how to fix it', async () => {
  const d = new DockerDriver({ key, env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } });
  await d.reclaim();
  const st = d.status();
  assert.equal(st.ready, false);
  assert.equal(st.reason, 'the docker runtime needs a Docker Engine: no Docker Engine at /nonexistent/docker.sock: install docker.io and start dockerd');
  await assert.rejects(d.open(boxSpec('nowhere')), /no Docker Engine at \/nonexistent\/docker.sock: install docker.io and start dockerd/);
  const bad = new DockerDriver({ key, env: { DOCKER_HOST: 'ssh://host' } });
  assert.match(bad.status().reason!, /DOCKER_HOST "ssh:\/\/host" is not supported/);
});

test('a build box runs each step as its own container, as uid 1000, writing into /app on the host, with only the env it is given', withEngine, async () => {
  const spec = boxSpec('steps');
  writeFileSync(path.join(spec.appDir, 'web', 'package.json'), '{"name":"web"}');
  const box = await driver.open(spec);
  try {
    assert.deepEqual(box.paths, { app: '/app', data: null, home: '/home/berth', tmp: '/tmp', cache: null });
    assert.equal(box.inside(path.join(spec.appDir, 'web')), '/app/web');
    assert.equal(box.inside(spec.appDir), '/app');
    assert.throws(() => box.inside(root), /outside the box/);
    const script = [
      "const fs = require('fs');",
      "fs.mkdirSync('node_modules/.bin', { recursive: true });",
      "fs.writeFileSync('node_modules/built.txt', 'built by ' + process.getuid());",
      "fs.writeFileSync(process.env.HOME + '/.npmrc', 'cache=1');",
      "console.log(JSON.stringify({ cwd: process.cwd(), uid: process.getuid(), gid: process.getgid(), env: process.env, pkg: require('./package.json').name, caps: fs.readFileSync('/proc/self/status', 'utf8').match(/CapEff:\\s+(\\w+)/)[1] }));",
      "console.error('to stderr');",
    ].join(' ');
    const r = await output(box.exec(['node', '-e', script], { cwd: path.join(spec.appDir, 'web'), env: { HOME: '/home/berth', PATH: driver.boxPath, NPM_CONFIG_LOGLEVEL: 'warn' } }));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, 'to stderr\n');
    const seen = JSON.parse(r.stdout);
    assert.equal(seen.cwd, '/app/web');
    assert.equal(seen.uid, 1000);
    assert.equal(seen.gid, 1000);
    assert.equal(seen.pkg, 'web');
    assert.equal(seen.caps, '0000000000000000');
    // What the step is given, over the image's own variables (its SSL_CERT_FILE) and the engine's HOSTNAME; never the server's.
    assert.deepEqual(Object.keys(seen.env).sort(), ['HOME', 'HOSTNAME', 'NPM_CONFIG_LOGLEVEL', 'PATH', 'SSL_CERT_FILE']);
    assert.equal(seen.env.HOME, '/home/berth');
    assert.equal(seen.env.PATH, driver.boxPath);
    assert.equal(readFileSync(path.join(spec.appDir, 'web', 'node_modules', 'built.txt'), 'utf8'), 'built by 1000');
    assert.equal(readFileSync(path.join(spec.homeDir!, '.npmrc'), 'utf8'), 'cache=1');
    if (process.getuid?.() === 0) assert.equal(statSync(path.join(spec.appDir, 'web', 'node_modules', 'built.txt')).uid, 1000);
    // The next step sees what the previous one wrote.
    const again = await output(box.exec(['cat', 'node_modules/built.txt'], { cwd: path.join(spec.appDir, 'web'), env: {} }));
    assert.equal(again.stdout, 'built by 1000');
    assert.equal((await buildContainers()).length, 0, 'every step container is removed');
  } finally {
    await box.dispose();
  }
});

test('a build step container has the limits, the security options, the project network and no mount but /app and HOME', withEngine, async () => {
  const spec = boxSpec('inspect');
  const box = await driver.open(spec);
  try {
    const p = box.exec(['sleep', '30'], { cwd: spec.appDir, env: { SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt', NODE_EXTRA_CA_CERTS: path.join(root, 'inside-data-dir.pem') } });
    writeFileSync(path.join(root, 'inside-data-dir.pem'), 'not mounted');
    let list: Docker.ContainerInfo[] = [];
    for (let i = 0; i < 100 && list.length === 0; i++) {
      list = (await buildContainers()).filter((c) => c.State === 'running');
      if (!list.length) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(list.length, 1);
    const info = await engine.api.getContainer(list[0]!.Id).inspect();
    assert.equal(info.Config.User, '1000:1000');
    assert.equal(info.Config.Labels['berth.project'], project);
    assert.equal(info.HostConfig.Memory, 256 * 1024 * 1024);
    assert.equal(info.HostConfig.PidsLimit, 128);
    assert.equal(info.HostConfig.NanoCpus, 1e9);
    assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
    assert.deepEqual(info.HostConfig.SecurityOpt, ['no-new-privileges']);
    assert.equal(info.HostConfig.NetworkMode, `berth-${key}-${project}`);
    // The host CA file the env names is there read-only; nothing below the data dir is.
    assert.deepEqual(info.HostConfig.Binds, [`${spec.appDir}:/app:rw`, `${spec.homeDir}:/home/berth:rw`, '/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro']);
    assert.ok(box.pids().length === 1 && box.pids()[0]! > 1, 'the host pid of the step');
    const t0 = Date.now();
    await box.killAll();
    const r = await p.exited;
    assert.deepEqual(r, { code: null, signal: 'SIGKILL' });
    assert.ok(Date.now() - t0 < 5000);
    assert.equal((await buildContainers()).length, 0, 'the killed container is removed');
  } finally {
    await box.dispose();
  }
});

test('a failing step reports its exit code, a missing program says so, and the box stays usable', withEngine, async () => {
  const spec = boxSpec('fail');
  const box = await driver.open(spec);
  try {
    const failed = await output(box.exec(['sh', '-c', 'echo half; exit 7'], { cwd: spec.appDir, env: {} }));
    assert.deepEqual({ code: failed.code, signal: failed.signal, stdout: failed.stdout }, { code: 7, signal: null, stdout: 'half\n' });
    const missing = await output(box.exec(['npx-not-here', '--version'], { cwd: spec.appDir, env: { PATH: driver.boxPath } }));
    assert.equal(missing.code, null);
    assert.equal((missing.error as NodeJS.ErrnoException).code, 'ENOENT');
    assert.match(missing.error!.message, /program "npx-not-here" not found/);
    const ok = await output(box.exec(['node', '--version'], { cwd: spec.appDir, env: {} }));
    assert.match(ok.stdout, /^v20\./);
    assert.equal((await buildContainers()).length, 0);
  } finally {
    await box.dispose();
  }
});

test('a base image the engine does not have (and cannot pull) fails the step naming BERTH_IMAGE_<RUNTIME>', withEngine, async () => {
  const d = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_PYTHON: '127.0.0.1:9/berth-test/none:0' } });
  const spec = boxSpec('noimage', { runtime: 'python' });
  const box = await d.open(spec);
  const r = await output(box.exec(['python', '--version'], { cwd: spec.appDir, env: {} }));
  assert.equal(r.code, null);
  assert.match(r.error!.message, /^the base image 127\.0\.0\.1:9\/berth-test\/none:0 of the python runtime is not on this machine and could not be pulled \(.+\): set BERTH_IMAGE_PYTHON to an image the Docker Engine has \(offline, scripts\/docker-base-images\.sh python builds one/);
  await assert.rejects(d.open(boxSpec('noruby', { runtime: 'ruby' })), /no base image for the ruby runtime: set BERTH_IMAGE_RUBY/);
  await assert.rejects(d.open(boxSpec('app', { kind: 'app' })), /runs apps from their release image/);
});

test('reclaim removes build and step containers and exited apps of this server, and leaves running apps for adoption', withEngine, async () => {
  const make = async (kind: string, cmd: string[], start: boolean) => {
    const c = await engine.api.createContainer({ Image: BASE_IMAGE, Cmd: cmd, Labels: { 'berth.instance': key, 'berth.project': project, 'berth.kind': kind } });
    if (start) await c.start();
    return c.id;
  };
  const build = await make('build', ['sleep', '60'], true);
  const step = await make('step', ['sleep', '1'], false);
  const exitedApp = await make('app', ['sh', '-c', 'exit 0'], true);
  const runningApp = await make('app', ['sleep', '60'], true);
  const other = await engine.api.createContainer({ Image: BASE_IMAGE, Cmd: ['sleep', '60'], Labels: { 'berth.instance': `other${run}`, 'berth.kind': 'build' } });
  try {
    await new Promise((r) => setTimeout(r, 300));
    const d = new DockerDriver({ key, dataDir: root, env: { BERTH_IMAGE_NODE: BASE_IMAGE } });
    await d.reclaim();
    const left = (await engine.api.listContainers({ all: true, filters: labelFilter({ 'berth.instance': key }) })).map((c) => c.Id);
    assert.deepEqual(left, [runningApp]);
    assert.ok(![build, step, exitedApp].some((id) => left.includes(id)));
    await engine.api.getContainer(other.id).inspect();
  } finally {
    await engine.api.getContainer(runningApp).remove({ force: true });
    await other.remove({ force: true });
  }
});
