import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { EdgeServer } from '../../src/edge/proxy.js';
import { RequestLog } from '../../src/edge/requests.js';
import { createLogger } from '../../src/lib/logger.js';
import { labelsOf } from '../../src/runtime/docker/containers.js';
import { DockerEngine } from '../../src/runtime/docker/engine.js';
import { SwarmApps } from '../../src/runtime/docker/swarm.js';
import type { Instance, InstanceDeps } from '../../src/runtime/app-instance.js';
import type { RuntimeDriver } from '../../src/runtime/driver.js';
import type { CommandStep } from '../../src/runtime/command.js';
import { LogStore } from '../../src/runtime/logs.js';
import { StartError, type ReleaseSpec, type Upstream } from '../../src/runtime/release-spec.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from '../support/docker.js';

// Swarm mode of the docker runtime (contract section 13) on a real single-node swarm: the engine of
// the machine, put into swarm mode for the file when it is not (and taken out again afterwards).
const IMAGES = { one: 'berth-test/swarm:1', two: 'berth-test/swarm:2', broken: 'berth-test/swarm:broken', deaf: 'berth-test/swarm:deaf' };

// The suite does not touch the database: one run (the SQLite pass) is enough.
const onPostgres = process.env.DATABASE_URL ? 'it does not use the database (it runs on the SQLite pass)' : null;
if (onPostgres) console.log(`# test/runtime/docker-swarm: skipping the Swarm tests: ${onPostgres}`);
const { engine, skip: noEngine } = onPostgres ? { engine: DockerEngine.fromEnv(), skip: null } : await dockerSuite('test/runtime/docker-swarm');
const skipReason = onPostgres ?? noEngine;
const withSwarm = { skip: skipReason ?? false };

const key = randomBytes(6).toString('hex');
const projectId = `prj_sw${randomBytes(3).toString('hex')}`;
let root: string;
let logs: LogStore;
let initialized = false;
let hadGwBridge = true;
let apps: SwarmApps;

function docker(args: string[], opts: { input?: string; cwd?: string } = {}): string {
  const r = spawnSync(DOCKER, args, { encoding: 'utf8', timeout: 120_000, env: { ...process.env, DOCKER_BUILDKIT: '1' }, ...opts });
  assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

// Two runs of this file at once (two test commands on one machine) would share the swarm, and the one
// that initialized it would take it down under the other: runs take turns through a lock file.
const LOCK = path.join(os.tmpdir(), 'berth-docker-swarm-test.lock');
let locked = false;

async function takeLock(): Promise<void> {
  await waitFor(
    () => {
      try {
        writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
        return true;
      } catch {
        const holder = Number(readFileSync(LOCK, 'utf8'));
        try {
          if (holder) process.kill(holder, 0);
          return false;
        } catch {
          rmSync(LOCK, { force: true }); // its run is gone
          return false;
        }
      }
    },
    'the other run of the Swarm tests to finish',
    150_000,
    500,
  );
  locked = true;
}

before(async () => {
  if (skipReason) return;
  await takeLock();
  root = tempDir('berth-swarm-');
  logs = new LogStore(root);
  const info = (await engine.api.info()) as { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean } };
  if (info.Swarm?.LocalNodeState !== 'active') {
    hadGwBridge = !!(await engine.api.getNetwork('docker_gwbridge').inspect().catch(() => null));
    assert.match((await new SwarmApps({ engine, instanceKey: key }).unavailable())!, /^BERTH_DOCKER_SWARM=1 but the Docker Engine is not in a swarm: run docker swarm init/);
    docker(['swarm', 'init', '--advertise-addr', '127.0.0.1']);
    initialized = true;
  } else assert.ok(info.Swarm.ControlAvailable, 'the engine is in a swarm but not a manager');
  if (!(await engine.api.getImage(BASE_IMAGE).inspect().catch(() => null))) {
    const r = spawnSync('bash', [path.resolve('scripts/docker-base-images.sh')], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
  }
  // Two versions of an app that answers "<version> <hostname>" on $PORT (closing each connection unless
  // KEEP_ALIVE is set), one that exits at once and one that never answers.
  const ctx = path.join(root, 'image');
  mkdirSync(ctx);
  writeFileSync(
    path.join(ctx, 'server.js'),
    `const http = require('node:http');
const os = require('node:os');
const server = http.createServer((req, res) => {
  if (!process.env.KEEP_ALIVE) res.setHeader('connection', 'close');
  res.end(process.env.VERSION + ' ' + os.hostname() + ' ' + (process.env.GREETING || '') + '\\n');
});
server.listen(Number(process.env.PORT), process.env.HOST);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
  );
  writeFileSync(path.join(ctx, 'Dockerfile'), `FROM ${BASE_IMAGE}\nARG VERSION\nENV VERSION=$VERSION\nCOPY server.js /srv/server.js\nUSER 1000:1000\nCMD ["node", "/srv/server.js"]\n`);
  docker(['build', '-q', '--build-arg', 'VERSION=1', '-t', IMAGES.one, ctx]);
  docker(['build', '-q', '--build-arg', 'VERSION=2', '-t', IMAGES.two, ctx]);
  docker(['build', '-q', '-t', IMAGES.broken, '-'], { input: `FROM ${BASE_IMAGE}\nCMD ["node", "-e", "console.error('broken on purpose'); process.exit(3)"]\n` });
  docker(['build', '-q', '-t', IMAGES.deaf, '-'], { input: `FROM ${BASE_IMAGE}\nCMD ["node", "-e", "setInterval(() => {}, 1000)"]\n` });
  apps = new SwarmApps({ engine, instanceKey: key });
});

after(async () => {
  if (skipReason || !locked) return;
  // The balancers of instances a failed test left open (they would keep the process alive).
  for (const inst of [inst1, inst2, many]) inst?.detach?.();
  const services = (await engine.api.listServices({ filters: { label: [`berth.instance=${key}`] } }).catch(() => [])) as Docker.Service[];
  for (const s of services) await engine.api.getService(s.ID).remove().catch(() => {});
  // The engine removes a removed service's containers a little later; the images can go after them.
  await waitFor(async () => !(await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } })).length, 'the test services to be gone', 20_000, 250).catch(async (e: Error) => {
    const left = await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } });
    console.log(`# ${e.message}: ${left.map((c) => `${c.Image} ${c.Status} ${c.Labels['com.docker.swarm.service.name']}`).join('; ')}`);
  });
  // A build container a failed test left (never a task: those went with their services).
  for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`, 'berth.kind=build'] } }).catch(() => [])) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
  for (const n of [`berth-${key}-${projectId}`, `berth-${key}-${projectId}-swarm`]) await engine.api.getNetwork(n).remove().catch(() => {});
  if (initialized) {
    spawnSync(DOCKER, ['swarm', 'leave', '--force'], { timeout: 60_000 });
    if (!hadGwBridge) spawnSync(DOCKER, ['network', 'rm', 'docker_gwbridge'], { timeout: 60_000 });
  }
  for (const image of [...Object.values(IMAGES), RELEASE, `127.0.0.1:5999/${RELEASE}`]) spawnSync(DOCKER, ['rmi', image], { timeout: 60_000 });
  logs?.closeAll();
  rmSync(root, { recursive: true, force: true });
  if (locked && readFileSync(LOCK, 'utf8') === String(process.pid)) rmSync(LOCK, { force: true });
});

function deps(): InstanceDeps {
  return {
    logs,
    // SwarmApps never asks the driver (the docker driver it belongs to hands it over).
    driver: null as unknown as RuntimeDriver,
    baseEnv: { LANG: 'C.UTF-8', PATH: '/usr/bin:/bin', TZ: 'UTC' },
    healthTimeoutMs: 20_000,
    graceMs: 2000,
    boxName: (id) => `app-${id}`,
  };
}

function spec(image: string, deploymentId: string, extra: Partial<ReleaseSpec> = {}): ReleaseSpec {
  const appRoot = path.join(root, 'rel', deploymentId);
  mkdirSync(appRoot, { recursive: true });
  return {
    projectId,
    orgId: 'org_swarm',
    deploymentId,
    appRoot,
    cwd: appRoot,
    steps: () => [{ argv: ['node', '/srv/server.js'], env: {} }],
    env: { GREETING: 'hello', API_KEY: 'swarm-secret-value' },
    secrets: ['swarm-secret-value'],
    dataDir: path.join(root, 'volumes', projectId, 'data'),
    limits: { cpuCores: 0.5, memoryMb: 128, pidsMax: 64 },
    identity: null,
    port: 3000,
    path: () => '/usr/local/bin:/usr/bin:/bin',
    image,
    replicas: 2,
    ...extra,
  };
}

/** One GET on a fresh connection: the body, or the error. */
function get(u: Upstream): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: u.host, port: u.port, path: '/', agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(body.trim()) : reject(new Error(`status ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

async function service(): Promise<(Docker.Service & { Spec: Docker.ServiceSpec }) | null> {
  return (engine.api.getService(`berth-${key}-${projectId}`).inspect() as Promise<Docker.Service & { Spec: Docker.ServiceSpec }>).catch(() => null);
}

function containerSpecOf(s: Docker.Service & { Spec: Docker.ServiceSpec }): Docker.ContainerSpec {
  return (s.Spec.TaskTemplate as Docker.ContainerTaskSpec).ContainerSpec!;
}

let inst1: Instance;
let inst2: Instance;

test('a release runs as a Swarm service with two replicas, hardened, and both replicas answer through the published address', withSwarm, async () => {
  const s1 = spec(IMAGES.one, 'dpl_one', {
    // A step before the server (a migration) runs once, as a job, with the volume at /data.
    steps: (env): CommandStep[] => [
      { argv: ['node', '-e', 'require("fs").writeFileSync("/data/migrated", process.env.BERTH_DEPLOYMENT_ID + " " + process.env.DATA_DIR)'], env: {} },
      { argv: ['node', '/srv/server.js'], env: { STEP_PORT: env.PORT! } },
    ],
  });
  assert.equal(await apps.unavailable(), null, 'the engine is a Swarm manager');
  // The project's bridge is there already (its build ran as containers on the manager).
  await engine.api.createNetwork({ Name: `berth-${key}-${projectId}`, Driver: 'bridge', Labels: { 'berth.instance': key } });
  const t0 = Date.now();
  inst1 = await apps.start(s1, deps());
  console.log(`# swarm: a new service of 2 replicas answered in ${Date.now() - t0} ms`);
  assert.equal(inst1.pid, undefined);
  assert.equal(inst1.upstream.host, '127.0.0.1');
  assert.equal(readFileSync(path.join(s1.dataDir, 'migrated'), 'utf8'), 'dpl_one /data');

  const svc = (await service())!;
  assert.deepEqual(svc.Spec.Labels, { 'berth.instance': key, 'berth.project': projectId, 'berth.kind': 'app', 'berth.deployment': 'dpl_one' });
  assert.equal(svc.Spec.Mode?.Replicated?.Replicas, 2);
  assert.deepEqual(svc.Spec.UpdateConfig, { Parallelism: 1, FailureAction: 'rollback', Monitor: 5e9, MaxFailureRatio: 0, Order: 'start-first' });
  const cs = containerSpecOf(svc);
  assert.equal(cs.Image, IMAGES.one);
  assert.deepEqual(cs.CapabilityDrop, ['ALL']);
  assert.equal(cs.User, '1000:1000');
  assert.deepEqual(cs.Command, ['node', '/srv/server.js']);
  assert.ok(cs.Env!.includes('DATA_DIR=/data') && cs.Env!.includes('HOME=/tmp') && cs.Env!.includes('HOST=0.0.0.0') && cs.Env!.includes('PORT=3000') && cs.Env!.includes('STEP_PORT=3000'));
  const names = cs.Env!.map((e) => e.slice(0, e.indexOf('='))).sort();
  const expected = ['LANG', 'TZ', 'PATH', 'HOME', 'HOST', 'NODE_ENV', 'GREETING', 'API_KEY', 'PORT', 'DATA_DIR', 'BERTH_PROJECT_ID', 'BERTH_DEPLOYMENT_ID', 'STEP_PORT'];
  assert.deepEqual(
    names.filter((n) => !/^(COREPACK_|DENO_DIR|PYTHON)/.test(n)),
    expected.sort(),
    'what Berth passes, never the server environment',
  );
  assert.deepEqual((svc.Spec.TaskTemplate as Docker.ContainerTaskSpec).Resources?.Limits, { MemoryBytes: 128 * 1024 * 1024, NanoCPUs: 5e8, Pids: 64 });
  const overlay = await engine.api.getNetwork(`berth-${key}-${projectId}-swarm`).inspect();
  assert.equal(overlay.Driver, 'overlay');
  assert.equal(overlay.Attachable, false);
  assert.equal(overlay.Labels?.['berth.project'], projectId);
  // What each task's container got from the engine.
  const containers = await engine.api.listContainers({ filters: { label: [`com.docker.swarm.service.name=berth-${key}-${projectId}`] } });
  assert.equal(containers.length, 2);
  const hc = (await engine.api.getContainer(containers[0]!.Id).inspect()).HostConfig;
  assert.deepEqual(hc.CapDrop, ['ALL']);
  assert.equal(hc.PidsLimit, 64);
  assert.equal(hc.Init, true);
  assert.equal(hc.Privileged, false);

  const hosts = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const [version, host, greeting] = (await get(inst1.upstream)).split(' ');
    assert.equal(version, '1');
    assert.equal(greeting, 'hello');
    hosts.add(host!);
  }
  assert.equal(hosts.size, 2, `requests spread over both tasks: ${[...hosts].join(', ')}`);
});

test('a deploy rolls the service start-first to the new image while every request keeps answering', withSwarm, async () => {
  let rolling = true;
  const seen = new Map<string, number>();
  const failures: string[] = [];
  const loop = (async () => {
    while (rolling) {
      try {
        const v = (await get(inst1.upstream)).split(' ')[0]!;
        seen.set(v, (seen.get(v) ?? 0) + 1);
      } catch (e) {
        failures.push((e as Error).message);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const t0 = Date.now();
  try {
    inst2 = await apps.start(spec(IMAGES.two, 'dpl_two', { imageCommand: true }), deps());
  } finally {
    // A few more requests on the old address after the roll: it now reaches the new tasks.
    await new Promise((r) => setTimeout(r, 300));
    rolling = false;
    await loop;
  }
  console.log(`# swarm: the rolling update of 2 replicas took ${Date.now() - t0} ms; ${[...seen].map(([v, n]) => `${n} answers of ${v}`).join(', ')}`);
  assert.deepEqual(failures, [], 'no request failed during the roll');
  assert.ok(seen.get('1')! > 0 && seen.get('2')! > 0, 'answers of both versions during the roll');

  const svc = (await service())!;
  assert.equal(svc.UpdateStatus?.State, 'completed');
  const cs = containerSpecOf(svc);
  assert.equal(cs.Image, IMAGES.two);
  assert.equal(cs.Command, undefined, "the image's own CMD runs");
  assert.equal(svc.Spec.Labels?.['berth.deployment'], 'dpl_two');
  const hosts = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const [version, host] = (await get(inst2.upstream)).split(' ');
    assert.equal(version, '2');
    hosts.add(host!);
  }
  assert.equal(hosts.size, 2);

  // The old instance's dispose leaves the service alone: it runs the newer release now.
  await inst1.box.dispose();
  assert.equal(containerSpecOf((await service())!).Image, IMAGES.two);
  assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
});

test('an update whose tasks exit at once is rolled back by the engine: start rejects with a StartError and the running release keeps answering', withSwarm, async () => {
  const before = (await service())!;
  const t0 = Date.now();
  await assert.rejects(apps.start(spec(IMAGES.broken, 'dpl_broken', { imageCommand: true }), deps()), (e: Error) => {
    assert.ok(e instanceof StartError, e.message);
    assert.match(e.message, /^the update to dpl_broken was rolled back: .*non-zero exit \(3\)/);
    return true;
  });
  console.log(`# swarm: the failed update was rolled back in ${Date.now() - t0} ms`);
  const svc = (await service())!;
  assert.equal(containerSpecOf(svc).Image, IMAGES.two);
  assert.equal(svc.ID, before.ID);
  for (let i = 0; i < 6; i++) assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
  const lines = logs.runtime(projectId).read().map((l) => l.line);
  assert.ok(lines.some((l) => l.includes('[berth] the update to dpl_broken was rolled back')), lines.join('\n'));
  assert.ok(
    lines.some((l) => l.includes('broken on purpose')),
    "the failing tasks' output is in the app's log",
  );
  assert.ok(!lines.some((l) => l.includes('swarm-secret-value')));
});

test('an update whose tasks run but never answer is rolled back by Berth after the health check', withSwarm, async () => {
  const t0 = Date.now();
  await assert.rejects(apps.start(spec(IMAGES.deaf, 'dpl_deaf', { imageCommand: true }), { ...deps(), healthTimeoutMs: 3000 }), (e: Error) => {
    assert.ok(e instanceof StartError, e.message);
    assert.match(e.message, /^the app did not become healthy: it did not answer on port \d+ within 3 s/);
    return true;
  });
  console.log(`# swarm: the unhealthy update was rolled back in ${Date.now() - t0} ms`);
  const svc = (await service())!;
  assert.equal(containerSpecOf(svc).Image, IMAGES.two);
  assert.equal(svc.Spec.Labels?.['berth.deployment'], 'dpl_two');
  for (let i = 0; i < 4; i++) assert.equal((await get(inst2.upstream)).split(' ')[0], '2');
});

test('a restarted server adopts the service that runs the release (no update, no second service); a sweep removes what nothing adopted', withSwarm, async () => {
  const before = (await service())!;
  const restarted = new SwarmApps({ engine, instanceKey: key });
  const adopted = await restarted.start(spec(IMAGES.two, 'dpl_two', { imageCommand: true }), deps());
  const after = (await service())!;
  assert.equal(after.ID, before.ID);
  assert.equal(after.Version?.Index, before.Version?.Index, 'no update');
  assert.equal((await engine.api.listServices({ filters: { label: [`berth.instance=${key}`] } })).length, 1);
  assert.equal((await get(adopted.upstream)).split(' ')[0], '2');
  await restarted.sweepUnadopted();
  assert.ok(await service(), 'the sweep of the server that adopted it keeps it');
  adopted.detach!();
  inst2.detach!();

  // The next server adopts nothing: its sweep removes the service.
  const next = new SwarmApps({ engine, instanceKey: key });
  await next.sweepUnadopted();
  assert.equal(await service(), null);
  await next.forgetProject(projectId);
  await assert.rejects(engine.api.getNetwork(`berth-${key}-${projectId}-swarm`).inspect(), /404|no such network|not found/i);
});

// ---- the registry (Debian's docker-registry, run as a child on a free loopback port)

const registryBin = '/usr/bin/docker-registry';
const withRegistry = { skip: skipReason ?? (existsSync(registryBin) ? false : 'no docker-registry (apt-get install docker-registry)') };
if (!skipReason && !existsSync(registryBin)) console.log('# test/runtime/docker-swarm: skipping the registry test: no /usr/bin/docker-registry (apt-get install docker-registry)');

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

test('with a registry, the image is pushed there and the service runs the pushed name; dispose removes the service', withRegistry, async () => {
  const port = await freePort();
  const dir = path.join(root, 'registry');
  mkdirSync(path.join(dir, 'data'), { recursive: true });
  writeFileSync(path.join(dir, 'config.yml'), `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${port}\n`);
  const registry: ChildProcess = spawn(registryBin, ['serve', path.join(dir, 'config.yml')], { stdio: 'ignore' });
  const remote = `127.0.0.1:${port}/${IMAGES.one}`;
  const pushed = new SwarmApps({ engine, instanceKey: key, registry: `127.0.0.1:${port}` });
  try {
    await waitFor(() => fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.ok), 'the registry to answer', 10_000, 100);
    const t0 = Date.now();
    const inst = await pushed.start(spec(IMAGES.one, 'dpl_reg', { replicas: 1 }), deps());
    console.log(`# swarm: push to the registry and a new service took ${Date.now() - t0} ms`);
    const catalog = (await (await fetch(`http://127.0.0.1:${port}/v2/_catalog`)).json()) as { repositories: string[] };
    assert.deepEqual(catalog.repositories, ['berth-test/swarm']);
    const svc = (await service())!;
    assert.equal(containerSpecOf(svc).Image, remote);
    assert.equal((await get(inst.upstream)).split(' ')[0], '1');

    let exited = false;
    void inst.exited.then(() => (exited = true));
    await inst.box.dispose();
    assert.equal(await service(), null);
    await waitFor(() => exited, 'exited to resolve once the service is removed', 2000);
    await pushed.forgetProject(projectId);
  } finally {
    registry.kill('SIGTERM');
    spawnSync(DOCKER, ['rmi', remote], { timeout: 60_000 });
  }
});

test('a registry that does not answer fails the start with a StartError naming the registry, and nothing runs', withSwarm, async () => {
  const port = await freePort();
  const broken = new SwarmApps({ engine, instanceKey: key, registry: `127.0.0.1:${port}` });
  await assert.rejects(broken.start(spec(IMAGES.one, 'dpl_noreg', { replicas: 1 }), deps()), (e: Error) => {
    assert.ok(e instanceof StartError);
    console.log(`# swarm: ${e.message}`);
    assert.match(e.message, new RegExp(`^could not push berth-test/swarm:1 to the registry 127\\.0\\.0\\.1:${port}: `));
    return true;
  });
  assert.equal(await service(), null);
  spawnSync(DOCKER, ['rmi', `127.0.0.1:${port}/${IMAGES.one}`], { timeout: 60_000 });
  await broken.forgetProject(projectId);
});

test("a preview environment's app (ReleaseSpec.app) runs as a service of its own on its own network beside production's; forgetApp removes only it", withSwarm, async () => {
  const app = `${projectId}-0123456789`;
  const prod = await apps.start(spec(IMAGES.one, 'dpl_prodapp', { replicas: 1 }), deps());
  let preview: Instance | null = null;
  try {
    preview = await apps.start(spec(IMAGES.two, 'dpl_preview', { app, replicas: 1, env: { GREETING: 'preview' }, dataDir: path.join(root, 'volumes', projectId, '.previews', 'pr-1') }), deps());
    assert.equal((await get(prod.upstream)).split(' ')[0], '1');
    const [version, , greeting] = (await get(preview.upstream)).split(' ');
    assert.equal(version, '2');
    assert.equal(greeting, 'preview');
    const svc = (await engine.api.getService(`berth-${key}-${app}`).inspect()) as Docker.Service & { Spec: Docker.ServiceSpec };
    assert.deepEqual(svc.Spec.Labels, { 'berth.instance': key, 'berth.project': projectId, 'berth.kind': 'app', 'berth.deployment': 'dpl_preview', 'berth.app': app });
    assert.equal(containerSpecOf(svc).Mounts?.find((m) => m.Target === '/data')?.Source, path.join(root, 'volumes', projectId, '.previews', 'pr-1'));
    assert.equal((await engine.api.getNetwork(`berth-${key}-${app}-swarm`).inspect()).Driver, 'overlay');
    assert.equal(containerSpecOf((await service())!).Image, IMAGES.one, "production's service is its own");
    assert.ok(existsSync(path.join(root, 'logs', 'projects', app, 'runtime.log')), 'the preview has a runtime log of its own');

    await apps.forgetApp(app);
    assert.equal(await engine.api.getService(`berth-${key}-${app}`).inspect().catch(() => null), null);
    assert.equal(await engine.api.getNetwork(`berth-${key}-${app}-swarm`).inspect().catch(() => null), null);
    assert.equal((await get(prod.upstream)).split(' ')[0], '1', 'production keeps answering');
  } finally {
    // The instance's balancer closes with it (its service is gone already).
    await preview?.box.dispose().catch(() => {});
    await apps.forgetApp(app).catch(() => {});
    await prod.box.dispose();
    await apps.forgetProject(projectId);
  }
});

// ---- per-request balance through the edge, and deleting the project

/** A release image as Berth's builds make it: `berth/<slug>:<deployment>`, labelled with the instance and project. */
const RELEASE = `berth/swarm-${key}:dpl_many`;
let many: Instance | null = null;

test("the edge balances per request over a service's tasks: 30 sequential requests on kept-alive connections reach each of 3 replicas, and none fails", withSwarm, async () => {
  const labels = { 'berth.instance': key, 'berth.project': projectId, 'berth.deployment': 'dpl_many' };
  docker(['build', '-q', '--build-arg', 'VERSION=3', ...Object.entries(labels).map(([k, v]) => `--label=${k}=${v}`), '-t', RELEASE, path.join(root, 'image')]);
  many = await apps.start(spec(RELEASE, 'dpl_many', { replicas: 3, imageCommand: true, env: { GREETING: 'hello', KEEP_ALIVE: '1' } }), deps());
  const edge = new EdgeServer(
    { lookup: (host) => (host === 'many.test' ? { projectId, unavailable: null, rules: [] } : null), upstream: () => many!.upstream },
    new RequestLog(),
    createLogger('silent'),
  );
  const { port } = await edge.listen('127.0.0.1', 0);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const seen = new Map<string, number>();
  const failures: string[] = [];
  try {
    for (let i = 0; i < 30; i++) {
      const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { host: 'many.test' }, timeout: 10_000 }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: body.trim() }));
        });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
      }).catch((e: Error) => ({ status: 0, body: e.message }));
      if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
      else {
        const [version, host] = r.body.split(' ');
        assert.equal(version, '3');
        seen.set(host!, (seen.get(host!) ?? 0) + 1);
      }
    }
  } finally {
    agent.destroy();
    await edge.close();
  }
  console.log(`# swarm: 30 requests through the edge: ${[...seen.values()].join(', ')} per task`);
  assert.deepEqual(failures, [], 'no request failed');
  assert.equal(seen.size, 3, `every replica answered: ${[...seen].map(([h, n]) => `${h} ${n}`).join(', ')}`);
});

test("deleting a project in Swarm mode removes its services, its build containers, its bridge and overlay networks, and its release images with every local tag", withSwarm, async () => {
  assert.ok(many, 'the service of the previous test runs');
  // What a build leaves: the project's bridge (as the builds create it) with a stopped build container on
  // it, and the registry's name of a release whose push failed.
  const bridge = `berth-${key}-${projectId}`;
  if (!(await engine.api.getNetwork(bridge).inspect().catch(() => null))) await engine.api.createNetwork({ Name: bridge, Driver: 'bridge', Labels: labelsOf(key, projectId, 'app') });
  await engine.api.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: labelsOf(key, projectId, 'build'), HostConfig: { NetworkMode: bridge } });
  const pushed = `127.0.0.1:5999/${RELEASE}`;
  docker(['tag', RELEASE, pushed]);

  many!.detach!();
  await apps.forgetProject(projectId);

  const filters = { label: [`berth.instance=${key}`, `berth.project=${projectId}`] };
  assert.deepEqual((await engine.api.listServices({ filters })).map((s) => s.Spec?.Name), []);
  assert.deepEqual((await engine.api.listContainers({ all: true, filters })).map((c) => c.Names), []);
  assert.deepEqual((await engine.api.listNetworks({ filters })).map((n) => n.Name), []);
  for (const n of [bridge, `${bridge}-swarm`]) assert.equal(await engine.api.getNetwork(n).inspect().catch(() => null), null, `${n} is gone`);
  assert.deepEqual((await engine.api.listImages({ filters })).map((i) => i.RepoTags), []);
  for (const tag of [RELEASE, pushed]) assert.equal(await engine.api.getImage(tag).inspect().catch(() => null), null, `${tag} is gone`);
});
