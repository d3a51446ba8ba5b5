import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { labelsOf } from '../../src/runtime/docker/containers.js';
import { SwarmApps } from '../../src/runtime/docker/swarm.js';
import { StartError } from '../../src/runtime/release-spec.js';
import { BASE_IMAGE, DOCKER } from '../support/docker.js';
import { IMAGES, containerSpecOf, docker, get, useSwarm } from '../support/swarm.js';
import { waitFor } from '../support/wait.js';

// Swarm mode of the docker runtime (contract section 13): what outlives a server and what goes with a
// project (adoption after a restart, the sweep, deleting a project) and releases pushed to a registry;
// on a real single-node swarm (test/support/swarm.ts). Each case deploys a project of its own.
const swarm = await useSwarm('test/runtime/docker-swarm-lifecycle');
const { engine, key, skip, withSwarm } = swarm;

test('a restarted server adopts the service that runs the release (no update, no second service); a sweep removes what nothing adopted', withSwarm, async () => {
  // A server of the case's own (its instance key): its sweeps meet no other case's services.
  const server = swarm.newKey();
  const projectId = swarm.project();
  const release = () => swarm.spec(projectId, IMAGES.two, 'dpl_two', { imageCommand: true });
  const inst2 = await swarm.start(release(), { apps: new SwarmApps({ engine, instanceKey: server }) });
  const before = (await swarm.service(projectId, server))!;
  const restarted = new SwarmApps({ engine, instanceKey: server });
  const adopted = await swarm.start(release(), { apps: restarted });
  const after = (await swarm.service(projectId, server))!;
  assert.equal(after.ID, before.ID);
  assert.equal(after.Version?.Index, before.Version?.Index, 'no update');
  assert.equal((await engine.api.listServices({ filters: { label: [`berth.instance=${server}`] } })).length, 1);
  assert.equal((await get(adopted.upstream)).split(' ')[0], '2');
  await restarted.sweepUnadopted();
  assert.ok(await swarm.service(projectId, server), 'the sweep of the server that adopted it keeps it');
  adopted.detach!();
  inst2.detach!();

  // The next server adopts nothing: its sweep removes the service.
  const next = new SwarmApps({ engine, instanceKey: server });
  await next.sweepUnadopted();
  assert.equal(await swarm.service(projectId, server), null);
  await next.forgetProject(projectId);
  await assert.rejects(engine.api.getNetwork(`berth-${server}-${projectId}-swarm`).inspect(), /404|no such network|not found/i);
});

test('deleting a project in Swarm mode removes its services, its build containers, its bridge and overlay networks, and its release images with every local tag', withSwarm, async () => {
  const projectId = swarm.project();
  // A release image as Berth's builds make it: `berth/<slug>:<deployment>`, labelled with the instance and project.
  const release = `berth/swarm-${key}:dpl_many`;
  const labels = { 'berth.instance': key, 'berth.project': projectId, 'berth.deployment': 'dpl_many' };
  docker(['build', '-q', '--build-arg', 'VERSION=3', ...Object.entries(labels).map(([k, v]) => `--label=${k}=${v}`), '-t', release, path.join(swarm.root, 'image')]);
  const many = await swarm.start(swarm.spec(projectId, release, 'dpl_many', { replicas: 3, imageCommand: true }));
  assert.ok(await swarm.service(projectId), "the project's service runs");
  // What a build leaves: the project's bridge (as the builds create it) with a stopped build container on
  // it, and the registry's name of a release whose push failed.
  const bridge = `berth-${key}-${projectId}`;
  if (!(await engine.api.getNetwork(bridge).inspect().catch(() => null))) await engine.api.createNetwork({ Name: bridge, Driver: 'bridge', Labels: labelsOf(key, projectId, 'app') });
  await engine.api.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: labelsOf(key, projectId, 'build'), HostConfig: { NetworkMode: bridge } });
  const pushed = `127.0.0.1:5999/${release}`;
  docker(['tag', release, pushed]);

  many.detach!();
  await swarm.apps.forgetProject(projectId);

  const filters = { label: [`berth.instance=${key}`, `berth.project=${projectId}`] };
  assert.deepEqual((await engine.api.listServices({ filters })).map((s) => s.Spec?.Name), []);
  assert.deepEqual((await engine.api.listContainers({ all: true, filters })).map((c) => c.Names), []);
  assert.deepEqual((await engine.api.listNetworks({ filters })).map((n) => n.Name), []);
  for (const n of [bridge, `${bridge}-swarm`]) assert.equal(await engine.api.getNetwork(n).inspect().catch(() => null), null, `${n} is gone`);
  assert.deepEqual((await engine.api.listImages({ filters })).map((i) => i.RepoTags), []);
  for (const tag of [release, pushed]) assert.equal(await engine.api.getImage(tag).inspect().catch(() => null), null, `${tag} is gone`);
});

// ---- the registry (Debian's docker-registry, run as a child on a free loopback port)

const registryBin = '/usr/bin/docker-registry';
const withRegistry = { skip: skip ?? (existsSync(registryBin) ? false : 'no docker-registry (apt-get install docker-registry)') };
if (!skip && !existsSync(registryBin)) console.log('# test/runtime/docker-swarm-lifecycle: skipping the registry test: no /usr/bin/docker-registry (apt-get install docker-registry)');

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

test('with a registry, the image is pushed there and the service runs the pushed name; dispose removes the service', withRegistry, async () => {
  const projectId = swarm.project();
  const port = await freePort();
  const dir = path.join(swarm.root, 'registry');
  mkdirSync(path.join(dir, 'data'), { recursive: true });
  writeFileSync(path.join(dir, 'config.yml'), `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${port}\n`);
  const registry: ChildProcess = spawn(registryBin, ['serve', path.join(dir, 'config.yml')], { stdio: 'ignore' });
  const remote = `127.0.0.1:${port}/${IMAGES.one}`;
  const pushed = new SwarmApps({ engine, instanceKey: key, registry: `127.0.0.1:${port}` });
  try {
    await waitFor(() => fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.ok), 'the registry to answer', 10_000, 100);
    const t0 = Date.now();
    const inst = await swarm.start(swarm.spec(projectId, IMAGES.one, 'dpl_reg', { replicas: 1 }), { apps: pushed });
    console.log(`# swarm: push to the registry and a new service took ${Date.now() - t0} ms`);
    const catalog = (await (await fetch(`http://127.0.0.1:${port}/v2/_catalog`)).json()) as { repositories: string[] };
    assert.deepEqual(catalog.repositories, ['berth-test/swarm']);
    const svc = (await swarm.service(projectId))!;
    assert.equal(containerSpecOf(svc).Image, remote);
    assert.equal((await get(inst.upstream)).split(' ')[0], '1');

    let exited = false;
    void inst.exited.then(() => (exited = true));
    await inst.box.dispose();
    assert.equal(await swarm.service(projectId), null);
    await waitFor(() => exited, 'exited to resolve once the service is removed', 2000);
    await pushed.forgetProject(projectId);
  } finally {
    registry.kill('SIGTERM');
    spawnSync(DOCKER, ['rmi', remote], { timeout: 60_000 });
  }
});

test('a registry that does not answer fails the start with a StartError naming the registry, and nothing runs', withSwarm, async () => {
  const projectId = swarm.project();
  const port = await freePort();
  const broken = new SwarmApps({ engine, instanceKey: key, registry: `127.0.0.1:${port}` });
  try {
    await assert.rejects(swarm.start(swarm.spec(projectId, IMAGES.one, 'dpl_noreg', { replicas: 1 }), { apps: broken }), (e: Error) => {
      assert.ok(e instanceof StartError);
      console.log(`# swarm: ${e.message}`);
      assert.match(e.message, new RegExp(`^could not push berth-test/swarm:1 to the registry 127\\.0\\.0\\.1:${port}: `));
      return true;
    });
    assert.equal(await swarm.service(projectId), null);
  } finally {
    spawnSync(DOCKER, ['rmi', `127.0.0.1:${port}/${IMAGES.one}`], { timeout: 60_000 });
    await broken.forgetProject(projectId);
  }
});
