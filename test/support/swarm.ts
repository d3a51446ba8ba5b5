import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import type Docker from 'dockerode';
import { DockerEngine } from '../../src/runtime/docker/engine.js';
import { SwarmApps } from '../../src/runtime/docker/swarm.js';
import type { Instance, InstanceDeps } from '../../src/runtime/app-instance.js';
import type { RuntimeDriver } from '../../src/runtime/driver.js';
import { LogStore } from '../../src/runtime/logs.js';
import type { ReleaseSpec, Upstream } from '../../src/runtime/release-spec.js';
import { BASE_IMAGE, DOCKER, dockerSuite } from './docker.js';
import { tempDir } from './harness.js';
import { waitFor } from './wait.js';

/**
 * The test images every Swarm suite builds: two versions of an app that answers
 * "<version> <hostname> <greeting>" on $PORT, one that exits at once and one that never answers.
 */
export const IMAGES = { one: 'berth-test/swarm:1', two: 'berth-test/swarm:2', broken: 'berth-test/swarm:broken', deaf: 'berth-test/swarm:deaf' };

export type Service = Docker.Service & { Spec: Docker.ServiceSpec };

export interface SwarmSuite {
  /** Why the suite's tests skip (no engine, or the PostgreSQL pass), or null. */
  readonly skip: string | null;
  /** The `{ skip }` option of the suite's tests. */
  readonly withSwarm: { skip: string | false };
  readonly engine: DockerEngine;
  /** The suite's instance key (its services, networks and images carry it). */
  readonly key: string;
  /** The suite's temp dir: release dirs, volumes, logs, the image's build context (`image/`). */
  readonly root: string;
  readonly logs: LogStore;
  /** The suite's SwarmApps (instance key `key`). */
  readonly apps: SwarmApps;
  /** A project id of the case's own, so its services and networks meet no other case's. */
  project(): string;
  /** Another instance key (a "server" of its own), cleaned up with the suite's. */
  newKey(): string;
  deps(over?: Partial<InstanceDeps>): InstanceDeps;
  /** A release of the project: 2 replicas of `image` running /srv/server.js with a secret in its env. */
  spec(projectId: string, image: string, deploymentId: string, extra?: Partial<ReleaseSpec>): ReleaseSpec;
  /** Starts a release (on `apps` unless given) and keeps the instance so `after` closes its balancer. */
  start(spec: ReleaseSpec, opts?: { apps?: SwarmApps; deps?: Partial<InstanceDeps> }): Promise<Instance>;
  /** The service of an app (a project's production, a preview's app id) under `key`, or null. */
  service(app: string, key?: string): Promise<Service | null>;
}

/** Runs the docker CLI (BuildKit on), asserting it succeeds; answers its stdout. */
export function docker(args: string[], opts: { input?: string; cwd?: string } = {}): string {
  const r = spawnSync(DOCKER, args, { encoding: 'utf8', timeout: 120_000, env: { ...process.env, DOCKER_BUILDKIT: '1' }, ...opts });
  assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

/** One GET on a fresh connection: the body, or the error. */
export function get(u: Upstream): Promise<string> {
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

export function containerSpecOf(s: Service): Docker.ContainerSpec {
  return (s.Spec.TaskTemplate as Docker.ContainerTaskSpec).ContainerSpec!;
}

// Two Swarm suites at once (node:test runs files in parallel processes; two test commands on one
// machine) would share the swarm, and the one that initialized it would take it down under the other:
// suites take turns through a lock file, held from the suite's `before` to its `after`.
const LOCK = path.join(os.tmpdir(), 'berth-docker-swarm-test.lock');

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
    'the other Swarm suites to finish',
    // A wait, not a measure: a suite waits out every other Swarm suite that started before it.
    20 * 60_000,
    500,
  );
}

function releaseLock(): void {
  try {
    if (readFileSync(LOCK, 'utf8') === String(process.pid)) rmSync(LOCK, { force: true });
  } catch {
    // gone already
  }
}

function buildImages(root: string): void {
  const ctx = path.join(root, 'image');
  mkdirSync(ctx);
  // The server closes each connection unless KEEP_ALIVE is set.
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
}

/** Puts the engine into swarm mode when it is not (saying whether it did, and whether docker_gwbridge was there); checks the base image. */
async function enterSwarm(engine: DockerEngine, key: string): Promise<{ initialized: boolean; hadGwBridge: boolean }> {
  let initialized = false;
  let hadGwBridge = true;
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
  return { initialized, hadGwBridge };
}

/** Removes every service, container, network and image of the keys, and the test images. */
async function cleanUp(engine: DockerEngine, keys: string[], instances: Instance[]): Promise<void> {
  // The balancers of instances a failed case left open (they would keep the process alive).
  for (const inst of instances) inst.detach?.();
  for (const k of keys) {
    const label = { label: [`berth.instance=${k}`] };
    const services = (await engine.api.listServices({ filters: label }).catch(() => [])) as Docker.Service[];
    for (const s of services) await engine.api.getService(s.ID).remove().catch(() => {});
    // The engine removes a removed service's containers a little later; the images can go after them.
    await waitFor(async () => !(await engine.api.listContainers({ all: true, filters: label })).length, 'the test services to be gone', 20_000, 250).catch(async (e: Error) => {
      const left = await engine.api.listContainers({ all: true, filters: label });
      console.log(`# ${e.message}: ${left.map((c) => `${c.Image} ${c.Status} ${c.Labels['com.docker.swarm.service.name']}`).join('; ')}`);
    });
    // A build container a failed case left (never a task: those went with their services).
    for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${k}`, 'berth.kind=build'] } }).catch(() => [])) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
    for (const n of await engine.api.listNetworks({ filters: label }).catch(() => [])) await engine.api.getNetwork(n.Id).remove().catch(() => {});
    // Release images a case built (labelled with the key), with every tag.
    for (const i of await engine.api.listImages({ filters: label }).catch(() => [])) for (const tag of i.RepoTags ?? []) spawnSync(DOCKER, ['rmi', tag], { timeout: 60_000 });
  }
  for (const image of Object.values(IMAGES)) spawnSync(DOCKER, ['rmi', image], { timeout: 60_000 });
}

function instanceDeps(logs: LogStore, over: Partial<InstanceDeps>): InstanceDeps {
  return {
    logs,
    // SwarmApps never asks the driver (the docker driver it belongs to hands it over).
    driver: null as unknown as RuntimeDriver,
    baseEnv: { LANG: 'C.UTF-8', PATH: '/usr/bin:/bin', TZ: 'UTC' },
    healthTimeoutMs: 20_000,
    graceMs: 2000,
    boxName: (id) => `app-${id}`,
    ...over,
  };
}

/** A release of the project: 2 replicas of `image` running /srv/server.js with a secret in its env. */
function releaseSpec(root: string, projectId: string, image: string, deploymentId: string, extra: Partial<ReleaseSpec>): ReleaseSpec {
  const appRoot = path.join(root, 'rel', projectId, deploymentId);
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

/**
 * A Swarm suite (contract section 13) on a real single-node swarm: the engine of the machine, put
 * into swarm mode for the suite when it is not (and taken out again afterwards), the test images, a
 * LogStore and a SwarmApps. `before` takes the machine's Swarm lock, `after` removes every service,
 * container, network and image of the suite's keys and gives the lock back. Cases make their own
 * projects (`project()`); the answer's fields are readable once `before` has run.
 */
export async function useSwarm(name: string): Promise<SwarmSuite> {
  // The suites do not touch the database: one run (the SQLite pass) is enough.
  const onPostgres = process.env.DATABASE_URL ? 'it does not use the database (it runs on the SQLite pass)' : null;
  if (onPostgres) console.log(`# ${name}: skipping the Swarm tests: ${onPostgres}`);
  const { engine, skip: noEngine } = onPostgres ? { engine: DockerEngine.fromEnv(), skip: null } : await dockerSuite(name);
  const skip = onPostgres ?? noEngine;
  const key = randomBytes(6).toString('hex');
  const keys = [key];
  const instances: Instance[] = [];
  let root: string;
  let logs: LogStore;
  let apps: SwarmApps;
  let locked = false;
  let initialized = false;
  let hadGwBridge = true;

  before(async () => {
    if (skip) return;
    await takeLock();
    locked = true;
    root = tempDir('berth-swarm-');
    logs = new LogStore(root);
    ({ initialized, hadGwBridge } = await enterSwarm(engine, key));
    buildImages(root);
    apps = new SwarmApps({ engine, instanceKey: key });
  });

  after(async () => {
    if (skip || !locked) return;
    try {
      await cleanUp(engine, keys, instances);
    } finally {
      if (initialized) {
        spawnSync(DOCKER, ['swarm', 'leave', '--force'], { timeout: 60_000 });
        if (!hadGwBridge) spawnSync(DOCKER, ['network', 'rm', 'docker_gwbridge'], { timeout: 60_000 });
      }
      logs?.closeAll();
      if (root) rmSync(root, { recursive: true, force: true });
      releaseLock();
    }
  });

  const deps = (over: Partial<InstanceDeps> = {}) => instanceDeps(logs, over);

  return {
    skip,
    withSwarm: { skip: skip ?? false },
    engine,
    key,
    get root() {
      return root;
    },
    get logs() {
      return logs;
    },
    get apps() {
      return apps;
    },
    project: () => `prj_sw${randomBytes(3).toString('hex')}`,
    newKey() {
      const k = randomBytes(6).toString('hex');
      keys.push(k);
      return k;
    },
    deps,
    spec: (projectId, image, deploymentId, extra = {}) => releaseSpec(root, projectId, image, deploymentId, extra),
    async start(spec, opts = {}) {
      const inst = await (opts.apps ?? apps).start(spec, deps(opts.deps));
      instances.push(inst);
      return inst;
    },
    service(app, k = key) {
      return (engine.api.getService(`berth-${k}-${app}`).inspect() as Promise<Service>).catch(() => null);
    },
  };
}
