import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type Docker from 'dockerode';
import { EdgeServer } from '../../src/edge/proxy.js';
import { RequestLog } from '../../src/edge/requests.js';
import { createLogger } from '../../src/lib/logger.js';
import type { Instance } from '../../src/runtime/app-instance.js';
import type { CommandStep } from '../../src/runtime/command.js';
import { IMAGES, containerSpecOf, docker, get, useSwarm } from '../support/swarm.js';
import { waitFor } from '../support/wait.js';

// Swarm mode of the docker runtime (contract section 13): how a release runs as a service, on a real
// single-node swarm (test/support/swarm.ts). Each case deploys a project of its own.
const swarm = await useSwarm('test/runtime/docker-swarm-service');
const { engine, key, withSwarm } = swarm;

test('a release runs as a Swarm service with two replicas, hardened, and both replicas answer through the published address', withSwarm, async () => {
  const projectId = swarm.project();
  const s1 = swarm.spec(projectId, IMAGES.one, 'dpl_one', {
    // A step before the server (a migration) runs once, as a job, with the volume at /data.
    steps: (env): CommandStep[] => [
      { argv: ['node', '-e', 'require("fs").writeFileSync("/data/migrated", process.env.BERTH_DEPLOYMENT_ID + " " + process.env.DATA_DIR)'], env: {} },
      { argv: ['node', '/srv/server.js'], env: { STEP_PORT: env.PORT! } },
    ],
  });
  assert.equal(await swarm.apps.unavailable(), null, 'the engine is a Swarm manager');
  // The project's bridge is there already (its build ran as containers on the manager).
  await engine.api.createNetwork({ Name: `berth-${key}-${projectId}`, Driver: 'bridge', Labels: { 'berth.instance': key } });
  const t0 = Date.now();
  const inst = await swarm.start(s1);
  console.log(`# swarm: a new service of 2 replicas answered in ${Date.now() - t0} ms`);
  assert.equal(inst.pid, undefined);
  assert.equal(inst.upstream.host, '127.0.0.1');
  assert.equal(readFileSync(path.join(s1.dataDir, 'migrated'), 'utf8'), 'dpl_one /data');

  const svc = (await swarm.service(projectId))!;
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

  // The routing mesh adds a task's address to the published port's balancer on its own time (seconds
  // after the task runs, on a busy machine): both answer within a bounded number of new connections.
  const hosts = new Set<string>();
  const until = Date.now() + 20_000;
  for (let i = 0; hosts.size < 2 && (i < 12 || Date.now() < until); i++) {
    const [version, host, greeting] = (await get(inst.upstream)).split(' ');
    assert.equal(version, '1');
    assert.equal(greeting, 'hello');
    hosts.add(host!);
    if (i >= 12) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(hosts.size, 2, `requests spread over both tasks: ${[...hosts].join(', ')}`);
  await inst.box.dispose();
  await swarm.apps.forgetProject(projectId);
});

test("a preview environment's app (ReleaseSpec.app) runs as a service of its own on its own network beside production's; forgetApp removes only it", withSwarm, async () => {
  const { apps, root } = swarm;
  const projectId = swarm.project();
  const app = `${projectId}-0123456789`;
  const prod = await swarm.start(swarm.spec(projectId, IMAGES.one, 'dpl_prodapp', { replicas: 1 }));
  let preview: Instance | null = null;
  try {
    preview = await swarm.start(swarm.spec(projectId, IMAGES.two, 'dpl_preview', { app, replicas: 1, env: { GREETING: 'preview' }, dataDir: path.join(root, 'volumes', projectId, '.previews', 'pr-1') }));
    assert.equal((await get(prod.upstream)).split(' ')[0], '1');
    const [version, , greeting] = (await get(preview.upstream)).split(' ');
    assert.equal(version, '2');
    assert.equal(greeting, 'preview');
    const svc = (await swarm.service(app))!;
    assert.deepEqual(svc.Spec.Labels, { 'berth.instance': key, 'berth.project': projectId, 'berth.kind': 'app', 'berth.deployment': 'dpl_preview', 'berth.app': app });
    assert.equal(containerSpecOf(svc).Mounts?.find((m) => m.Target === '/data')?.Source, path.join(root, 'volumes', projectId, '.previews', 'pr-1'));
    assert.equal((await engine.api.getNetwork(`berth-${key}-${app}-swarm`).inspect()).Driver, 'overlay');
    assert.equal(containerSpecOf((await swarm.service(projectId))!).Image, IMAGES.one, "production's service is its own");
    assert.ok(existsSync(path.join(root, 'logs', 'projects', app, 'runtime.log')), 'the preview has a runtime log of its own');

    await apps.forgetApp(app);
    assert.equal(await swarm.service(app), null);
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

test("the edge balances per request over a service's tasks: 30 sequential requests on kept-alive connections reach each of 3 replicas, and none fails", withSwarm, async () => {
  const projectId = swarm.project();
  // A release image as Berth's builds make it: `berth/<slug>:<deployment>`, labelled with the instance and project.
  const release = `berth/swarm-${key}:dpl_many`;
  const labels = { 'berth.instance': key, 'berth.project': projectId, 'berth.deployment': 'dpl_many' };
  docker(['build', '-q', '--build-arg', 'VERSION=3', ...Object.entries(labels).map(([k, v]) => `--label=${k}=${v}`), '-t', release, path.join(swarm.root, 'image')]);
  const many = await swarm.start(swarm.spec(projectId, release, 'dpl_many', { replicas: 3, imageCommand: true, env: { GREETING: 'hello', KEEP_ALIVE: '1' } }));
  // The start is over once a task answers; the others join the balancer as the engine reports them
  // running (its task list is read every second).
  await waitFor(() => many.upstream.lanes!().length === 3, "the balancer to have a lane for each of the service's 3 tasks", 30_000, 100);
  const edge = new EdgeServer(
    { lookup: (host) => (host === 'many.test' ? { projectId, unavailable: null, rules: [] } : null), upstream: () => many.upstream },
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
  many.detach!();
  await swarm.apps.forgetProject(projectId);
});
